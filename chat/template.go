// Package chat turns conversations into prompts and runs them: it renders a
// model's chat template (Jinja, as HuggingFace's tokenizer_config.json gives
// it) and drives the runner for multi-turn chat and the HTTP server.
//
// Templates are rendered with github.com/ardanlabs/jinja, configured as
// transformers renders them (trim_blocks and lstrip_blocks on) and given
// messages, add_generation_prompt, bos_token and eos_token, and tools when a
// request has any (undefined otherwise); raise_exception is the engine's
// built-in and strftime_now this package's (tools.go). The engine has no loader, so a template (untrusted text
// from a pack) cannot read files or include other templates; it has no cap
// on loop counts or output size, so a hostile template can make rendering
// slow or large (load only packs you would run). It refuses a
// tokenizer_config.json without a chat_template, a template list without
// names, and messages with roles other than system, user, assistant and tool.
package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"

	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/tmpfile"
	"github.com/sipack/sipack/tokenizer"
)

// Message is one turn of a conversation. An assistant turn may carry the
// tool calls it made, and a tool turn the id and name of the call it
// answers; the template sees them as transformers passes them (tools.go).
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// Roles a message may have.
var Roles = []string{"system", "user", "assistant", "tool"}

// Config is what a template is rendered with: the templates of a model,
// "default" first, and the text of its bos and eos tokens.
type Config struct {
	Templates []format.ChatTemplate
	BOS, EOS  string
}

// ErrNoTemplate is returned for a model that has no chat template.
var ErrNoTemplate = errors.New("no chat template (a base model? give one with sipack convert --chat-template FILE)")

// maxConfigBytes caps a tokenizer_config.json read from disk.
const maxConfigBytes = 64 << 20

// ParseTokenizerConfig reads a tokenizer_config.json: chat_template (a
// string, or a list of {name, template}; "default" is put first), bos_token
// and eos_token (strings, or {content: ...} objects). A config without a
// chat template gives a Config with no templates.
func ParseTokenizerConfig(data []byte) (*Config, error) {
	var raw struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	cfg := &Config{}
	var err error
	if cfg.BOS, err = tokenText(raw.BOS); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: bos_token: %w", err)
	}
	if cfg.EOS, err = tokenText(raw.EOS); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: eos_token: %w", err)
	}
	if cfg.Templates, err = parseTemplates(raw.ChatTemplate); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: chat_template: %w", err)
	}
	return cfg, nil
}

func tokenText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", fmt.Errorf("want a string or {\"content\": string}, got %.40s", raw)
	}
	return *obj.Content, nil
}

func parseTemplates(raw json.RawMessage) ([]format.ChatTemplate, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		ts := []format.ChatTemplate{{Name: "default", Template: one}}
		return ts, format.CheckChatTemplates(ts)
	}
	var list []struct {
		Name     *string `json:"name"`
		Template *string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("want a string or a list of {name, template}: %w", err)
	}
	var ts []format.ChatTemplate
	for i, e := range list {
		if e.Name == nil || e.Template == nil {
			return nil, fmt.Errorf("entry %d: want {name, template} strings", i)
		}
		ts = append(ts, format.ChatTemplate{Name: *e.Name, Template: *e.Template})
	}
	// "default" first, the others in their order.
	slices.SortStableFunc(ts, func(a, b format.ChatTemplate) int {
		switch {
		case a.Name == "default" && b.Name != "default":
			return -1
		case b.Name == "default" && a.Name != "default":
			return 1
		}
		return 0
	})
	return ts, format.CheckChatTemplates(ts)
}

// ConfigFromPack returns the chat templates stored in an open pack, with the
// text of the model's bos and first eos token.
func ConfigFromPack(p *format.Pack, tk *tokenizer.Tokenizer) *Config {
	cfg := &Config{Templates: p.Index.ChatTemplates}
	c := &p.Index.Config
	if c.BOSTokenID >= 0 {
		cfg.BOS = string(tk.TokenBytes(c.BOSTokenID))
	}
	if len(c.EOSTokenIDs) > 0 {
		cfg.EOS = string(tk.TokenBytes(c.EOSTokenIDs[0]))
	}
	return cfg
}

