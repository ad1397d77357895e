package server

// llamaserver.go serves llama-server's extras in its request and response
// shapes (POST /tokenize, /detokenize, /apply-template, GET /props): tools
// written for llama-server count tokens and render prompts with them. Their
// errors are the OpenAI shape the rest of the server answers.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"unicode/utf8"

	"github.com/sipack/sipack/chat"
)

type tokenizeRequest struct {
	Content    *string `json:"content"`
	AddSpecial *bool   `json:"add_special"`
	WithPieces *bool   `json:"with_pieces"`
}

type detokenizeRequest struct {
	Tokens json.RawMessage `json:"tokens"`
}

type applyTemplateRequest struct {
	Messages json.RawMessage `json:"messages"`
}

// tokenize is llama-server's /tokenize; the text is bounded by the body cap.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if !s.decodeRequest(w, r, &req) {
		return
	}
	if req.Content == nil {
		badRequest(w, fieldErr("content", "content is required: a string"))
		return
	}
	// add_special defaults to false, as in llama-server.
	ids := s.e.Tok.Encode(*req.Content, req.AddSpecial != nil && *req.AddSpecial)
	if req.WithPieces == nil || !*req.WithPieces {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return
	}
	// A piece that is not whole UTF-8 (a byte of a character) is given as
	// its bytes, as llama-server does.
	pieces := make([]map[string]any, len(ids))
	for i, id := range ids {
		b := s.e.Tok.TokenBytes(id)
		var piece any = string(b)
		if !utf8.Valid(b) {
			bs := make([]int, len(b))
			for j, c := range b {
				bs[j] = int(c)
			}
			piece = bs
		}
		pieces[i] = map[string]any{"id": id, "piece": piece}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": pieces})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req detokenizeRequest
	if !s.decodeRequest(w, r, &req) {
		return
	}
	ids, err := parseTokens("tokens", req.Tokens, s.e.Tok.VocabSize())
	if err != nil {
		badRequest(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": s.e.Tok.Decode(ids)})
}

// parseTokens reads the field param: an array of token ids in [0, vocab).
func parseTokens(param string, raw json.RawMessage, vocab int) ([]int, error) {
	if isNull(raw) {
		return nil, fieldErr(param, "%s is required: an array of token ids", param)
	}
	var items []json.RawMessage
	if first(raw) != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, mustBe(param, "an array of token ids", raw)
	}
	ids := make([]int, len(items))
	for i, it := range items {
		name := fmt.Sprintf("%s[%d]", param, i)
		c := first(it)
		if !(c == '-' || (c >= '0' && c <= '9')) || json.Unmarshal(it, &ids[i]) != nil {
			return nil, mustBe(name, "an integer token id", it)
		}
		if ids[i] < 0 || ids[i] >= vocab {
			return nil, fieldErr(name, "%s must be a token id in [0, %d), got %d", name, vocab, ids[i])
		}
	}
	return ids, nil
}

// applyTemplate renders messages with the chat template and the opening of
// the assistant's turn, the prompt /v1/chat/completions would generate from.
func (s *Server) applyTemplate(w http.ResponseWriter, r *http.Request) {
	var req applyTemplateRequest
	if !s.decodeRequest(w, r, &req) {
		return
	}
	msgs, err := parseMessages(req.Messages)
	if err != nil {
		badRequest(w, err)
		return
	}
	tmpl := s.e.Template()
	if tmpl == nil {
		badRequest(w, chat.ErrNoTemplate)
		return
	}
	text, err := tmpl.Render(msgs, true)
	if err != nil {
		badRequest(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompt": text})
}

// buildInfo names this build: the module's version and the Go toolchain.
func buildInfo() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("sirun %s, %s", v, runtime.Version())
}

func (s *Server) props(w http.ResponseWriter, r *http.Request) {
	tmpl, bos, eos := "", "", ""
	if t := s.e.Template(); t != nil {
		tmpl, bos, eos = t.Source, t.BOS, t.EOS
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": map[string]any{
			"n_ctx": s.e.Ctx(),
			// /v1/*'s defaults: a request without them gets these.
			"params": map[string]any{"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repeat_penalty": 1.0, "n_predict": -1},
		},
		"total_slots":   s.opt.Parallel,
		"model_path":    s.e.opt.Model.Pack.Path,
		"model_alias":   s.opt.Model,
		"chat_template": tmpl,
		"bos_token":     bos,
		"eos_token":     eos,
		"modalities":    map[string]bool{"vision": false, "audio": false},
		"build_info":    buildInfo(),
	})
}
