package tokenizer

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// metaspace is the character SentencePiece vocabularies write for a space.
const metaspace = "▁"

// How a SentencePiece-style tokenizer puts a metaspace before a segment
// of text (one between added tokens), as tokenizer.json says:
//   - prependEach: a Prepend("▁") normaliser, every non-empty segment
//     (Llama 2's and Mistral 7B's files, transformers' "legacy" mode);
//   - prependFirst: a Metaspace pre-tokenizer with prepend_scheme
//     "first", the input's first segment unless it already starts with
//     a space;
//   - prependAlways: Metaspace "always", every segment not starting with
//     a space;
//   - prependNever: no prefix.
const (
	prependNever = iota
	prependEach
	prependFirst
	prependAlways
)

// spm holds what a byte-fallback BPE (SentencePiece's model as
// tokenizer.json writes it) needs beyond the vocabulary.
type spm struct {
	prepend  int
	split    bool // Metaspace split: BPE runs on each "▁word" apart
	unk      int  // the unknown token's id, -1 if none
	fuseUnk  bool
	byteTok  [256]int // <0xXX> token ids, -1 where missing
	tokByte  map[int]byte
	idMerges map[[2]int]idMerge
}

type idMerge struct{ rank, id int }

// loadSPM reads the parts of a byte_fallback BPE tokenizer.json: the
// normaliser or pre-tokenizer that turns spaces into "▁" (and prepends
// one), the <0xXX> byte tokens, the unknown token, and a decoder that
// undoes them.
func (t *Tokenizer) loadSPM(raw *rawTokenizer) error {
	s := &spm{unk: -1, fuseUnk: raw.Model.FuseUnk, tokByte: map[int]byte{}}
	t.spm = s
	if raw.Model.UnkToken != nil && *raw.Model.UnkToken != "" {
		id, ok := t.vocab[*raw.Model.UnkToken]
		if !ok {
			return fmt.Errorf("tokenizer.json: unk_token %q is not in the vocabulary", *raw.Model.UnkToken)
		}
		s.unk = id
	}
	for b := 0; b < 256; b++ {
		s.byteTok[b] = -1
		if id, ok := t.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			s.byteTok[b] = id
			s.tokByte[id] = byte(b)
		}
	}
	replaced, prepended := false, false
	var norm func(raw json.RawMessage) error
	norm = func(raw json.RawMessage) error {
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		var c spmComponent
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("tokenizer.json: normalizer: %w", err)
		}
		switch {
		case c.Type == "Sequence":
			for _, n := range c.Normalizers {
				if err := norm(n); err != nil {
					return err
				}
			}
		case c.Type == "Prepend" && c.Prepend == metaspace:
			prepended = true
		case c.Type == "Replace" && c.Pattern.String != nil && *c.Pattern.String == " " && c.Content == metaspace:
			replaced = true
		default:
			return fmt.Errorf("tokenizer.json: unsupported normalizer %s for a byte-fallback BPE (supported: Prepend and Replace of %q)", raw, metaspace)
		}
		return nil
	}
	if err := norm(raw.Normalizer); err != nil {
		return err
	}
	if prepended && !replaced {
		return fmt.Errorf("tokenizer.json: a Prepend(%q) normaliser without Replace(\" \", %q)", metaspace, metaspace)
	}
	if prepended {
		s.prepend = prependEach
	}
	if len(raw.PreTokenizer) > 0 && string(raw.PreTokenizer) != "null" {
		var c spmComponent
		if err := json.Unmarshal(raw.PreTokenizer, &c); err != nil {
			return fmt.Errorf("tokenizer.json: pre_tokenizer: %w", err)
		}
		if c.Type != "Metaspace" || c.Replacement != metaspace || replaced {
			return fmt.Errorf("tokenizer.json: unsupported pre_tokenizer %s for a byte-fallback BPE (supported: none, or Metaspace with %q)", raw.PreTokenizer, metaspace)
		}
		switch c.PrependScheme {
		case "first":
			s.prepend = prependFirst
		case "always", "":
			s.prepend = prependAlways
			if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
				s.prepend = prependNever
			}
		case "never":
			s.prepend = prependNever
		default:
			return fmt.Errorf("tokenizer.json: unsupported Metaspace prepend_scheme %q", c.PrependScheme)
		}
		s.split = c.Split == nil || *c.Split
		replaced = true
	}
	if !replaced {
		return fmt.Errorf("tokenizer.json: a byte-fallback BPE needs a Replace(\" \", %q) normaliser or a Metaspace pre-tokenizer", metaspace)
	}
	if err := checkSPMDecoder(raw.Decoder); err != nil {
		return err
	}
	return nil
}

