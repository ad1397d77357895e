// Package tokenizer implements the BPE tokenizers HuggingFace tokenizer.json
// describes for Llama-family models: added (special) tokens matched
// literally and a TemplateProcessing post-processor for bos/eos, then
// either byte-level BPE (Llama 3, Qwen2: an optional NFC normaliser, their
// split regex, the GPT-2 byte-to-unicode map, merges by rank with
// ignore_merges) or SentencePiece-style BPE (Llama 2, Mistral 7B,
// TinyLlama: spaces written "▁" by a Prepend/Replace normaliser or a
// Metaspace pre-tokenizer, characters outside the vocabulary as <0xXX>
// byte tokens). Anything else (WordPiece, Unigram, other normalisers or
// pre-tokenizers) is refused with an error naming it.
package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The pre-tokenizer patterns this package implements.
const (
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// Tokenizer encodes text to token ids and back. It is safe for concurrent use.
type Tokenizer struct {
	vocab      map[string]int
	tokens     []string // id -> token string (byte-level chars, or added-token content)
	special    []bool   // id -> is an added token (decoded as its content)
	merges     map[[2]string]int
	ignoreMrg  bool
	nfc        bool
	maxDigits  int
	added      []addedToken // longest content first
	prefix     []int        // template tokens before the text
	suffix     []int        // template tokens after the text
	byteToRune [256]rune
	runeToByte map[rune]byte
	spm        *spm // set for a byte-fallback (SentencePiece-style) BPE

	mu    sync.Mutex
	cache map[string][]int
}

type addedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

type rawTokenizer struct {
	AddedTokens  []addedToken    `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	PostProc     json.RawMessage `json:"post_processor"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        struct {
		Type         string          `json:"type"`
		Vocab        map[string]int  `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		IgnoreMerges bool            `json:"ignore_merges"`
		ByteFallback bool            `json:"byte_fallback"`
		UnkToken     *string         `json:"unk_token"`
		FuseUnk      bool            `json:"fuse_unk"`
		Continuing   *string         `json:"continuing_subword_prefix"`
		EndOfWord    *string         `json:"end_of_word_suffix"`
	} `json:"model"`
}

// component is the {"type": ...} shape shared by normalizers, pre-tokenizers,
// post-processors and decoders.
type component struct {
	Type          string            `json:"type"`
	Normalizers   []json.RawMessage `json:"normalizers"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Processors    []json.RawMessage `json:"processors"`
	Decoders      []json.RawMessage `json:"decoders"`
	Pattern       struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	UseRegex       *bool             `json:"use_regex"`
	AddPrefixSpace bool              `json:"add_prefix_space"`
	Single         []json.RawMessage `json:"single"`
	SpecialTokens  map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
}

// Load parses tokenizer.json bytes.
func Load(data []byte) (*Tokenizer, error) {
	var raw rawTokenizer
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	t := &Tokenizer{cache: map[string][]int{}, runeToByte: map[rune]byte{}}
	if raw.Model.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer.json: unsupported model type %q (sipack reads BPE: byte-level or SentencePiece-style)", raw.Model.Type)
	}
	if (raw.Model.Continuing != nil && *raw.Model.Continuing != "") || (raw.Model.EndOfWord != nil && *raw.Model.EndOfWord != "") {
		return nil, fmt.Errorf("tokenizer.json: subword prefixes/suffixes are not supported")
	}
	if len(raw.Model.Vocab) == 0 {
		return nil, fmt.Errorf("tokenizer.json: empty vocabulary")
	}
	t.ignoreMrg = raw.Model.IgnoreMerges
	t.vocab = raw.Model.Vocab
	maxID := -1
	for _, id := range t.vocab {
		maxID = max(maxID, id)
	}
	for _, a := range raw.AddedTokens {
		maxID = max(maxID, a.ID)
	}
	if maxID >= 1<<22 {
		return nil, fmt.Errorf("tokenizer.json: token id %d too large", maxID)
	}
	t.tokens = make([]string, maxID+1)
	t.special = make([]bool, maxID+1)
	for s, id := range t.vocab {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer.json: negative id for token %q", s)
		}
		t.tokens[id] = s
	}
	for _, a := range raw.AddedTokens {
		if a.ID < 0 || a.Content == "" {
			return nil, fmt.Errorf("tokenizer.json: bad added token %+v", a)
		}
		t.tokens[a.ID] = a.Content
		t.special[a.ID] = true
		t.added = append(t.added, a)
	}
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].Content) > len(t.added[j].Content) })

	if err := t.loadMerges(raw.Model.Merges); err != nil {
		return nil, err
	}
	if err := t.loadPostProcessor(raw.PostProc); err != nil {
		return nil, err
	}
	if raw.Model.ByteFallback {
		if err := t.loadSPM(&raw); err != nil {
			return nil, err
		}
		t.spm.buildIDMerges(t.vocab, t.merges)
		t.merges = nil // by ids from here on
		return t, nil
	}
	if err := t.loadNormalizer(raw.Normalizer); err != nil {
		return nil, err
	}
	if err := t.loadPreTokenizer(raw.PreTokenizer); err != nil {
		return nil, err
	}
	var dec component
	if len(raw.Decoder) > 0 && string(raw.Decoder) != "null" {
		if err := json.Unmarshal(raw.Decoder, &dec); err != nil {
			return nil, fmt.Errorf("tokenizer.json: decoder: %w", err)
		}
	}
	if dec.Type != "ByteLevel" {
		return nil, fmt.Errorf("tokenizer.json: unsupported decoder %q (only ByteLevel)", dec.Type)
	}
	buildByteMap(&t.byteToRune, t.runeToByte)
	for b := 0; b < 256; b++ {
		if _, ok := t.vocab[string(t.byteToRune[b])]; !ok {
			return nil, fmt.Errorf("tokenizer.json: byte-level vocabulary lacks the token for byte %#02x", b)
		}
	}
	return t, nil
}

