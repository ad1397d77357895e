package chat

// tools.go: tool calling. Tools and tool calls reach the template as
// transformers passes them (tools: the list of {"type": "function",
// "function": {...}} objects, key order kept; an assistant message's
// tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}]
// with arguments an object), and a model's output is read back into calls in
// the format its template teaches: Qwen's <tool_call> blocks or Llama 3.1's
// bare JSON object.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/ardanlabs/jinja"
)

// Tool is a function the model may call: its name and the whole
// {"type": "function", "function": {...}} object, which the template gets as
// it is.
type Tool struct {
	Name string
	Spec json.RawMessage
}

// ToolCall is a call of a tool: by the model in its output, or by an
// assistant turn of the conversation. Arguments is a JSON object (a JSON
// string when a client sent arguments that are not an object).
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// MarshalJSON writes OpenAI's (and transformers') shape.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	type fn struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	args := c.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return json.Marshal(struct {
		ID       string `json:"id,omitempty"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}{c.ID, "function", fn{c.Name, args}})
}

// UnmarshalJSON reads the shape MarshalJSON writes.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var v struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = ToolCall{ID: v.ID, Name: v.Function.Name, Arguments: v.Function.Arguments}
	return nil
}

// ToolFormat is how a template lays out tool calls, which is how the model
// writes them.
type ToolFormat int

const (
	// NoTools: the template never reads tools.
	NoTools ToolFormat = iota
	// UnknownTools: the template reads tools, in a format not parsed here.
	UnknownTools
	// QwenTools: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>,
	// one block per call, after any text (Qwen2.5, Qwen3, Hermes).
	QwenTools
	// LlamaTools: the whole output is {"name": ..., "parameters": {...}},
	// or text, <|python_tag|> and the object (Llama 3.1 to 3.3).
	LlamaTools
)

func (f ToolFormat) String() string {
	switch f {
	case NoTools:
		return "none"
	case QwenTools:
		return "qwen"
	case LlamaTools:
		return "llama3"
	}
	return "unknown"
}

// ToolFormat is the template's tool call format.
func (t *Template) ToolFormat() ToolFormat { return t.tools }

var (
	jinjaTag    = regexp.MustCompile(`(?s)\{[{%].*?[%}]\}`)
	jinjaString = regexp.MustCompile(`'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"`)
	toolsName   = regexp.MustCompile(`(^|[^\w.])tools\b`)
)

// detectToolFormat reads a template's source: whether an expression or
// statement names the variable tools (string literals aside, so "<tools>"
// in text does not count), and which call markers its text holds.
func detectToolFormat(src string) ToolFormat {
	reads := false
	for _, tag := range jinjaTag.FindAllString(src, -1) {
		if toolsName.MatchString(jinjaString.ReplaceAllString(tag, `""`)) {
			reads = true
			break
		}
	}
	switch {
	case !reads:
		return NoTools
	case strings.Contains(src, "<tool_call>"):
		return QwenTools
	case strings.Contains(src, "<|python_tag|>") || strings.Contains(src, `"parameters"`):
		return LlamaTools
	}
	return UnknownTools
}

// data is what a template is rendered with, add_generation_prompt aside.
func (t *Template) data(msgs []Message, tools []Tool) (map[string]jinja.Value, error) {
	ms := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		d := jinja.NewDict()
		dd := d.AsDict()
		dd.Set("role", jinja.NewString(m.Role))
		dd.Set("content", jinja.NewString(m.Content))
		// Keys only where set: templates test 'tool_calls' in message.
		if len(m.ToolCalls) > 0 {
			calls := make([]jinja.Value, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				args := c.Arguments
				if len(bytes.TrimSpace(args)) == 0 {
					args = json.RawMessage("{}")
				}
				av, err := jsonValue(args)
				if err != nil {
					return nil, fmt.Errorf("messages[%d].tool_calls[%d].function.arguments: %w", i, j, err)
				}
				fn := jinja.NewDict()
				fn.AsDict().Set("name", jinja.NewString(c.Name))
				fn.AsDict().Set("arguments", av)
				call := jinja.NewDict()
				if c.ID != "" {
					call.AsDict().Set("id", jinja.NewString(c.ID))
				}
				call.AsDict().Set("type", jinja.NewString("function"))
				call.AsDict().Set("function", fn)
				calls[j] = call
			}
			dd.Set("tool_calls", jinja.NewList(calls))
		}
		if m.ToolCallID != "" {
			dd.Set("tool_call_id", jinja.NewString(m.ToolCallID))
		}
		if m.Name != "" {
			dd.Set("name", jinja.NewString(m.Name))
		}
		ms[i] = d
	}
	now := t.now
	if now == nil {
		now = time.Now
	}
	data := map[string]jinja.Value{
		"messages":  jinja.NewList(ms),
		"bos_token": jinja.NewString(t.BOS),
		"eos_token": jinja.NewString(t.EOS),
		"strftime_now": jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 || !args[0].IsString() {
				return jinja.Undefined(), errors.New("strftime_now takes one format string")
			}
			return jinja.NewString(strftime(now(), args[0].AsString())), nil
		}),
	}
	if tools != nil {
		ts := make([]jinja.Value, len(tools))
		for i, tool := range tools {
			v, err := jsonValue(tool.Spec)
			if err != nil {
				return nil, fmt.Errorf("tools[%d]: %w", i, err)
			}
			ts[i] = v
		}
		data["tools"] = jinja.NewList(ts)
	}
	return data, nil
}

