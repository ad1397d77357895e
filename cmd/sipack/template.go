package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/sipack/sipack/chat"
	"github.com/sipack/sipack/cmd/internal/cliutil"
)

var templateCmd = &cli.Command{
	Name:  "template",
	Usage: "render a conversation with a model's chat template and print the prompt exactly (no added newline)",
	ArgsUsage: "CONFIG MESSAGES_JSON\n\n" +
		"CONFIG is a tokenizer_config.json, a model directory or a .sip pack. MESSAGES_JSON is a JSON\n" +
		"array of {\"role\", \"content\"} (or {\"messages\": [...]}), given inline, as a FILE, or - for stdin.",
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "add-generation-prompt", Value: true, Usage: "end with the opening of an assistant turn"},
		&cli.StringFlag{Name: "name", Usage: "template `NAME` when the model has several (default: default)"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() != 2 {
			return fmt.Errorf("template needs CONFIG and MESSAGES_JSON, got %d arguments", c.NArg())
		}
		if err := cliutil.CheckInputs(c.Args().Slice()...); err != nil {
			return err
		}
		cfg, err := chat.LoadConfig(c.Args().Get(0))
		if err != nil {
			return err
		}
		tmpl, err := cfg.Compile(c.String("name"))
		if err != nil {
			return fmt.Errorf("%s: %w", c.Args().Get(0), err)
		}
		msgs, err := readMessages(c.Args().Get(1))
		if err != nil {
			return err
		}
		out, err := tmpl.Render(msgs, c.Bool("add-generation-prompt"))
		if err != nil {
			return err
		}
		_, err = io.WriteString(os.Stdout, out)
		return err
	},
}

// readMessages reads a conversation: inline JSON, a file, or - for stdin.
func readMessages(arg string) ([]chat.Message, error) {
	var data []byte
	var err error
	switch t := bytes.TrimSpace([]byte(arg)); {
	case arg == "-":
		data, err = io.ReadAll(io.LimitReader(os.Stdin, 64<<20))
	case len(t) > 0 && (t[0] == '[' || t[0] == '{'):
		data = t
	default:
		data, err = os.ReadFile(arg)
	}
	if err != nil {
		return nil, err
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		var wrap struct {
			Messages json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(data, &wrap); err != nil || wrap.Messages == nil {
			return nil, fmt.Errorf("messages: want a JSON array of {role, content} or {\"messages\": [...]}")
		}
		data = wrap.Messages
	}
	var raw []struct {
		Role    *string `json:"role"`
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("messages: want a JSON array of {role, content} strings: %w", err)
	}
	msgs := make([]chat.Message, len(raw))
	for i, m := range raw {
		if m.Role == nil || m.Content == nil {
			return nil, fmt.Errorf("messages[%d]: want \"role\" and \"content\" strings", i)
		}
		msgs[i] = chat.Message{Role: *m.Role, Content: *m.Content}
	}
	return msgs, chat.CheckMessages(msgs)
}
