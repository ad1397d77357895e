package convert

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// GGUF token types (llama.cpp's llama_token_type / gguf-py's TokenType).
const (
	ggufTokenNormal      = 1
	ggufTokenUnknown     = 2
	ggufTokenControl     = 3
	ggufTokenUserDefined = 4
	ggufTokenUnused      = 5
	ggufTokenByte        = 6
)

// The pre-tokenizer regexes of the HF tokenizer.json files llama.cpp's
// tokenizer.ggml.pre names stand for (the tokenizer package matches them
// literally).
const (
	regexLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	regexQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// ggufPre is what a tokenizer.ggml.pre value means in tokenizer.json terms.
type ggufPre struct {
	regex        string // the Split regex; "" for GPT-2's ByteLevel(use_regex)
	nfc          bool   // an NFC normaliser (Qwen2's tokenizer.json has one)
	ignoreMerges bool   // whole-word vocabulary hits skip BPE (llama.cpp sets it for llama3)
	addBOS       bool   // llama.cpp's default when tokenizer.ggml.add_bos_token is absent
}

// ggufPres maps the tokenizer.ggml.pre values sipack reads (llama.cpp's
// llama-vocab.cpp groups them so). "default", llama.cpp's fallback for
// files without the key, is read as GPT-2's pattern, which the HF
// tokenizer.json of a GPT-2-style vocabulary carries (llama.cpp's own
// "default" splits punctuation runs and digits further).
var ggufPres = map[string]ggufPre{
	"llama-bpe": {regex: regexLlama3, ignoreMerges: true, addBOS: true},
	"llama3":    {regex: regexLlama3, ignoreMerges: true, addBOS: true},
	"llama-v3":  {regex: regexLlama3, ignoreMerges: true, addBOS: true},
	"qwen2":     {regex: regexQwen2, nfc: true},
	"gpt-2":     {},
	"default":   {},
}

// bpePre reads tokenizer.ggml.pre, the pre-tokenizer of a byte-level BPE
// vocabulary.
func (g *ggufSource) bpePre() (ggufPre, error) {
	preName, err := g.str("tokenizer.ggml.pre")
	if err != nil {
		return ggufPre{}, err
	}
	if preName == "" {
		preName = "default"
	}
	pre, ok := ggufPres[preName]
	if !ok {
		var names []string
		for n := range ggufPres {
			names = append(names, n)
		}
		sort.Strings(names)
		return ggufPre{}, g.errorf("tokenizer.ggml.pre %q is not supported (supported: %s)", preName, strings.Join(names, ", "))
	}
	return pre, nil
}

// tokenizerJSON builds the HF tokenizer.json of the file's vocabulary:
// normal, unknown and byte tokens form the vocabulary, control and
// user-defined ones the added tokens (control ones special), unused ones
// are left out; a post-processor adds bos (and eos) as add_bos_token
// (add_eos_token) say. A byte-level BPE (tokenizer.ggml.model "gpt2")
// brings its merges and the pre-tokenizer tokenizer.ggml.pre names; a
// SentencePiece vocabulary ("llama") becomes a byte-fallback BPE whose
// merges come from its scores (spmMerges), spaces written "▁" and one put
// before each piece of text as llama.cpp does (add_space_prefix).
func (g *ggufSource) tokenizerJSON() ([]byte, error) {
	model, err := g.str("tokenizer.ggml.model")
	if err != nil {
		return nil, err
	}
	var pre ggufPre
	switch model {
	case "gpt2":
		if pre, err = g.bpePre(); err != nil {
			return nil, err
		}
	case "llama":
		pre.addBOS = true // llama.cpp's default for a SentencePiece vocabulary
	case "":
		return nil, g.errorf("no tokenizer.ggml.model in the GGUF metadata: the file has no tokenizer")
	default:
		return nil, g.errorf(`tokenizer.ggml.model %q is not supported: sipack reads byte-level BPE ("gpt2") and SentencePiece ("llama") vocabularies`, model)
	}
	kv := g.f.Lookup("tokenizer.ggml.tokens")
	if kv == nil {
		return nil, g.errorf("no tokenizer.ggml.tokens in the GGUF metadata")
	}
	tokens, ok := kv.Value.Strings()
	if !ok {
		return nil, g.errorf("tokenizer.ggml.tokens is a %v, want an array of strings (offset %d)", kv.Value.Type, kv.Off)
	}
	if len(tokens) > ggufMaxVocab {
		return nil, g.errorf("tokenizer.ggml.tokens has %d tokens, more than %d", len(tokens), ggufMaxVocab)
	}
	types := make([]int64, len(tokens))
	for i := range types {
		types[i] = ggufTokenNormal
	}
	if kv := g.f.Lookup("tokenizer.ggml.token_type"); kv != nil {
		if types, ok = kv.Value.Ints(); !ok || len(types) != len(tokens) {
			return nil, g.errorf("tokenizer.ggml.token_type is %v, want %d integers, one per token (offset %d)", kv.Value, len(tokens), kv.Off)
		}
	}
	var merges []string
	if kv := g.f.Lookup("tokenizer.ggml.merges"); kv != nil {
		if merges, ok = kv.Value.Strings(); !ok {
			return nil, g.errorf("tokenizer.ggml.merges is a %v, want an array of strings (offset %d)", kv.Value.Type, kv.Off)
		}
	}
	flag := func(key string, def bool) (bool, error) {
		kv := g.f.Lookup(key)
		if kv == nil {
			return def, nil
		}
		b, ok := kv.Value.Bool()
		if !ok {
			return false, g.errorf("%s is a %v, want a bool (offset %d)", key, kv.Value.Type, kv.Off)
		}
		return b, nil
	}
	addBOS, err := flag("tokenizer.ggml.add_bos_token", pre.addBOS)
	if err != nil {
		return nil, err
	}
	addEOS, err := flag("tokenizer.ggml.add_eos_token", false)
	if err != nil {
		return nil, err
	}

	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var addedTokens []added
	vocab := vocabJSON{}
	for id, tok := range tokens {
		switch types[id] {
		case ggufTokenNormal, ggufTokenUnknown, ggufTokenByte:
			vocab = append(vocab, vocabEntry{tok, id})
		case ggufTokenControl, ggufTokenUserDefined:
			if tok == "" {
				return nil, g.errorf("token %d (%s) is empty", id, map[int64]string{3: "control", 4: "user-defined"}[types[id]])
			}
			ctl := types[id] == ggufTokenControl
			addedTokens = append(addedTokens, added{ID: id, Content: tok, Normalized: !ctl, Special: ctl})
		case ggufTokenUnused:
		default:
			return nil, g.errorf("token %d %q has token type %d, not one of 1-6", id, tok, types[id])
		}
	}
	special := func(key string) (map[string]any, error) {
		id, err := g.count(key, -1, 0, len(tokens)-1)
		if err != nil {
			return nil, err
		}
		return map[string]any{"id": tokens[id], "ids": []int{id}, "tokens": []string{tokens[id]}}, nil
	}
	var postProc any
	if addBOS || addEOS {
		single := []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}}
		specials := map[string]any{}
		for _, s := range []struct {
			on    bool
			key   string
			front bool
		}{{addBOS, "tokenizer.ggml.bos_token_id", true}, {addEOS, "tokenizer.ggml.eos_token_id", false}} {
			if !s.on {
				continue
			}
			st, err := special(s.key)
			if err != nil {
				return nil, fmt.Errorf("%w (the tokenizer adds that token)", err)
			}
			item := map[string]any{"SpecialToken": map[string]any{"id": st["id"], "type_id": 0}}
			if s.front {
				single = append([]any{item}, single...)
			} else {
				single = append(single, item)
			}
			specials[st["id"].(string)] = st
		}
		postProc = map[string]any{"type": "TemplateProcessing", "single": single, "special_tokens": specials}
	}
	var normalizer, preTok, decoder, unk any
	if model == "llama" {
		if merges, err = g.spmMerges(tokens, types); err != nil {
			return nil, err
		}
		// llama.cpp writes a space before every piece of text between
		// special tokens unless add_space_prefix says not to.
		space, err := flag("tokenizer.ggml.add_space_prefix", true)
		if err != nil {
			return nil, err
		}
		replace := map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}
		normalizer = replace
		decoders := []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"},
		}
		if space {
			normalizer = map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "Prepend", "prepend": "▁"}, replace}}
			decoders = append(decoders, map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0})
		}
		decoder = map[string]any{"type": "Sequence", "decoders": decoders}
		if id := slices.Index(types, ggufTokenUnknown); id >= 0 {
			unk = tokens[id]
		}
	} else {
		if pre.nfc {
			normalizer = map[string]any{"type": "NFC"}
		}
		byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": pre.regex == ""}
		preTok = byteLevel
		if pre.regex != "" {
			preTok = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": pre.regex}, "behavior": "Isolated", "invert": false},
				byteLevel,
			}}
		}
		decoder = map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}
	}
	if merges == nil {
		merges = []string{}
	}
	doc := struct {
		Version       string  `json:"version"`
		Truncation    any     `json:"truncation"`
		Padding       any     `json:"padding"`
		AddedTokens   []added `json:"added_tokens"`
		Normalizer    any     `json:"normalizer"`
		PreTokenizer  any     `json:"pre_tokenizer"`
		PostProcessor any     `json:"post_processor"`
		Decoder       any     `json:"decoder"`
		Model         struct {
			Type         string    `json:"type"`
			Dropout      any       `json:"dropout"`
			UnkToken     any       `json:"unk_token"`
			Continuing   any       `json:"continuing_subword_prefix"`
			EndOfWord    any       `json:"end_of_word_suffix"`
			FuseUnk      bool      `json:"fuse_unk"`
			ByteFallback bool      `json:"byte_fallback"`
			IgnoreMerges bool      `json:"ignore_merges"`
			Vocab        vocabJSON `json:"vocab"`
			Merges       []string  `json:"merges"`
		} `json:"model"`
	}{Version: "1.0", AddedTokens: addedTokens, Normalizer: normalizer, PreTokenizer: preTok, PostProcessor: postProc, Decoder: decoder}
	doc.Model.Type, doc.Model.IgnoreMerges, doc.Model.Vocab, doc.Model.Merges = "BPE", pre.ignoreMerges, vocab, merges
	doc.Model.ByteFallback, doc.Model.FuseUnk, doc.Model.UnkToken = model == "llama", model == "llama", unk
	if doc.AddedTokens == nil {
		doc.AddedTokens = []added{}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, g.errorf("writing tokenizer.json: %w", err)
	}
	return out.Bytes(), nil
}

