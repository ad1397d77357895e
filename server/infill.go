package server

// infill.go serves llama-server's POST /infill: code completion between a
// prefix and a suffix (fill-in-the-middle) with the model's FIM tokens, as
// editor plugins written for llama-server send it (input_prefix,
// input_suffix, input_extra, prompt, and /completion's fields).

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/sipack/sipack/tokenizer"
)

type llamaInfillRequest struct {
	llamaCompletionRequest
	InputPrefix string          `json:"input_prefix"`
	InputSuffix string          `json:"input_suffix"`
	InputExtra  json.RawMessage `json:"input_extra"`
}

// infillChunk is one file of input_extra: context for the completion.
type infillChunk struct {
	Filename string `json:"filename"`
	Text     string `json:"text"`
}

// fimTokens are a vocabulary's fill-in-the-middle tokens, −1 where absent:
// prefix, suffix and middle, and the repository-level pair (repository
// name, file separator) of Qwen2.5-Coder's layout.
type fimTokens struct{ pre, suf, mid, rep, sep int }

// fimNames are the texts a vocabulary's FIM tokens go by (Qwen, StarCoder
// and others), in fimTokens' order.
var fimNames = [5][]string{
	{"<|fim_prefix|>", "<fim_prefix>", "<fim-prefix>", "<PRE>"},
	{"<|fim_suffix|>", "<fim_suffix>", "<fim-suffix>", "<SUF>"},
	{"<|fim_middle|>", "<fim_middle>", "<fim-middle>", "<MID>"},
	{"<|repo_name|>", "<reponame>", "<|fim_repo|>"},
	{"<|file_sep|>", "<file_sep>", "<|fim_sep|>"},
}

// findFIM finds a vocabulary's FIM tokens: a name that encodes to one
// token whose text it is.
func findFIM(tok *tokenizer.Tokenizer) fimTokens {
	var ids [5]int
	for i, names := range fimNames {
		ids[i] = -1
		for _, n := range names {
			if t := tok.Encode(n, false); len(t) == 1 && string(tok.TokenBytes(t[0])) == n {
				ids[i] = t[0]
				break
			}
		}
	}
	return fimTokens{ids[0], ids[1], ids[2], ids[3], ids[4]}
}

// infillTokens lays out a fill-in-the-middle prompt as llama-server does:
// with the repository tokens,
//
//	<rep>myproject\n (<sep>filename\ntext)… <sep>filename\n <pre>prefix<suf>suffix<mid>prompt
//
// and without them each extra file's text after a "--- snippet ---" line,
// then <pre>prefix<suf>suffix<mid>prompt; bos (the tokens the model starts
// with, none or its BOS) first.
func infillTokens(enc func(string) []int, f fimTokens, bos []int, prefix, suffix, prompt string, extra []infillChunk) []int {
	out := append([]int(nil), bos...)
	repo := f.rep >= 0 && f.sep >= 0
	if repo {
		out = append(append(out, f.rep), enc("myproject\n")...)
	}
	for _, c := range extra {
		if repo {
			name := c.Filename
			if name == "" {
				name = "tmp" // llama-server's name for an unnamed file
			}
			out = append(append(out, f.sep), enc(name+"\n")...)
		} else {
			out = append(out, enc("\n\n--- snippet ---\n\n")...)
		}
		out = append(out, enc(c.Text)...)
	}
	if repo {
		out = append(append(out, f.sep), enc("filename\n")...)
	}
	out = append(append(out, f.pre), enc(prefix)...)
	out = append(append(out, f.suf), enc(suffix)...)
	return append(append(out, f.mid), enc(prompt)...)
}

// fimPrompt is a fill-in-the-middle prompt in the model's tokens
// (infillTokens, the repository-level layout only where repo is set) and
// the FIM tokens found; false where the vocabulary has none.
func (s *Server) fimPrompt(repo bool, prefix, suffix, prompt string, extra []infillChunk) ([]int, fimTokens, bool) {
	f := findFIM(s.e.Tok)
	if f.pre < 0 || f.suf < 0 || f.mid < 0 {
		return nil, f, false
	}
	if !repo {
		f.rep, f.sep = -1, -1
	}
	enc := func(t string) []int { return s.e.Tok.Encode(t, false) }
	return infillTokens(enc, f, s.e.Tok.Encode("", true), prefix, suffix, prompt, extra), f, true
}

func (s *Server) llamaInfill(w http.ResponseWriter, r *http.Request) {
	var req llamaInfillRequest
	if !s.decodeRequest(w, r, &req) {
		return
	}
	var extra []infillChunk
	if !isNull(req.InputExtra) {
		if first(req.InputExtra) != '[' || json.Unmarshal(req.InputExtra, &extra) != nil {
			badRequest(w, mustBe("input_extra", `an array of {"filename": ..., "text": ...} objects`, req.InputExtra))
			return
		}
	}
	var prompt string
	if !isNull(req.Prompt) {
		if first(req.Prompt) != '"' || json.Unmarshal(req.Prompt, &prompt) != nil {
			badRequest(w, mustBe("prompt", "a string (added after the middle token)", req.Prompt))
			return
		}
	}
	ids, f, ok := s.fimPrompt(true, req.InputPrefix, req.InputSuffix, prompt, extra)
	if !ok {
		badRequest(w, fmt.Errorf("the model has no fill-in-the-middle tokens (%s, %s, %s): /infill needs a model trained for it, such as Qwen2.5-Coder",
			fimNames[0][0], fimNames[1][0], fimNames[2][0]))
		return
	}
	gen, err := req.request(s.e.Ctx())
	if err == nil {
		// The repository tokens end a completion, as llama.cpp counts them
		// among the end-of-generation tokens of a FIM vocabulary.
		for _, id := range []int{f.rep, f.sep} {
			if id >= 0 {
				gen.Stop = append(gen.Stop, string(s.e.Tok.TokenBytes(id)))
			}
		}
		err = s.prepare(&gen, ids)
	}
	if err != nil {
		badRequest(w, err)
		return
	}
	s.llamaRun(w, r, req.Stream != nil && *req.Stream, gen)
}
