// Command enginecmp renders testdata/chat's golden cases with the two Go
// Jinja engines considered, github.com/ardanlabs/jinja and
// github.com/nikolalohinski/gonja/v2 (both with trim_blocks and
// lstrip_blocks, as transformers renders), and counts the byte-identical
// renderings per template. A module of its own so that the project does not
// depend on the engine it did not pick:
//
//	cd testdata/chat/enginecmp && go run .
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ardanlabs/jinja"
	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

type tmplFile struct {
	Bos  *string `json:"bos_token"`
	Eos  *string `json:"eos_token"`
	Tmpl string  `json:"chat_template"`
}

func main() {
	dir := "../"
	var g struct {
		Cases []struct {
			Template, Conversation string
			AGP                    bool `json:"add_generation_prompt"`
			Output                 *string
			Error                  string
		}
	}
	b, _ := os.ReadFile(dir + "goldens.json")
	json.Unmarshal(b, &g)
	var convs []struct {
		Name     string
		Messages []any
	}
	b, _ = os.ReadFile(dir + "conversations.json")
	json.Unmarshal(b, &convs)
	conv := map[string][]any{}
	for _, c := range convs {
		conv[c.Name] = c.Messages
	}
	tmpls := map[string]tmplFile{}
	for _, n := range []string{"llama3", "llama3_1", "qwen3", "gemma3"} {
		var t tmplFile
		b, _ := os.ReadFile(dir + "templates/" + n + ".json")
		json.Unmarshal(b, &t)
		tmpls[n] = t
	}
	tb, _ := os.ReadFile(dir + "tiny_template.jinja")
	bos, eos := "<|begin_of_text|>", "<|end_of_text|>"
	tmpls["tiny"] = tmplFile{&bos, &eos, string(tb)}
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	ok := map[string][2]int{}
	shown := map[string]bool{} // the first mismatch of each engine and template
	for _, c := range g.Cases {
		t := tmpls[c.Template]
		data := func() map[string]any {
			var msgs []any
			mb, _ := json.Marshal(conv[c.Conversation])
			json.Unmarshal(mb, &msgs)
			return map[string]any{"messages": msgs, "add_generation_prompt": c.AGP, "bos_token": s(t.Bos), "eos_token": s(t.Eos)}
		}
		r := ok[c.Template]
		// ardanlabs
		a, aerr := func() (string, error) {
			tt, err := jinja.Compile(t.Tmpl)
			if err != nil {
				return "", err
			}
			return tt.Render(data())
		}()
		if (c.Output != nil && aerr == nil && a == *c.Output) || (c.Output == nil && aerr != nil) {
			r[0]++
		} else if !shown["ardan"+c.Template] {
			shown["ardan"+c.Template] = true
			fmt.Printf("ardan %s/%s/%v: err=%v\n got %q\nwant %q\n", c.Template, c.Conversation, c.AGP, aerr, a, s(c.Output))
		}
		gg, gerr := func() (out string, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic %v", r)
				}
			}()
			cfg := config.New()
			cfg.TrimBlocks, cfg.LeftStripBlocks = true, true
			loader, _ := loaders.NewFileSystemLoader("")
			sl, _ := loaders.NewShiftedLoader("root", bytes.NewReader([]byte(t.Tmpl)), loader)
			env := *gonja.DefaultEnvironment
			tt, err := exec.NewTemplate("root", cfg, sl, &env)
			if err != nil {
				return "", err
			}
			d := data()
			d["raise_exception"] = func(msg string) (string, error) { return "", errors.New(msg) }
			d["strftime_now"] = func(f string) string { return time.Now().Format("2006") }
			return tt.ExecuteToString(exec.NewContext(d))
		}()
		if (c.Output != nil && gerr == nil && gg == *c.Output) || (c.Output == nil && gerr != nil) {
			r[1]++
		} else if !shown["gonja"+c.Template] {
			shown["gonja"+c.Template] = true
			fmt.Printf("gonja %s/%s/%v: err=%v\n got %q\nwant %q\n", c.Template, c.Conversation, c.AGP, gerr, gg, s(c.Output))
		}
		ok[c.Template] = r
	}
	fmt.Println("byte-identical (or failing where @huggingface/jinja fails) [ardanlabs gonja] per template of 26:", ok)
}
