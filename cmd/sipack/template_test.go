package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const chatData = "../../testdata/chat/"

// TestTemplateCommandMatchesGoldens runs sipack template on every golden
// case of the real templates: stdout must be the expected bytes exactly.
func TestTemplateCommandMatchesGoldens(t *testing.T) {
	var convs []struct {
		Name     string          `json:"name"`
		Messages json.RawMessage `json:"messages"`
	}
	var g struct {
		Cases []struct {
			Template     string  `json:"template"`
			Conversation string  `json:"conversation"`
			AddGenPrompt bool    `json:"add_generation_prompt"`
			Output       *string `json:"output"`
		} `json:"cases"`
	}
	for path, v := range map[string]any{"conversations.json": &convs, "goldens.json": &g} {
		b, err := os.ReadFile(chatData + path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	msgs := map[string]string{}
	for _, c := range convs {
		msgs[c.Name] = string(c.Messages)
	}
	n := 0
	for _, c := range g.Cases {
		// The CLI costs a process per case: the llama3_1 and gemma3 cases
		// (the chat package checks every case in-process).
		if c.Template != "llama3_1" && c.Template != "gemma3" {
			continue
		}
		agp := "--add-generation-prompt=false"
		if c.AddGenPrompt {
			agp = "--add-generation-prompt=true"
		}
		out, errOut, code := run(t, "template", agp, chatData+"templates/"+c.Template+".json", msgs[c.Conversation])
		switch {
		case c.Output == nil && (code == 0 || !strings.Contains(errOut, "alternate")):
			t.Errorf("%s/%s: exit %d, stderr %q; want the template's error", c.Template, c.Conversation, code, errOut)
		case c.Output != nil && (code != 0 || out != *c.Output):
			t.Errorf("%s/%s/%v (exit %d, %s):\n got %q\nwant %q", c.Template, c.Conversation, c.AddGenPrompt, code, errOut, out, *c.Output)
		}
		n++
	}
	if n < 40 {
		t.Fatalf("only %d cases ran", n)
	}
}

// TestConvertStoresChatTemplate: convert --chat-template stores the template
// in the pack, and sipack template renders from the pack as from the file.
func TestConvertStoresChatTemplate(t *testing.T) {
	dir := t.TempDir()
	pack := filepath.Join(dir, "tiny.sip")
	if _, errOut, code := run(t, "convert", "-q", tiny, "-o", pack, "--chat-template", chatData+"templates/qwen3.json"); code != 0 {
		t.Fatalf("convert failed (%d): %s", code, errOut)
	}
	conv := `[{"role":"system","content":"S"},{"role":"user","content":"¿hola?"}]`
	fromFile, _, code1 := run(t, "template", chatData+"templates/qwen3.json", conv)
	fromPack, errOut, code2 := run(t, "template", pack, conv)
	want := "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\n¿hola?<|im_end|>\n<|im_start|>assistant\n"
	if code1 != 0 || code2 != 0 || fromFile != want || fromPack != want {
		t.Fatalf("file (%d) %q, pack (%d, %s) %q; want %q", code1, fromFile, code2, errOut, fromPack, want)
	}
	// A pack without a template (the tiny model is a base model) says so.
	plain := filepath.Join(dir, "plain.sip")
	if _, errOut, code := run(t, "convert", "-q", tiny, "-o", plain); code != 0 {
		t.Fatalf("convert failed (%d): %s", code, errOut)
	}
	if _, errOut, code := run(t, "template", plain, conv); code == 0 || !strings.Contains(errOut, "no chat template") {
		t.Fatalf("template of a pack without one: exit %d, %q", code, errOut)
	}
	// Bad input: a broken template, bad messages, a missing config.
	broken := filepath.Join(dir, "broken.jinja")
	os.WriteFile(broken, []byte("{% for m in messages %}{{ m.content "), 0o644)
	for _, args := range [][]string{
		{"convert", "-q", tiny, "-o", filepath.Join(dir, "x.sip"), "--chat-template", broken},
		{"convert", "-q", tiny, "-o", filepath.Join(dir, "x.sip"), "--chat-template", filepath.Join(dir, "missing.jinja")},
		{"template", pack, `[{"role":"user"}]`},
		{"template", pack, `[{"role":"user","content":5}]`},
		{"template", pack, `{"messages": 3}`},
		{"template", pack, `[{"role":"alien","content":"x"}]`},
		{"template", filepath.Join(dir, "missing.json"), conv},
		{"template", pack},
	} {
		if _, errOut, code := run(t, args...); code == 0 || errOut == "" {
			t.Errorf("sipack %v: exit %d, stderr %q; want an error", args, code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.sip")); err == nil {
		t.Error("a refused convert left a pack")
	}
}
