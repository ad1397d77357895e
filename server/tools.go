package server

// tools.go: tool calling on /v1/chat/completions (tools, tool_choice) and
// /api/chat (tools). Tools are rendered by the model's chat template and the
// output is read back into calls in the format the template teaches
// (chat.ParseToolCalls); output that is not wholly well-formed calls of
// offered tools is answered as text, never as an invented call. A template
// that never reads tools is refused, as is one whose call format is not
// parsed here: the client would get calls back as text. tool_choice "none"
// neither renders the tools nor parses calls (the model is not told of
// them, as OpenAI's none promises); "required" and a named function cannot
// force a call (no constrained decoding), so they parse as "auto" does, the
// named one accepting only calls of that function.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"

	"github.com/sipack/sipack/chat"
)

// toolUse is how a chat request uses tools; nil: it does not (no tools,
// or tool_choice "none").
type toolUse struct {
	tools  []chat.Tool
	format chat.ToolFormat
	names  []string // the functions a call may name
}

// toolName is OpenAI's rule for function names, with '.' (which MCP tool
// names use) allowed too: names are echoed into prompts and parsed back.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// parseTools reads "tools": an array of {"type": "function", "function":
// {"name", "description", "parameters"}} objects. Absent, null or empty is
// none.
func parseTools(raw json.RawMessage) ([]chat.Tool, error) {
	const what = `an array of {"type": "function", "function": {"name": ..., "parameters": {...}}} objects`
	if isNull(raw) {
		return nil, nil
	}
	var items []json.RawMessage
	if first(raw) != '[' || json.Unmarshal(raw, &items) != nil ||
		slices.ContainsFunc(items, func(it json.RawMessage) bool { return first(it) != '{' }) {
		return nil, mustBe("tools", what, raw)
	}
	tools := make([]chat.Tool, 0, len(items))
	for i, it := range items {
		name := fmt.Sprintf("tools[%d]", i)
		var t map[string]json.RawMessage
		if json.Unmarshal(it, &t) != nil {
			return nil, mustBe(name, "an object", it)
		}
		var typ string
		if first(t["type"]) != '"' || json.Unmarshal(t["type"], &typ) != nil || typ != "function" {
			if isNull(t["type"]) {
				return nil, fieldErr(name+".type", `%s.type is required: "function"`, name)
			}
			return nil, fieldErr(name+".type", `%s.type must be "function" (the only kind of tool), got %s`, name, clip(string(t["type"]), 40))
		}
		fn := t["function"]
		if isNull(fn) {
			return nil, fieldErr(name+".function", `%s.function is required: {"name": ..., "parameters": {...}}`, name)
		}
		var f map[string]json.RawMessage
		if first(fn) != '{' || json.Unmarshal(fn, &f) != nil {
			return nil, mustBe(name+".function", "an object", fn)
		}
		var fname string
		if first(f["name"]) != '"' || json.Unmarshal(f["name"], &fname) != nil {
			if isNull(f["name"]) {
				return nil, fieldErr(name+".function.name", "%s.function.name is required: a string", name)
			}
			return nil, mustBe(name+".function.name", "a string", f["name"])
		}
		if !toolName.MatchString(fname) {
			return nil, fieldErr(name+".function.name", "%s.function.name must be 1-64 letters, digits, '_', '-' or '.', got %q", name, clip(fname, 80))
		}
		if slices.ContainsFunc(tools, func(t chat.Tool) bool { return t.Name == fname }) {
			return nil, fieldErr(name+".function.name", "%s.function.name: two tools are named %q", name, fname)
		}
		if d := f["description"]; !isNull(d) && first(d) != '"' {
			return nil, mustBe(name+".function.description", "a string", d)
		}
		if p := f["parameters"]; !isNull(p) && first(p) != '{' {
			return nil, mustBe(name+".function.parameters", "an object (a JSON schema)", p)
		}
		tools = append(tools, chat.Tool{Name: fname, Spec: bytes.TrimSpace(it)})
	}
	return tools, nil
}