// LoadConfig reads the chat templates of path: a tokenizer_config.json, a
// model directory holding one, or a .sip pack.
func LoadConfig(path string) (*Config, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		path = filepath.Join(path, "tokenizer_config.json")
	} else if !strings.HasSuffix(path, ".json") {
		p, err := format.Open(path, format.OpenOptions{Gamma: 1e-9})
		if err != nil {
			return nil, err
		}
		defer p.Close()
		tk, err := tokenizer.Load(p.Index.TokenizerJSON)
		if err != nil {
			return nil, fmt.Errorf("%s: tokenizer: %w", path, err)
		}
		return ConfigFromPack(p, tk), nil
	}
	f, err := tmpfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, maxConfigBytes+1)
	n, _ := f.ReadAt(data, 0)
	if n > maxConfigBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, maxConfigBytes>>20)
	}
	cfg, err := ParseTokenizerConfig(data[:n])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Template is a compiled chat template. It is safe for concurrent use.
type Template struct {
	Name     string
	Source   string // the Jinja source, for the APIs that show it
	BOS, EOS string
	t        *jinja.Template
	tools    ToolFormat
	now      func() time.Time // strftime_now's clock; nil: time.Now
}

// Compile compiles the named template of cfg ("" picks the first, which is
// "default" when there is one).
func (cfg *Config) Compile(name string) (*Template, error) {
	if len(cfg.Templates) == 0 {
		return nil, ErrNoTemplate
	}
	i := 0
	if name != "" {
		i = slices.IndexFunc(cfg.Templates, func(t format.ChatTemplate) bool { return t.Name == name })
		if i < 0 {
			var names []string
			for _, t := range cfg.Templates {
				names = append(names, t.Name)
			}
			return nil, fmt.Errorf("no chat template named %q (have %s)", name, strings.Join(names, ", "))
		}
	}
	t, err := jinja.Compile(cfg.Templates[i].Template)
	if err != nil {
		return nil, fmt.Errorf("chat template %q: %w", cfg.Templates[i].Name, err)
	}
	src := cfg.Templates[i].Template
	return &Template{Name: cfg.Templates[i].Name, Source: src, BOS: cfg.BOS, EOS: cfg.EOS, t: t, tools: detectToolFormat(src)}, nil
}

// CheckMessages refuses roles a template does not know.
func CheckMessages(msgs []Message) error {
	for i, m := range msgs {
		if !slices.Contains(Roles, m.Role) {
			return fmt.Errorf("messages[%d]: unknown role %q (want one of %s)", i, m.Role, strings.Join(Roles, ", "))
		}
	}
	return nil
}

// Render renders a conversation. With addGenerationPrompt the prompt ends
// with the template's opening of an assistant turn.
func (t *Template) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	return t.RenderTools(msgs, nil, addGenerationPrompt)
}

// RenderTools renders a conversation with the tools the model may call (nil:
// none, and the template's tools is undefined, as without tools).
func (t *Template) RenderTools(msgs []Message, tools []Tool, addGenerationPrompt bool) (string, error) {
	if err := CheckMessages(msgs); err != nil {
		return "", err
	}
	data, err := t.data(msgs, tools)
	if err != nil {
		return "", err
	}
	data["add_generation_prompt"] = jinja.NewBool(addGenerationPrompt)
	out, err := t.t.RenderValues(data)
	if err != nil {
		return "", fmt.Errorf("chat template %q: %w", t.Name, err)
	}
	return out, nil
}

// Encode tokenises a rendered prompt. Special-token text in it (such as
// "<|eot_id|>") becomes the special token. The tokenizer's bos is added
// unless the text already starts with it, so a template that emits bos_token
// does not get a second one.
func Encode(tk *tokenizer.Tokenizer, text string) []int {
	ids := tk.Encode(text, false)
	if pre := tk.Encode("", true); len(pre) == 1 && (len(ids) == 0 || ids[0] != pre[0]) {
		ids = append(pre, ids...)
	}
	return ids
}