// jsonValue converts one JSON value to a template value, keeping the order of
// object keys (tojson writes them back in that order, as Python does).
func jsonValue(raw json.RawMessage) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Undefined(), errors.New("more than one JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			_, err := dec.Token()
			return jinja.NewList(items), err
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				d.AsDict().Set(k.(string), v)
			}
			_, err := dec.Token()
			return d, err
		}
		return jinja.Undefined(), fmt.Errorf("unexpected %v", tok)
	case nil:
		return jinja.None(), nil
	}
	return jinja.FromGoValue(tok), nil // bool, json.Number, string
}

// strftime formats t as Python's strftime does for the codes chat templates
// use; other codes are left as they are.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			b.WriteString(t.Format("2006"))
		case 'y':
			b.WriteString(t.Format("06"))
		case 'm':
			b.WriteString(t.Format("01"))
		case 'd':
			b.WriteString(t.Format("02"))
		case 'H':
			b.WriteString(t.Format("15"))
		case 'I':
			b.WriteString(t.Format("03"))
		case 'M':
			b.WriteString(t.Format("04"))
		case 'S':
			b.WriteString(t.Format("05"))
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'b':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

const (
	qwenOpen  = "<tool_call>"
	qwenClose = "</tool_call>"
	pythonTag = "<|python_tag|>"
)

// ParseToolCalls reads a model's output as tool calls in format f. It
// returns the text before the calls (trailing white space trimmed) and the
// calls, or ok false when the output is not wholly text followed by
// well-formed calls: then the whole output is the answer, as text. A call
// is a JSON object with a "name" and an object of arguments ("arguments" or
// "parameters"; absent is {}); a name not in names (when names is not nil)
// makes the output text too, since no offered tool could answer it.
//
// Qwen's calls are <tool_call> blocks with nothing but white space between
// and after them. Llama's are the whole output, or what follows
// <|python_tag|>: one object, or several separated by ';'.
func ParseToolCalls(f ToolFormat, text string, names []string) (content string, calls []ToolCall, ok bool) {
	var bodies []string
	switch f {
	case QwenTools:
		i := strings.Index(text, qwenOpen)
		if i < 0 {
			return text, nil, false
		}
		content = text[:i]
		rest := text[i:]
		for {
			rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
			if rest == "" {
				break
			}
			body, after, found := strings.Cut(strings.TrimPrefix(rest, qwenOpen), qwenClose)
			if !strings.HasPrefix(rest, qwenOpen) || !found {
				return text, nil, false
			}
			bodies, rest = append(bodies, body), after
		}
	case LlamaTools:
		rest := text
		if i := strings.Index(text, pythonTag); i >= 0 {
			content, rest = text[:i], text[i+len(pythonTag):]
		} else if !strings.HasPrefix(strings.TrimLeftFunc(text, unicode.IsSpace), "{") {
			return text, nil, false
		}
		for {
			rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
			if rest == "" {
				break
			}
			dec := json.NewDecoder(strings.NewReader(rest))
			var obj json.RawMessage
			if len(bodies) > 0 {
				if rest[0] != ';' {
					return text, nil, false
				}
				if rest = strings.TrimLeftFunc(rest[1:], unicode.IsSpace); rest == "" {
					break
				}
				dec = json.NewDecoder(strings.NewReader(rest))
			}
			if dec.Decode(&obj) != nil {
				return text, nil, false
			}
			bodies, rest = append(bodies, string(obj)), rest[dec.InputOffset():]
		}
	default:
		return text, nil, false
	}
	if len(bodies) == 0 {
		return text, nil, false
	}
	for _, body := range bodies {
		c, ok := decodeCall(body)
		if !ok || (names != nil && !slices.Contains(names, c.Name)) {
			return text, nil, false
		}
		calls = append(calls, c)
	}
	return strings.TrimRightFunc(content, unicode.IsSpace), calls, true
}

// decodeCall reads one call: a JSON object and nothing else.
func decodeCall(body string) (ToolCall, bool) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(body))
	if dec.Decode(&obj) != nil || obj == nil {
		return ToolCall{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return ToolCall{}, false
	}
	var name string
	if json.Unmarshal(obj["name"], &name) != nil || name == "" {
		return ToolCall{}, false
	}
	args, ok := obj["arguments"]
	if !ok {
		args = obj["parameters"]
	}
	if args = bytes.TrimSpace(args); len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if args[0] != '{' {
		return ToolCall{}, false
	}
	var compact bytes.Buffer
	if json.Compact(&compact, args) != nil {
		return ToolCall{}, false
	}
	return ToolCall{Name: name, Arguments: compact.Bytes()}, true
}

// Streamable is how much of text, a model's output so far, is text whatever
// follows: what a stream may send before the output is known. It stops
// before anything that may begin a call in format f (a marker, or a part of
// one at the end; for Llama, output that starts with '{'), and before
// trailing white space, which ParseToolCalls trims from text before calls.
func (f ToolFormat) Streamable(text string) int {
	marker := ""
	switch f {
	case QwenTools:
		marker = qwenOpen
	case LlamaTools:
		if t := strings.TrimLeftFunc(text, unicode.IsSpace); t == "" || t[0] == '{' {
			return 0
		}
		marker = pythonTag
	default:
		return len(text)
	}
	end := len(text)
	if i := strings.Index(text, marker); i >= 0 {
		end = i
	} else {
		for k := min(len(marker)-1, len(text)); k > 0; k-- {
			if strings.HasSuffix(text, marker[:k]) {
				end -= k
				break
			}
		}
	}
	return len(strings.TrimRightFunc(text[:end], unicode.IsSpace))
}