func (t *Tokenizer) loadMerges(raw json.RawMessage) error {
	t.merges = map[[2]string]int{}
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var pairs [][2]string
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return fmt.Errorf("tokenizer.json: merge %d %q is not two tokens", i, s)
			}
			pairs = append(pairs, [2]string{a, b})
		}
	} else if err := json.Unmarshal(raw, &pairs); err != nil {
		return fmt.Errorf("tokenizer.json: merges: %w", err)
	}
	for rank, p := range pairs {
		if _, ok := t.vocab[p[0]+p[1]]; !ok {
			return fmt.Errorf("tokenizer.json: merge %d (%q %q) makes a token that is not in the vocabulary", rank, p[0], p[1])
		}
		if _, dup := t.merges[p]; !dup {
			t.merges[p] = rank
		}
	}
	return nil
}

func (t *Tokenizer) loadNormalizer(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("tokenizer.json: normalizer: %w", err)
	}
	switch c.Type {
	case "NFC":
		t.nfc = true
		return nil
	case "Sequence":
		for _, n := range c.Normalizers {
			if err := t.loadNormalizer(n); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("tokenizer.json: unsupported normalizer %q (only NFC)", c.Type)
}

func (t *Tokenizer) loadPreTokenizer(raw json.RawMessage) error {
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("tokenizer.json: pre_tokenizer: %w", err)
	}
	steps := []json.RawMessage{raw}
	if c.Type == "Sequence" {
		steps = c.Pretokenizers
	}
	sawSplit, sawByteLevel := false, false
	for _, s := range steps {
		var p component
		if err := json.Unmarshal(s, &p); err != nil {
			return fmt.Errorf("tokenizer.json: pre_tokenizer: %w", err)
		}
		switch p.Type {
		case "Split":
			if p.Pattern.Regex == nil || p.Invert || (p.Behavior != "Isolated" && p.Behavior != "") {
				return fmt.Errorf("tokenizer.json: unsupported Split pre-tokenizer (need an isolated regex)")
			}
			switch *p.Pattern.Regex {
			case patternLlama3:
				t.maxDigits = 3
			case patternQwen2:
				t.maxDigits = 1
			default:
				return fmt.Errorf("tokenizer.json: unsupported pre-tokenizer regex %q (supported: the Llama-3 and Qwen2 patterns)", *p.Pattern.Regex)
			}
			sawSplit = true
		case "ByteLevel":
			if p.UseRegex != nil && *p.UseRegex {
				return fmt.Errorf("tokenizer.json: ByteLevel pre-tokenizer with use_regex (GPT-2 pattern) is not supported")
			}
			if p.AddPrefixSpace {
				return fmt.Errorf("tokenizer.json: ByteLevel add_prefix_space is not supported")
			}
			sawByteLevel = true
		default:
			return fmt.Errorf("tokenizer.json: unsupported pre-tokenizer %q", p.Type)
		}
	}
	if !sawSplit || !sawByteLevel {
		return fmt.Errorf("tokenizer.json: pre_tokenizer must be Split(regex) + ByteLevel")
	}
	return nil
}

