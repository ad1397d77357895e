package server

// structured.go serves structured output: OpenAI's response_format
// ({"type": "json_object"} or {"type": "json_schema", "json_schema":
// {"schema": ...}}) and ollama's format ("json" or a schema). The decode
// loop samples through a mask of the tokens that keep the JSON completable
// (package constrain), so an answer that ends by itself always parses and
// validates; the generation stops as the value closes (finish_reason
// "stop"). An answer cut by max_tokens (finish_reason "length") or by a stop
// string may be incomplete JSON, as with OpenAI.

import (
	"encoding/json"
	"errors"
	"sync"

	"github.com/sipack/sipack/constrain"
	"github.com/sipack/sipack/runner"
)

// parseResponseFormat reads OpenAI's response_format; nil for plain text.
// {"type": "json_object", "schema": {...}} (llama-server's form) is a schema too.
func parseResponseFormat(raw json.RawMessage) (*constrain.Grammar, error) {
	const what = `an object {"type": "text" | "json_object" | "json_schema", ...}`
	if isNull(raw) {
		return nil, nil
	}
	var rf struct {
		Type       json.RawMessage `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema"`
		Schema     json.RawMessage `json:"schema"`
	}
	if first(raw) != '{' || json.Unmarshal(raw, &rf) != nil {
		return nil, mustBe("response_format", what, raw)
	}
	var typ string
	if isNull(rf.Type) {
		return nil, fieldErr("response_format.type", `response_format.type is required: "text", "json_object" or "json_schema"`)
	}
	if first(rf.Type) != '"' || json.Unmarshal(rf.Type, &typ) != nil {
		return nil, mustBe("response_format.type", `"text", "json_object" or "json_schema"`, rf.Type)
	}
	switch typ {
	case "text":
		return nil, nil
	case "json_object":
		if isNull(rf.Schema) {
			return constrain.JSONObject(), nil
		}
		return compileSchema("response_format.schema", rf.Schema)
	case "json_schema":
		const name = "response_format.json_schema"
		if isNull(rf.JSONSchema) {
			return nil, fieldErr(name, `%s is required with type "json_schema": {"name": ..., "schema": {...}}`, name)
		}
		var js struct {
			Name   json.RawMessage `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict json.RawMessage `json:"strict"`
		}
		if first(rf.JSONSchema) != '{' || json.Unmarshal(rf.JSONSchema, &js) != nil {
			return nil, mustBe(name, `an object {"name": ..., "schema": {...}}`, rf.JSONSchema)
		}
		if !isNull(js.Name) && first(js.Name) != '"' {
			return nil, mustBe(name+".name", "a string", js.Name)
		}
		if c := first(js.Strict); !isNull(js.Strict) && c != 't' && c != 'f' {
			return nil, mustBe(name+".strict", "a boolean", js.Strict)
		}
		if isNull(js.Schema) {
			return nil, fieldErr(name+".schema", "%s.schema is required: a JSON schema object", name)
		}
		return compileSchema(name+".schema", js.Schema)
	}
	return nil, fieldErr("response_format.type", `response_format.type must be "text", "json_object" or "json_schema", got %q`, clip(typ, 40))
}

// parseOllamaFormat reads ollama's format: "json", a schema, or nothing
// ("" or null).
func parseOllamaFormat(raw json.RawMessage) (*constrain.Grammar, error) {
	const what = `"json" or a JSON schema object`
	if isNull(raw) || string(raw) == `""` {
		return nil, nil
	}
	var s string
	if first(raw) == '"' && json.Unmarshal(raw, &s) == nil {
		if s == "json" {
			return constrain.JSONObject(), nil
		}
		return nil, fieldErr("format", "format must be %s, got %q", what, clip(s, 40))
	}
	if first(raw) != '{' {
		return nil, mustBe("format", what, raw)
	}
	return compileSchema("format", raw)
}

// compileSchema compiles a request's schema; its errors name the field and
// the schema keyword.
func compileSchema(param string, raw json.RawMessage) (*constrain.Grammar, error) {
	if c := first(raw); c != '{' && c != 't' && c != 'f' {
		return nil, mustBe(param, "a JSON schema object", raw)
	}
	g, err := constrain.Compile(raw)
	if err != nil {
		var se *constrain.SchemaError
		if errors.As(err, &se) {
			return nil, fieldErr(param, "%s: %v", param, se)
		}
		return nil, fieldErr(param, "%s: %v", param, err)
	}
	return g, nil
}

// vocabs holds each model's vocabulary trie, built on the first structured
// request (it takes a moment on a large vocabulary) and shared after.
var vocabs sync.Map // *runner.Model → *lazyVocab

type lazyVocab struct {
	once sync.Once
	v    *constrain.Vocab
}

// vocab is the engine's vocabulary for masks: each token's bytes, special
// tokens (EOS included: the mask adds it itself) left out.
func (e *Engine) vocab() *constrain.Vocab {
	m := e.opt.Model
	lv, _ := vocabs.LoadOrStore(m, &lazyVocab{})
	l := lv.(*lazyVocab)
	l.once.Do(func() {
		toks := make([][]byte, max(m.Config.VocabSize, e.Tok.VocabSize()))
		for id := range e.Tok.VocabSize() {
			toks[id] = e.Tok.TokenBytes(id)
		}
		if m.Pack != nil {
			var doc struct {
				Added []struct {
					ID      int  `json:"id"`
					Special bool `json:"special"`
				} `json:"added_tokens"`
			}
			json.Unmarshal(m.Pack.Index.TokenizerJSON, &doc)
			for _, a := range doc.Added {
				if a.Special && a.ID >= 0 && a.ID < len(toks) {
					toks[a.ID] = nil
				}
			}
		}
		for id := range e.eos {
			if id >= 0 && id < len(toks) {
				toks[id] = nil
			}
		}
		l.v = constrain.NewVocab(toks)
	})
	return l.v
}

// constraint is a generation's structured output: its place in the
// grammar and the mask of the next token. Its methods take a nil receiver
// as no constraint, so the decode loop calls them unconditionally.
type constraint struct {
	m    *constrain.Matcher
	mask []uint64
	eos  []int // EOS ids, allowed when the value may end (none with ignore_eos)
}

// constraint returns r's constraint, or nil.
func (s *Slot) constraint(r *Request) *constraint {
	if r.Format == nil {
		return nil
	}
	v := s.e.vocab()
	c := &constraint{m: r.Format.Matcher(v), mask: make([]uint64, (v.Size()+63)/64)}
	if !r.IgnoreEOS {
		for id := range s.e.eos {
			c.eos = append(c.eos, id)
		}
	}
	return c
}

// sample draws the next token among those the grammar allows (all, without
// a constraint) and moves the grammar past it; -1 when none is allowed.
func (c *constraint) sample(sm *runner.Sampler, logits []float32, history []int) int {
	if c == nil {
		return sm.Sample(logits, history)
	}
	if words := (len(logits) + 63) / 64; len(c.mask) < words {
		c.mask = append(c.mask, make([]uint64, words-len(c.mask))...)
	}
	c.m.Fill(c.mask)
	if c.m.CanEnd() {
		for _, id := range c.eos {
			if id >= 0 && id/64 < len(c.mask) {
				c.mask[id/64] |= 1 << (id % 64)
			}
		}
	}
	tok := sm.SampleAllowed(logits, history, c.mask)
	if tok >= 0 && !c.isEOS(tok) {
		c.m.Accept(tok)
	}
	return tok
}

func (c *constraint) isEOS(tok int) bool {
	for _, id := range c.eos {
		if id == tok {
			return true
		}
	}
	return false
}

// done says whether the value is complete: the generation stops.
func (c *constraint) done() bool { return c != nil && c.m.Done() }

// stuck is the finish reason when no token is allowed (a vocabulary that
// cannot spell what must come next): "stop" if the value is whole, else
// "length", as for an answer cut short.
func (c *constraint) stuck() string {
	if c.m.CanEnd() {
		return "stop"
	}
	return "length"
}