// toolUseOf reads a request's tools and tool_choice (absent: "auto") for
// the template tmpl.
func toolUseOf(rawTools, rawChoice json.RawMessage, tmpl *chat.Template) (*toolUse, error) {
	tools, err := parseTools(rawTools)
	if err != nil {
		return nil, err
	}
	choice, named := "auto", ""
	const what = `"none", "auto", "required" or {"type": "function", "function": {"name": ...}}`
	switch {
	case isNull(rawChoice):
	case first(rawChoice) == '"':
		if json.Unmarshal(rawChoice, &choice) != nil || (choice != "none" && choice != "auto" && choice != "required") {
			return nil, fieldErr("tool_choice", "tool_choice must be %s, got %s", what, clip(string(rawChoice), 40))
		}
	case first(rawChoice) == '{':
		var c struct {
			Type     string `json:"type"`
			Function struct {
				Name *string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(rawChoice, &c) != nil || c.Type != "function" || c.Function.Name == nil {
			return nil, mustBe("tool_choice", what, rawChoice)
		}
		choice, named = "function", *c.Function.Name
		if !slices.ContainsFunc(tools, func(t chat.Tool) bool { return t.Name == named }) {
			return nil, fieldErr("tool_choice.function.name", "tool_choice.function.name %q is not one of the request's tools", clip(named, 80))
		}
	default:
		return nil, mustBe("tool_choice", what, rawChoice)
	}
	if len(tools) == 0 {
		if choice == "required" {
			return nil, fieldErr("tool_choice", `tool_choice "required" needs tools`)
		}
		return nil, nil
	}
	if choice == "none" {
		return nil, nil
	}
	switch tmpl.ToolFormat() {
	case chat.NoTools:
		return nil, fieldErr("tools", "this model's chat template does not take tools (it never reads the tools variable)")
	case chat.UnknownTools:
		return nil, fieldErr("tools", "this model's chat template takes tools, but its tool calls are in a format this server does not parse (it parses Qwen's <tool_call> and Llama 3.1's JSON calls)")
	}
	tu := &toolUse{tools: tools, format: tmpl.ToolFormat()}
	for _, t := range tools {
		if named == "" || t.Name == named {
			tu.names = append(tu.names, t.Name)
		}
	}
	return tu, nil
}

// list is the tools to render (nil: none).
func (tu *toolUse) list() []chat.Tool {
	if tu == nil {
		return nil
	}
	return tu.tools
}

// parse reads the output as calls; ok false: it is text.
func (tu *toolUse) parse(text string) (content string, calls []chat.ToolCall, ok bool) {
	if tu == nil {
		return text, nil, false
	}
	return chat.ParseToolCalls(tu.format, text, tu.names)
}

// parseToolFields reads a message's tool fields into msg: an assistant's
// tool_calls (arguments a JSON string, as OpenAI sends them, or an object,
// as ollama does), a tool message's tool_call_id, and name (ollama:
// tool_name). Arguments that are a JSON object in a string reach the
// template as that object, as transformers documents them and Llama's
// templates need (they print arguments with tojson).
func parseToolFields(name string, m map[string]json.RawMessage, msg *chat.Message) error {
	for _, f := range []struct {
		key string
		dst *string
	}{{"tool_call_id", &msg.ToolCallID}, {"name", &msg.Name}, {"tool_name", &msg.Name}} {
		v := m[f.key]
		if isNull(v) || *f.dst != "" {
			continue
		}
		if first(v) != '"' || json.Unmarshal(v, f.dst) != nil {
			return mustBe(name+"."+f.key, "a string", v)
		}
	}
	raw := m["tool_calls"]
	if isNull(raw) {
		return nil
	}
	var items []json.RawMessage
	if first(raw) != '[' || json.Unmarshal(raw, &items) != nil {
		return mustBe(name+".tool_calls", `an array of {"type": "function", "function": {"name": ..., "arguments": ...}} objects`, raw)
	}
	if len(items) > 0 && msg.Role != "assistant" {
		return fieldErr(name+".tool_calls", "%s.tool_calls: only assistant messages carry tool calls, this one is %q", name, msg.Role)
	}
	for j, it := range items {
		cname := fmt.Sprintf("%s.tool_calls[%d]", name, j)
		var c map[string]json.RawMessage
		if first(it) != '{' || json.Unmarshal(it, &c) != nil {
			return mustBe(cname, `an object {"type": "function", "function": {...}}`, it)
		}
		var call chat.ToolCall
		if id := c["id"]; !isNull(id) && (first(id) != '"' || json.Unmarshal(id, &call.ID) != nil) {
			return mustBe(cname+".id", "a string", id)
		}
		if typ := c["type"]; !isNull(typ) && string(bytes.TrimSpace(typ)) != `"function"` {
			return fieldErr(cname+".type", `%s.type must be "function", got %s`, cname, clip(string(typ), 40))
		}
		var f map[string]json.RawMessage
		if fn := c["function"]; first(fn) != '{' || json.Unmarshal(fn, &f) != nil {
			if isNull(fn) {
				return fieldErr(cname+".function", `%s.function is required: {"name": ..., "arguments": ...}`, cname)
			}
			return mustBe(cname+".function", "an object", fn)
		}
		if first(f["name"]) != '"' || json.Unmarshal(f["name"], &call.Name) != nil || call.Name == "" {
			return fieldErr(cname+".function.name", "%s.function.name is required: a non-empty string", cname)
		}
		args := bytes.TrimSpace(f["arguments"])
		switch first(args) {
		case 0, 'n': // absent or null: no arguments
			args = []byte("{}")
		case '"':
			var s string
			_ = json.Unmarshal(args, &s) // a JSON string: it was decoded as part of the body
			if inner := bytes.TrimSpace([]byte(s)); first(inner) == '{' && json.Valid(inner) {
				if d := jsonDepth(inner); d > maxDepth {
					return fieldErr(cname+".function.arguments", "%s.function.arguments: JSON nested %d deep, at most %d", cname, d, maxDepth)
				}
				args = inner
			}
		case '{':
		default:
			return mustBe(cname+".function.arguments", "a JSON string or an object", args)
		}
		call.Arguments = slices.Clone(args)
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	return nil
}

// callID makes a tool call's id: random, so that ids of calls made by
// different requests of one conversation differ, across restarts too.
func callID() string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := []byte("call_" + strings.Repeat("x", 24))
	for i := 5; i < len(b); i++ {
		b[i] = alnum[rand.IntN(len(alnum))]
	}
	return string(b)
}

// openaiCalls is OpenAI's tool_calls: arguments as a JSON string; in a
// stream each call has its index.
func openaiCalls(calls []chat.ToolCall, stream bool) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		call := map[string]any{"id": callID(), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(c.Arguments)}}
		if stream {
			call["index"] = i
		}
		out[i] = call
	}
	return out
}