// spmComponent is the shape of the normalisers, pre-tokenizers and
// decoders of a SentencePiece-style tokenizer.json.
type spmComponent struct {
	Type        string            `json:"type"`
	Normalizers []json.RawMessage `json:"normalizers"`
	Decoders    []json.RawMessage `json:"decoders"`
	Prepend     string            `json:"prepend"`
	Content     string            `json:"content"`
	Pattern     struct {
		String *string `json:"String"`
	} `json:"pattern"`
	Replacement    string `json:"replacement"`
	PrependScheme  string `json:"prepend_scheme"`
	AddPrefixSpace *bool  `json:"add_prefix_space"`
	Split          *bool  `json:"split"`
}

// checkSPMDecoder accepts the decoders that turn "▁" back into spaces and
// <0xXX> tokens into bytes (what TokenBytes does): Metaspace, or a
// Sequence of Replace("▁", " "), ByteFallback, Fuse and Strip.
func checkSPMDecoder(raw json.RawMessage) error {
	var c spmComponent
	if len(raw) == 0 || string(raw) == "null" {
		return fmt.Errorf("tokenizer.json: a byte-fallback BPE without a decoder")
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("tokenizer.json: decoder: %w", err)
	}
	steps := []json.RawMessage{raw}
	if c.Type == "Sequence" {
		steps = c.Decoders
	}
	for _, st := range steps {
		var d spmComponent
		if err := json.Unmarshal(st, &d); err != nil {
			return fmt.Errorf("tokenizer.json: decoder: %w", err)
		}
		switch {
		case d.Type == "Metaspace" && d.Replacement == metaspace,
			d.Type == "Replace" && d.Pattern.String != nil && *d.Pattern.String == metaspace && d.Content == " ",
			d.Type == "ByteFallback", d.Type == "Fuse", d.Type == "Strip":
		default:
			return fmt.Errorf("tokenizer.json: unsupported decoder %s for a byte-fallback BPE", st)
		}
	}
	return nil
}

// buildIDMerges indexes the merges by the ids of their two tokens.
func (s *spm) buildIDMerges(vocab map[string]int, merges map[[2]string]int) {
	s.idMerges = make(map[[2]int]idMerge, len(merges))
	for p, rank := range merges {
		a, okA := vocab[p[0]]
		b, okB := vocab[p[1]]
		if !okA || !okB {
			continue // a merge of a token the vocabulary lacks never applies
		}
		s.idMerges[[2]int{a, b}] = idMerge{rank, vocab[p[0]+p[1]]}
	}
}

// encodeSPM appends the tokens of one segment of ordinary text; first
// says whether the segment starts the input, cont that it continues
// earlier text (no "▁" is put before it then).
func (t *Tokenizer) encodeSPM(text string, first, cont bool, ids *[]int) {
	if text == "" {
		return
	}
	s := t.spm
	text = strings.ReplaceAll(text, " ", metaspace)
	switch {
	case cont:
	case s.prepend == prependEach:
		text = metaspace + text
	case s.prepend == prependAlways || (s.prepend == prependFirst && first):
		if !strings.HasPrefix(text, metaspace) {
			text = metaspace + text
		}
	}
	if !s.split {
		*ids = append(*ids, t.spmWord(text)...)
		return
	}
	for len(text) > 0 { // "▁" starts a word
		start, n := 0, len(text)
		if strings.HasPrefix(text, metaspace) {
			start = len(metaspace)
		}
		if k := strings.Index(text[start:], metaspace); k >= 0 {
			n = start + k
		}
		*ids = append(*ids, t.spmWord(text[:n])...)
		text = text[n:]
	}
}