// vocabJSON is a BPE vocabulary written as a JSON object in id order. A
// token listed twice keeps its last id, as llama.cpp's token map does.
type vocabJSON []vocabEntry

type vocabEntry struct {
	tok string
	id  int
}

func (v vocabJSON) MarshalJSON() ([]byte, error) {
	last := map[string]int{}
	for _, e := range v {
		last[e.tok] = e.id
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	first := true
	for _, e := range v {
		if last[e.tok] != e.id {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		if err := enc.Encode(e.tok); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		fmt.Fprintf(&b, ":%d", e.id)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// spmMerges derives the BPE merges of a SentencePiece vocabulary from its
// scores, as HuggingFace's converter writes a SentencePiece BPE model's
// tokenizer.json: every split of a normal token into two vocabulary
// tokens is a merge, ranked by the token's score (higher first), then by
// the token's id and the halves' ids. Merging by these ranks picks, at
// each step, the adjacent pair whose joined token scores highest, as
// llama.cpp's SentencePiece tokenizer does.
func (g *ggufSource) spmMerges(tokens []string, types []int64) ([]string, error) {
	kv := g.f.Lookup("tokenizer.ggml.scores")
	if kv == nil {
		return nil, g.errorf("no tokenizer.ggml.scores in the GGUF metadata: a SentencePiece vocabulary needs them")
	}
	scores, ok := kv.Value.Floats()
	if !ok || len(scores) != len(tokens) {
		return nil, g.errorf("tokenizer.ggml.scores is %v, want %d numbers, one per token (offset %d)", kv.Value, len(tokens), kv.Off)
	}
	ids := make(map[string]int, len(tokens))
	for id, tok := range tokens {
		switch types[id] {
		case ggufTokenNormal, ggufTokenUnknown, ggufTokenByte:
			ids[tok] = id
		}
	}
	type merge struct{ id, l, r int }
	var ms []merge
	for id, tok := range tokens {
		if types[id] != ggufTokenNormal || ids[tok] != id {
			continue
		}
		for i := 1; i < len(tok); i++ {
			if !utf8.RuneStart(tok[i]) {
				continue
			}
			l, okL := ids[tok[:i]]
			r, okR := ids[tok[i:]]
			// A half with a space never meets one: text's spaces are "▁".
			if okL && okR && !strings.Contains(tok, " ") {
				ms = append(ms, merge{id, l, r})
			}
		}
	}
	slices.SortFunc(ms, func(a, b merge) int {
		if c := cmp.Compare(scores[b.id], scores[a.id]); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.l, b.l), cmp.Compare(a.r, b.r))
	})
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = tokens[m.l] + " " + tokens[m.r]
	}
	return out, nil
}