// toolsFinish is the finish reason of an answer that made calls: a call
// cut by the token limit is no call, but complete calls before the limit
// keep "length", as llama-server reports them.
func toolsFinish(finish string) string {
	if finish == "length" {
		return finish
	}
	return "tool_calls"
}

// message is a chat completion's message and finish reason.
func (tu *toolUse) message(text, finish string) (map[string]any, string) {
	content, calls, ok := tu.parse(text)
	if !ok {
		return map[string]any{"role": "assistant", "content": text}, finish
	}
	msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": openaiCalls(calls, false)}
	if content != "" {
		msg["content"] = content
	}
	return msg, toolsFinish(finish)
}

// toolStream holds back streamed text that may begin a tool call until the
// output is known (chat.ToolFormat.Streamable); plain text streams as it
// comes.
type toolStream struct {
	tu   *toolUse
	got  strings.Builder
	sent int
	send func(string) // set by wrap
}

// stream starts a stream's holding back (nil, which passes text through,
// without tools).
func (tu *toolUse) stream() *toolStream {
	if tu == nil {
		return nil
	}
	return &toolStream{tu: tu}
}

// push adds generated text and returns what may be sent now.
func (ts *toolStream) push(t string) string {
	if ts == nil {
		return t
	}
	ts.got.WriteString(t)
	text := ts.got.String()
	n := ts.tu.format.Streamable(text)
	if n <= ts.sent {
		return ""
	}
	out := text[ts.sent:n]
	ts.sent = n
	return out
}

// end reads the whole output: the content not yet sent, and the calls (nil:
// the output is text).
func (ts *toolStream) end(text string) (string, []chat.ToolCall) {
	content, calls, ok := ts.tu.parse(text)
	if !ok {
		content, calls = text, nil
	}
	if ts.sent > len(content) { // cannot be: what was sent is a prefix of content
		return "", calls
	}
	return content[ts.sent:], calls
}

// wrap makes a stream's send hold back text.
func (ts *toolStream) wrap(send func(string)) func(string) {
	if ts == nil {
		return send
	}
	ts.send = send
	return func(t string) {
		if t = ts.push(t); t != "" {
			send(t)
		}
	}
}

// finish sends, when generation has ended, the content held back (by send)
// and the calls (a delta of tool_calls), and returns the finish reason.
func (ts *toolStream) finish(text, finish string, delta func(map[string]any)) string {
	if ts == nil {
		return finish
	}
	rest, calls := ts.end(text)
	if rest != "" {
		ts.send(rest)
	}
	if len(calls) == 0 {
		return finish
	}
	delta(map[string]any{"tool_calls": openaiCalls(calls, true)})
	return toolsFinish(finish)
}

// ollamaCalls is ollama's tool_calls: arguments as an object.
func ollamaCalls(calls []chat.ToolCall) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		out[i] = map[string]any{"function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
	}
	return out
}

// ollamaChatFrame makes /api/chat's frames: the assistant's text (nil: none
// to send yet, held back where it may begin a tool call), and in the last
// the rest of it and the calls.
func (tu *toolUse) ollamaChatFrame(model string) func(string, *Result) map[string]any {
	ts := tu.stream()
	return func(text string, res *Result) map[string]any {
		msg := map[string]any{"role": "assistant", "content": text}
		switch {
		case tu == nil:
		case res == nil:
			if text = ts.push(text); text == "" {
				return nil
			}
			msg["content"] = text
		default:
			rest, calls := ts.end(res.Text)
			msg["content"] = rest
			if len(calls) > 0 {
				msg["tool_calls"] = ollamaCalls(calls)
			}
		}
		return map[string]any{"model": model, "message": msg}
	}
}