func (t *Tokenizer) loadPostProcessor(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("tokenizer.json: post_processor: %w", err)
	}
	switch c.Type {
	case "Sequence":
		for _, p := range c.Processors {
			if err := t.loadPostProcessor(p); err != nil {
				return err
			}
		}
	case "ByteLevel":
		// Offsets only; no effect on ids.
	case "TemplateProcessing":
		seenA := false
		for _, item := range c.Single {
			var it struct {
				SpecialToken *struct {
					ID string `json:"id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID string `json:"id"`
				} `json:"Sequence"`
			}
			if err := json.Unmarshal(item, &it); err != nil {
				return fmt.Errorf("tokenizer.json: TemplateProcessing: %w", err)
			}
			switch {
			case it.Sequence != nil:
				seenA = true
			case it.SpecialToken != nil:
				st, ok := c.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return fmt.Errorf("tokenizer.json: TemplateProcessing names unknown special token %q", it.SpecialToken.ID)
				}
				if seenA {
					t.suffix = append(t.suffix, st.IDs...)
				} else {
					t.prefix = append(t.prefix, st.IDs...)
				}
			}
		}
	default:
		return fmt.Errorf("tokenizer.json: unsupported post_processor %q", c.Type)
	}
	return nil
}

// buildByteMap is GPT-2's bytes_to_unicode: printable Latin-1 bytes map to
// themselves, the other 68 bytes to U+0100 upwards, in byte order.
func buildByteMap(b2r *[256]rune, r2b map[rune]byte) {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
}

// VocabSize is one more than the largest token id.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Encode tokenises text. Added-token text in the input (such as
// "<|begin_of_text|>") becomes that token. With addSpecial, the template's
// bos/eos tokens are added as the tokenizer's post-processor says.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	return t.encode(text, addSpecial, false)
}

// encode is Encode; cont says text continues earlier text, so that a
// SentencePiece-style tokenizer puts no "▁" before it.
func (t *Tokenizer) encode(text string, addSpecial, cont bool) []int {
	var ids []int
	if addSpecial {
		ids = append(ids, t.prefix...)
	}
	for first := true; len(text) > 0; first = false {
		pos, tok := t.nextAdded(text)
		t.encodeOrdinary(text[:pos], first && pos > 0, first && cont, &ids)
		if tok == nil {
			break
		}
		ids = append(ids, tok.ID)
		text = text[pos+len(tok.Content):]
	}
	if addSpecial {
		ids = append(ids, t.suffix...)
	}
	return ids
}

// nextAdded finds the first added token in s (longest at a position wins).
func (t *Tokenizer) nextAdded(s string) (int, *addedToken) {
	best, bestPos := -1, len(s)
	for i := range t.added {
		if p := strings.Index(s[:min(len(s), bestPos+len(t.added[i].Content))], t.added[i].Content); p >= 0 && (p < bestPos || (p == bestPos && best >= 0 && len(t.added[i].Content) > len(t.added[best].Content))) {
			best, bestPos = i, p
		}
	}
	if best < 0 {
		return len(s), nil
	}
	return bestPos, &t.added[best]
}

// encodeOrdinary appends the tokens of text between added tokens; first
// says it starts the input, cont that the input continues earlier text.
func (t *Tokenizer) encodeOrdinary(s string, first, cont bool, ids *[]int) {
	if s == "" {
		return
	}
	if t.spm != nil {
		t.encodeSPM(s, first, cont, ids)
		return
	}
	if t.nfc {
		s = norm.NFC.String(s)
	}
	for _, piece := range splitLlama3(s, t.maxDigits) {
		*ids = append(*ids, t.bpe(piece)...)
	}
}

// bpe encodes one pre-token.
func (t *Tokenizer) bpe(piece string) []int {
	if ids, ok := t.cached(piece); ok {
		return ids
	}

	var sb strings.Builder
	for i := 0; i < len(piece); i++ {
		sb.WriteRune(t.byteToRune[piece[i]])
	}
	word := sb.String()
	var ids []int
	if id, ok := t.vocab[word]; ok && t.ignoreMrg {
		ids = []int{id}
	} else {
		syms := make([]string, 0, len(word))
		for _, r := range word {
			syms = append(syms, string(r))
		}
		for len(syms) > 1 {
			best, bestRank := -1, int(^uint(0)>>1)
			for i := 0; i+1 < len(syms); i++ {
				if r, ok := t.merges[[2]string{syms[i], syms[i+1]}]; ok && r < bestRank {
					best, bestRank = i, r
				}
			}
			if best < 0 {
				break
			}
			syms[best] += syms[best+1]
			syms = append(syms[:best+1], syms[best+2:]...)
		}
		ids = make([]int, len(syms))
		for i, s := range syms {
			ids[i] = t.vocab[s] // every symbol is a byte token or a merge result
		}
	}
	t.remember(piece, ids)
	return ids
}

// cached returns the ids the encode cache keeps for a word.
func (t *Tokenizer) cached(word string) ([]int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids, ok := t.cache[word]
	return ids, ok
}

// remember keeps a word's ids, starting over past 65536 words so that
// the cache stays bounded whatever the text.
func (t *Tokenizer) remember(word string, ids []int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.cache) > 1<<16 {
		clear(t.cache)
	}
	t.cache[word] = ids
}

// TokenBytes returns the bytes a token stands for. Streaming output
// concatenates these and prints whole UTF-8 characters.
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.tokens) {
		return nil
	}
	s := t.tokens[id]
	if t.special[id] {
		return []byte(s)
	}
	if t.spm != nil {
		return t.spmTokenBytes(id)
	}
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if b, ok := t.runeToByte[r]; ok {
			out = append(out, b)
		} else {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

// Decode turns ids back into text; invalid UTF-8 is replaced by U+FFFD, as
// the HF ByteLevel decoder does.
func (t *Tokenizer) Decode(ids []int) string {
	var b []byte
	for _, id := range ids {
		b = append(b, t.TokenBytes(id)...)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// EncodeAfter is text's tokens as they follow prefix: tokenised as part of
// prefix+text when that keeps prefix's own tokens, else alone as a
// continuation (a merge across the boundary would change the prefix).
func (t *Tokenizer) EncodeAfter(prefix, text string) []int {
	plain := t.Encode(prefix, false)
	joint := t.Encode(prefix+text, false)
	if len(joint) >= len(plain) && slices.Equal(joint[:len(plain)], plain) {
		return joint[len(plain):]
	}
	return t.encode(text, false, true)
}