// spmCacheMax bounds the words the encode cache keeps: without a
// pre-tokenizer a whole segment is one word, and long ones rarely repeat.
const spmCacheMax = 64

// spmWord is BPE over one word's characters, as HF's byte-fallback BPE
// does it: a character outside the vocabulary becomes its UTF-8 bytes'
// <0xXX> tokens (the unknown token where one is missing, runs of unknowns
// fused into one when fuse_unk says), then the pair of adjacent symbols
// with the lowest merge rank is merged, leftmost first, until none is
// left. A heap keeps that linear-logarithmic in the word's length.
func (t *Tokenizer) spmWord(word string) []int {
	if len(word) <= spmCacheMax {
		if ids, ok := t.cached(word); ok {
			return ids
		}
	}
	s := t.spm
	syms := make([]spmSym, 0, len(word))
	unkRun := false
	for i, n := 0, 0; i < len(word); i += n {
		_, n = utf8.DecodeRuneInString(word[i:]) // an invalid byte is a character of its own
		if id, ok := t.vocab[word[i:i+n]]; ok {
			syms = append(syms, spmSym{id: id})
			unkRun = false
			continue
		}
		all := true
		for k := i; k < i+n; k++ {
			all = all && s.byteTok[word[k]] >= 0
		}
		if all {
			for k := i; k < i+n; k++ {
				syms = append(syms, spmSym{id: s.byteTok[word[k]]})
			}
			unkRun = false
			continue
		}
		if s.unk < 0 {
			continue // no way to write it: HF drops it too
		}
		if !(unkRun && s.fuseUnk) {
			syms = append(syms, spmSym{id: s.unk})
		}
		unkRun = true
	}
	for i := range syms {
		syms[i].prev, syms[i].next = i-1, i+1
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	var q spmQueue
	push := func(i int) {
		j := syms[i].next
		if j < 0 {
			return
		}
		if m, ok := s.idMerges[[2]int{syms[i].id, syms[j].id}]; ok {
			heap.Push(&q, spmCand{rank: m.rank, pos: i, id: m.id})
		}
	}
	for i := range syms {
		push(i)
	}
	for q.Len() > 0 {
		c := heap.Pop(&q).(spmCand)
		a := &syms[c.pos]
		if a.gone || a.next < 0 {
			continue
		}
		b := &syms[a.next]
		if m, ok := s.idMerges[[2]int{a.id, b.id}]; !ok || m.rank != c.rank || m.id != c.id {
			continue // the pair changed since this candidate was queued
		}
		a.id = c.id
		b.gone = true
		a.next = b.next
		if b.next >= 0 {
			syms[b.next].prev = c.pos
		}
		if a.prev >= 0 {
			push(a.prev)
		}
		push(c.pos)
	}
	ids := make([]int, 0, len(syms))
	for i := range syms {
		if !syms[i].gone {
			ids = append(ids, syms[i].id)
		}
	}
	if len(word) <= spmCacheMax {
		t.remember(word, ids)
	}
	return ids
}

type spmSym struct {
	id, prev, next int
	gone           bool
}

// spmCand is a queued merge of the symbol at pos with the next one.
type spmCand struct{ rank, pos, id int }

type spmQueue []spmCand

func (q spmQueue) Len() int { return len(q) }
func (q spmQueue) Less(i, j int) bool {
	return q[i].rank < q[j].rank || (q[i].rank == q[j].rank && q[i].pos < q[j].pos)
}
func (q spmQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *spmQueue) Push(x any)   { *q = append(*q, x.(spmCand)) }
func (q *spmQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// spmTokenBytes is the bytes a SentencePiece-style token stands for:
// "▁" a space, <0xXX> its byte.
func (t *Tokenizer) spmTokenBytes(id int) []byte {
	if b, ok := t.spm.tokByte[id]; ok {
		return []byte{b}
	}
	return []byte(strings.ReplaceAll(t.tokens[id], metaspace, " "))
}
