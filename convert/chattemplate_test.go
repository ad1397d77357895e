package convert

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sipack/sipack/convert/testmodel"
	"github.com/sipack/sipack/format"
)

// TestChatTemplatesFromTokenizerConfig: a model directory's
// tokenizer_config.json chat templates go into the pack, all of them,
// "default" first; --chat-template replaces them; a broken one is refused.
func TestChatTemplatesFromTokenizerConfig(t *testing.T) {
	dir := t.TempDir()
	if err := testmodel.Write(dir, testmodel.Tiny(tokJSON(t))); err != nil {
		t.Fatal(err)
	}
	cfg := `{"bos_token": "<|begin_of_text|>", "chat_template": [
		{"name": "tool_use", "template": "{{ tools }}"},
		{"name": "default", "template": "{% for m in messages %}{{ m.content }}{% endfor %}"}]}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _ := convertTo(t, dir, Options{})
	want := []format.ChatTemplate{
		{Name: "default", Template: "{% for m in messages %}{{ m.content }}{% endfor %}"},
		{Name: "tool_use", Template: "{{ tools }}"},
	}
	if !slices.Equal(p.Index.ChatTemplates, want) {
		t.Fatalf("pack templates %q, want %q", p.Index.ChatTemplates, want)
	}

	over := filepath.Join(t.TempDir(), "t.jinja")
	os.WriteFile(over, []byte("{{ bos_token }}{{ messages[0].content }}"), 0o644)
	p2, _ := convertTo(t, dir, Options{ChatTemplate: over})
	if len(p2.Index.ChatTemplates) != 1 || p2.Index.ChatTemplates[0].Name != "default" || !strings.HasPrefix(p2.Index.ChatTemplates[0].Template, "{{ bos_token }}") {
		t.Fatalf("--chat-template: pack templates %q", p2.Index.ChatTemplates)
	}

	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"chat_template": "{% if %}"}`), 0o644)
	if _, err := OpenModel(dir); err == nil || !strings.Contains(err.Error(), "tokenizer_config.json") {
		t.Fatalf("broken template: %v, want an error naming tokenizer_config.json", err)
	}
}
