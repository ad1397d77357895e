package format

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestChatTemplatesRoundTrip(t *testing.T) {
	want := []ChatTemplate{
		{Name: "default", Template: "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"},
		{Name: "tool_use", Template: "¿{{ tools | tojson }}? 🙂"},
	}
	idx := &Index{Config: smallConfig(), ChatTemplates: want}
	got, err := decodeIndex(encodeIndex(idx))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.ChatTemplates, want) {
		t.Fatalf("chat templates %q, want %q", got.ChatTemplates, want)
	}
	// A pack without templates (every pack before v1.3) loads with none.
	path := writeSmall(t, t.TempDir(), nil, 8)
	p, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Index.ChatTemplates != nil {
		t.Fatalf("pack without templates has %q", p.Index.ChatTemplates)
	}
}

// TestChatTemplatesRefused encodes indexes the writer would refuse and checks
// that the reader refuses them too: the text is untrusted.
func TestChatTemplatesRefused(t *testing.T) {
	ok := ChatTemplate{Name: "default", Template: "x"}
	many := make([]ChatTemplate, MaxChatTemplates+1)
	for i := range many {
		many[i] = ChatTemplate{Name: strings.Repeat("n", i+1), Template: "x"}
	}
	for _, c := range []struct {
		name string
		ts   []ChatTemplate
	}{
		{"empty name", []ChatTemplate{{Name: "", Template: "x"}}},
		{"long name", []ChatTemplate{{Name: strings.Repeat("a", MaxChatTemplateName+1), Template: "x"}}},
		{"bad UTF-8 name", []ChatTemplate{{Name: "a\xff", Template: "x"}}},
		{"empty template", []ChatTemplate{{Name: "default", Template: ""}}},
		{"bad UTF-8 template", []ChatTemplate{{Name: "default", Template: "{{ '\xc3' }}"}}},
		{"huge template", []ChatTemplate{{Name: "default", Template: strings.Repeat("x", MaxChatTemplateBytes+1)}}},
		{"duplicate", []ChatTemplate{ok, ok}},
		{"too many", many},
	} {
		_, err := decodeIndex(encodeIndex(&Index{Config: smallConfig(), ChatTemplates: c.ts}))
		if !errors.Is(err, ErrIndex) {
			t.Errorf("%s: decode error %v, want ErrIndex", c.name, err)
		}
		if err := CheckChatTemplates(c.ts); err == nil {
			t.Errorf("%s: CheckChatTemplates accepted it", c.name)
		}
	}
	// The writer refuses them before writing anything.
	dir := t.TempDir()
	err := WritePack(t.Context(), dir+"/bad.sip", &WriteSpec{Index: &Index{Config: smallConfig(), ChatTemplates: []ChatTemplate{ok, ok}}})
	if err == nil {
		t.Fatal("WritePack wrote duplicate chat templates")
	}
	if m, _ := filepath.Glob(dir + "/bad.sip*"); len(m) != 0 {
		t.Fatal("WritePack left a temporary file")
	}
}
