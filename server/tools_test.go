package server

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/sipack/sipack/chat"
	"github.com/sipack/sipack/format"
)

// toolTemplate compiles a real template of testdata/chat that takes tools
// (qwen3, llama3_2), or src when name is "".
func toolTemplate(t *testing.T, name, src string) *chat.Template {
	t.Helper()
	cfg := &chat.Config{Templates: []format.ChatTemplate{{Name: "default", Template: src}}}
	if name != "" {
		var err error
		if cfg, err = chat.LoadConfig("../testdata/chat/templates/" + name + ".json"); err != nil {
			t.Fatal(err)
		}
	}
	tmpl, err := cfg.Compile("")
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// toolServer serves the tiny model with tmpl. The tiny model writes no tool
// calls, so a generation's text is replaced by *inject when that is not
// empty (requests then ask for max_tokens 0, so that nothing was streamed
// before), through the test hook every result passes.
func toolServer(t *testing.T, tmpl *chat.Template, inject *string) *testServer {
	return startServer(t, Options{Parallel: 1}, func(s *Server) {
		s.e.opt.Template = tmpl
		s.onResult = func(r *Result) {
			if *inject != "" {
				r.Text, r.FinishReason = *inject, "stop"
			}
		}
	})
}

const (
	weatherTool = `{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`
	timeTool    = `{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}}}`
	askWeather  = `"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": [` + weatherTool + `, ` + timeTool + `]`
	// Llama's prompt with both tools is over the tiny model's context.
	askTime = `"messages": [{"role": "user", "content": "Time?"}], "tools": [` + timeTool + `]`
)

// post sends a JSON body and returns the status and body.
func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp.StatusCode, b.String()
}

type wantCall struct{ name, args string }

// TestToolCallsOpenAI: model outputs in Qwen's and Llama's forms come back
// as OpenAI's tool_calls (arguments a JSON string, content null when there
// is no text, finish_reason tool_calls), plainly and streamed; outputs that
// are not wholly calls of offered tools come back as text.
func TestToolCallsOpenAI(t *testing.T) {
	qwenCall := func(name, args string) string {
		return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>"
	}
	cases := []struct {
		name, tmpl, extra, out string
		content                string // when calls come back
		calls                  []wantCall
	}{
		{"qwen one call", "qwen3", "", qwenCall("get_weather", `{"city": "Paris"}`), "", []wantCall{{"get_weather", `{"city":"Paris"}`}}},
		{"qwen text and two calls", "qwen3", "", "Let me check.\n" + qwenCall("get_weather", `{"city": "Paris"}`) + "\n" + qwenCall("get_time", `{"tz": "CET"}`),
			"Let me check.", []wantCall{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{"tz":"CET"}`}}},
		{"qwen malformed", "qwen3", "", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>", "", nil},
		{"qwen unknown tool", "qwen3", "", qwenCall("launch", `{}`), "", nil},
		{"qwen named choice, other call", "qwen3", `, "tool_choice": {"type": "function", "function": {"name": "get_time"}}`, qwenCall("get_weather", `{"city": "Paris"}`), "", nil},
		{"qwen named choice", "qwen3", `, "tool_choice": {"type": "function", "function": {"name": "get_time"}}`, qwenCall("get_time", `{"tz": "UTC"}`), "", []wantCall{{"get_time", `{"tz":"UTC"}`}}},
		{"qwen required, text", "qwen3", `, "tool_choice": "required"`, "It is sunny in Paris.", "", nil},
		{"qwen none", "qwen3", `, "tool_choice": "none"`, qwenCall("get_weather", `{"city": "Paris"}`), "", nil},
		{"llama call", "llama3_2", "", `{"name": "get_time", "parameters": {"tz": "CET"}}`, "", []wantCall{{"get_time", `{"tz":"CET"}`}}},
		{"llama python tag", "llama3_2", `, "tool_choice": "auto"`, `<|python_tag|>{"name": "get_time", "parameters": {"tz": "CET"}}`, "", []wantCall{{"get_time", `{"tz":"CET"}`}}},
		{"llama text", "llama3_2", "", `I would call {"name": "get_time"}`, "", nil},
		{"llama unknown tool", "llama3_2", "", `{"name": "get_weather", "parameters": {"city": "Paris"}}`, "", nil},
	}
	tmpls := map[string]*chat.Template{"qwen3": toolTemplate(t, "qwen3", ""), "llama3_2": toolTemplate(t, "llama3_2", "")}
	var inject string
	servers := map[string]*testServer{}
	for name, tmpl := range tmpls {
		servers[name] = toolServer(t, tmpl, &inject)
	}
	for _, c := range cases {
		inject = c.out
		ts := servers[c.tmpl]
		ask := askWeather
		if c.tmpl == "llama3_2" {
			ask = askTime
		}
		body := `{` + ask + c.extra + `, "max_tokens": 0`
		finish := "stop"
		if c.calls != nil {
			finish = "tool_calls"
		}

		// Plain.
		code, out := post(t, ts.url+"/v1/chat/completions", body+`}`)
		var res struct {
			Choices []struct {
				Message      map[string]json.RawMessage `json:"message"`
				FinishReason string                     `json:"finish_reason"`
			} `json:"choices"`
		}
		if code != 200 || json.Unmarshal([]byte(out), &res) != nil || len(res.Choices) != 1 {
			t.Fatalf("%s: %d %s", c.name, code, out)
		}
		msg := res.Choices[0].Message
		var calls []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Index    *int   `json:"index"`
			Function struct{ Name, Arguments string }
		}
		if raw, ok := msg["tool_calls"]; ok {
			if err := json.Unmarshal(raw, &calls); err != nil {
				t.Fatalf("%s: tool_calls %s: %v", c.name, raw, err)
			}
		}
		wantContent, _ := json.Marshal(c.out)
		if c.calls != nil {
			if wantContent = []byte("null"); c.content != "" {
				wantContent, _ = json.Marshal(c.content)
			}
		}
		if string(msg["content"]) != string(wantContent) || string(msg["role"]) != `"assistant"` || res.Choices[0].FinishReason != finish || len(calls) != len(c.calls) {
			t.Errorf("%s: got %s, want content %s, %d calls, finish %s", c.name, out, wantContent, len(c.calls), finish)
			continue
		}
		for i, w := range c.calls {
			got := calls[i]
			if !strings.HasPrefix(got.ID, "call_") || len(got.ID) < 10 || got.Type != "function" || got.Index != nil ||
				got.Function.Name != w.name || got.Function.Arguments != w.args || (i > 0 && got.ID == calls[0].ID) {
				t.Errorf("%s: call %d %+v, want %+v", c.name, i, got, w)
			}
		}

		// Streamed: the text as content deltas, then the calls as one
		// delta of tool_calls with their indexes. (With tool_choice none
		// the stream is the model's own, which the hook does not change.)
		if strings.Contains(c.extra, `"none"`) {
			continue
		}
		code, out = post(t, ts.url+"/v1/chat/completions", body+`, "stream": true}`)
		var content strings.Builder
		var scalls []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Index    *int   `json:"index"`
			Function struct{ Name, Arguments string }
		}
		sfinish := ""
		for _, ev := range strings.Split(out, "\n\n") {
			data, ok := strings.CutPrefix(strings.TrimSpace(ev), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var chunk struct {
				Choices []struct {
					Delta struct {
						Content   string          `json:"content"`
						ToolCalls json.RawMessage `json:"tool_calls"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &chunk); err != nil || len(chunk.Choices) != 1 {
				t.Fatalf("%s: chunk %s: %v", c.name, data, err)
			}
			ch := chunk.Choices[0]
			content.WriteString(ch.Delta.Content)
			if ch.Delta.ToolCalls != nil {
				if scalls != nil || json.Unmarshal(ch.Delta.ToolCalls, &scalls) != nil {
					t.Fatalf("%s: tool_calls delta %s", c.name, ch.Delta.ToolCalls)
				}
			}
			if ch.FinishReason != nil {
				sfinish = *ch.FinishReason
			}
		}
		want := c.out
		if c.calls != nil {
			want = c.content
		}
		if code != 200 || content.String() != want || sfinish != finish || len(scalls) != len(c.calls) {
			t.Errorf("%s: streamed content %q, %d calls, finish %q; want %q, %d, %q:\n%s", c.name, content.String(), len(scalls), sfinish, want, len(c.calls), finish, out)
			continue
		}
		for i, w := range c.calls {
			got := scalls[i]
			if !strings.HasPrefix(got.ID, "call_") || got.Type != "function" || got.Index == nil || *got.Index != i ||
				got.Function.Name != w.name || got.Function.Arguments != w.args {
				t.Errorf("%s: streamed call %d %+v, want %+v", c.name, i, got, w)
			}
		}
	}

	// OpenAI's own client reads both.
	inject = qwenCall("get_weather", `{"city": "Paris"}`)
	client := servers["qwen3"].client()
	var tool openai.ChatCompletionToolUnionParam
	if err := json.Unmarshal([]byte(weatherTool), &tool); err != nil {
		t.Fatal(err)
	}
	p := openai.ChatCompletionNewParams{Model: "tiny", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools: []openai.ChatCompletionToolUnionParam{tool}, MaxTokens: openai.Int(0)}
	plain, err := client.Chat.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if tc := plain.Choices[0].Message.ToolCalls; len(tc) != 1 || tc[0].Function.Name != "get_weather" || tc[0].Function.Arguments != `{"city":"Paris"}` || plain.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("openai client: %+v", plain.Choices[0])
	}
	stream := client.Chat.Completions.NewStreaming(t.Context(), p)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if tc := acc.Choices[0].Message.ToolCalls; len(tc) != 1 || tc[0].Function.Name != "get_weather" || tc[0].Function.Arguments != `{"city":"Paris"}` || acc.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("openai client, streamed: %+v", acc.Choices[0])
	}
}

// TestToolPrompts: the prompt is the template's rendering of the tools and
// of a history with tool calls (arguments sent as a JSON string reach the
// template as an object) and tool results; tool_choice "none" renders no
// tools. Usage's prompt tokens tell which prompt ran.
func TestToolPrompts(t *testing.T) {
	tmpl := toolTemplate(t, "qwen3", "")
	inject := ""
	ts := toolServer(t, tmpl, &inject)
	tools := []chat.Tool{{Name: "get_weather", Spec: json.RawMessage(weatherTool)}, {Name: "get_time", Spec: json.RawMessage(timeTool)}}
	weather := tools[:1] // two tools and the history are over the tiny model's context
	history := []chat.Message{{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris", "unit": "C", "days": [1, 2, 3]}`)}}},
		{Role: "tool", Content: `{"sky": "clear"}`, ToolCallID: "call_1", Name: "get_weather"}}
	tokens := func(msgs []chat.Message, tools []chat.Tool) int {
		text, err := tmpl.RenderTools(msgs, tools, true)
		if err != nil {
			t.Fatal(err)
		}
		return len(chat.Encode(tinyModel.Tokenizer, text))
	}
	promptTokens := func(path, body string) int {
		code, out := post(t, ts.url+path, body)
		var r struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			}
			PromptEvalCount int `json:"prompt_eval_count"`
		}
		if code != 200 || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("%s %s: %d %s", path, body, code, out)
		}
		return r.Usage.PromptTokens + r.PromptEvalCount
	}
	openaiHistory := `"messages": [{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"unit\":\"C\",\"days\":[1,2,3]}"}}]},
		{"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"sky\": \"clear\"}"}]`
	ollamaHistory := `"messages": [{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "C", "days": [1, 2, 3]}}}]},
		{"role": "tool", "tool_call_id": "call_1", "tool_name": "get_weather", "content": "{\"sky\": \"clear\"}"}]`
	toolsJSON := `"tools": [` + weatherTool + `]`
	for _, c := range []struct {
		name, path, body string
		want             int
	}{
		{"tools", "/v1/chat/completions", `{` + askWeather + `, "max_tokens": 1}`, tokens(history[:1], tools)},
		{"history", "/v1/chat/completions", `{` + openaiHistory + `, ` + toolsJSON + `, "max_tokens": 1}`, tokens(history, weather)},
		{"history, tool_choice none", "/v1/chat/completions", `{` + openaiHistory + `, ` + toolsJSON + `, "tool_choice": "none", "max_tokens": 1}`, tokens(history, nil)},
		{"ollama history", "/api/chat", `{` + ollamaHistory + `, ` + toolsJSON + `, "stream": false, "options": {"num_predict": 1}}`, tokens(history, weather)},
	} {
		if got := promptTokens(c.path, c.body); got != c.want {
			t.Errorf("%s: %d prompt tokens, want %d", c.name, got, c.want)
		}
	}
	// The count tells arguments as an object (Qwen's template writes it
	// with tojson's spaces) from arguments as the string sent.
	asString := append([]chat.Message(nil), history...)
	asString[1].ToolCalls = []chat.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`"{\"city\":\"Paris\",\"unit\":\"C\",\"days\":[1,2,3]}"`)}}
	if tokens(asString, weather) == tokens(history, weather) {
		t.Fatal("string and object arguments render to as many tokens: the test cannot tell them apart")
	}
}

// tinyToolsTemplate takes tools in Qwen's format and ends the prompt as the
// tiny model's template does, after which the model writes text at once.
const tinyToolsTemplate = `{{- bos_token }}{% if tools %}Tools: {% for t in tools %}{{ t.function.name }} {% endfor %}` +
	`(call one as <tool_call>{"name": ..., "arguments": ...}</tool_call>)
{% endif %}{% for m in messages %}{{ m.role | capitalize }}: {{ m.content | trim }}
{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}`

// TestToolStreamLikePlain: with tools, a stream of plain text (the tiny
// model's own) sends what the plain answer says, held back text included.
func TestToolStreamLikePlain(t *testing.T) {
	inject := ""
	ts := toolServer(t, toolTemplate(t, "", tinyToolsTemplate), &inject)
	body := `{` + askWeather + `, "temperature": 0, "max_tokens": 40`
	code, out := post(t, ts.url+"/v1/chat/completions", body+`}`)
	var plain struct {
		Choices []struct {
			Message struct {
				Content   string          `json:"content"`
				ToolCalls json.RawMessage `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if code != 200 || json.Unmarshal([]byte(out), &plain) != nil || plain.Choices[0].Message.ToolCalls != nil {
		t.Fatalf("plain: %d %s", code, out)
	}
	want := plain.Choices[0].Message.Content
	code, out = post(t, ts.url+"/v1/chat/completions", body+`, "stream": true}`)
	var b strings.Builder
	chunks := 0
	for _, ev := range strings.Split(out, "\n\n") {
		data, ok := strings.CutPrefix(strings.TrimSpace(ev), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   string          `json:"content"`
					ToolCalls json.RawMessage `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &chunk) != nil || len(chunk.Choices) != 1 || chunk.Choices[0].Delta.ToolCalls != nil {
			t.Fatalf("chunk %s", data)
		}
		b.WriteString(chunk.Choices[0].Delta.Content)
		chunks++
	}
	if code != 200 || len(want) < 20 || b.String() != want || chunks < 10 {
		t.Fatalf("streamed %q in %d chunks, plain %q", b.String(), chunks, want)
	}

	// ollama's stream too.
	body = `{` + askWeather + `, "options": {"temperature": 0, "num_predict": 40}`
	code, out = post(t, ts.url+"/api/chat", body+`, "stream": false}`)
	var f struct {
		Message struct {
			Content   string          `json:"content"`
			ToolCalls json.RawMessage `json:"tool_calls"`
		} `json:"message"`
	}
	if code != 200 || json.Unmarshal([]byte(out), &f) != nil || f.Message.ToolCalls != nil {
		t.Fatalf("ollama plain: %d %s", code, out)
	}
	code, out = post(t, ts.url+"/api/chat", body+`}`)
	b.Reset()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		var f struct {
			Message struct {
				Content   string          `json:"content"`
				ToolCalls json.RawMessage `json:"tool_calls"`
			} `json:"message"`
		}
		if json.Unmarshal([]byte(l), &f) != nil || f.Message.ToolCalls != nil {
			t.Fatalf("ollama line %s", l)
		}
		b.WriteString(f.Message.Content)
	}
	if code != 200 || len(f.Message.Content) < 20 || b.String() != f.Message.Content || len(lines) < 10 {
		t.Fatalf("ollama streamed %q in %d lines, plain %q", b.String(), len(lines), f.Message.Content)
	}
}

// TestToolCallsOllama: /api/chat gives calls as ollama does (arguments an
// object), plainly and streamed (in the last object).
func TestToolCallsOllama(t *testing.T) {
	inject := "Checking.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>"
	ts := toolServer(t, toolTemplate(t, "qwen3", ""), &inject)
	body := `{` + askWeather + `, "options": {"num_predict": 0}`
	type message struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []struct {
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	check := func(what string, m message, content string) {
		if m.Role != "assistant" || m.Content != content || len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != "get_time" ||
			string(m.ToolCalls[0].Function.Arguments) != `{"tz":"CET"}` {
			t.Errorf("%s: %+v", what, m)
		}
	}
	code, out := post(t, ts.url+"/api/chat", body+`, "stream": false}`)
	var f struct {
		Message    message `json:"message"`
		Done       bool    `json:"done"`
		DoneReason string  `json:"done_reason"`
	}
	if code != 200 || json.Unmarshal([]byte(out), &f) != nil || !f.Done || f.DoneReason != "stop" {
		t.Fatalf("plain: %d %s", code, out)
	}
	check("plain", f.Message, "Checking.")

	code, out = post(t, ts.url+"/api/chat", body+`}`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var text strings.Builder
	for i, l := range lines {
		var f struct {
			Message message `json:"message"`
			Done    bool    `json:"done"`
		}
		if err := json.Unmarshal([]byte(l), &f); err != nil || f.Done != (i == len(lines)-1) {
			t.Fatalf("line %d %q: %v", i, l, err)
		}
		text.WriteString(f.Message.Content)
		if i == len(lines)-1 {
			check("streamed", f.Message, text.String())
		} else if f.Message.ToolCalls != nil {
			t.Errorf("line %d has calls: %s", i, l)
		}
	}
	if code != 200 || text.String() != "Checking." {
		t.Fatalf("streamed: %d %s", code, out)
	}
}

// TestToolRequestErrors: bad tools, tool_choice and tool messages are
// refused with the field named (OpenAI's param; ollama's message), and
// tools for a template that does not take them are refused.
func TestToolRequestErrors(t *testing.T) {
	inject := ""
	qwen := toolServer(t, toolTemplate(t, "qwen3", ""), &inject)
	tiny := toolServer(t, tinyTmpl, &inject)
	odd := toolServer(t, toolTemplate(t, "", "{% for t in tools %}{{ t | tojson }}{% endfor %}{% for m in messages %}{{ m.content }}{% endfor %}"), &inject)
	user := `"messages": [{"role": "user", "content": "hi"}]`
	tool := func(fn string) string { return `"tools": [{"type": "function", "function": ` + fn + `}]` }
	deep := `"` + strings.Repeat(`{\"a\": `, 40) + "1" + strings.Repeat("}", 40) + `"`
	withCall := func(call string) string {
		return `"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [` + call + `]}]`
	}
	for _, c := range []struct {
		srv         *testServer
		body, param string
		msg         string // a part of the message
	}{
		{tiny, user + `, "tools": [` + weatherTool + `]`, "tools", "this model's chat template does not take tools"},
		{odd, user + `, "tools": [` + weatherTool + `]`, "tools", "format this server does not parse"},
		{qwen, user + `, "tools": "get_weather"`, "tools", "tools must be an array of"},
		{qwen, user + `, "tools": [1]`, "tools", "tools must be an array of"},
		{qwen, user + `, "tools": [{"function": {"name": "f"}}]`, "tools[0].type", `tools[0].type is required: "function"`},
		{qwen, user + `, "tools": [{"type": "retrieval", "function": {"name": "f"}}]`, "tools[0].type", `must be "function"`},
		{qwen, user + `, "tools": [{"type": "function"}]`, "tools[0].function", "tools[0].function is required"},
		{qwen, user + `, "tools": [{"type": "function", "function": "f"}]`, "tools[0].function", "tools[0].function must be an object, got a string"},
		{qwen, user + `, ` + tool(`{"parameters": {}}`), "tools[0].function.name", "tools[0].function.name is required"},
		{qwen, user + `, ` + tool(`{"name": 5}`), "tools[0].function.name", "tools[0].function.name must be a string, got 5"},
		{qwen, user + `, ` + tool(`{"name": "get weather!"}`), "tools[0].function.name", "must be 1-64 letters"},
		{qwen, user + `, "tools": [` + weatherTool + `, ` + weatherTool + `]`, "tools[1].function.name", `two tools are named "get_weather"`},
		{qwen, user + `, ` + tool(`{"name": "f", "parameters": "x"}`), "tools[0].function.parameters", "tools[0].function.parameters must be an object (a JSON schema), got a string"},
		{qwen, user + `, ` + tool(`{"name": "f", "parameters": [1]}`), "tools[0].function.parameters", "must be an object"},
		{qwen, user + `, ` + tool(`{"name": "f", "description": 5}`), "tools[0].function.description", "must be a string, got 5"},
		{qwen, user + `, ` + tool(`{"name": "f"}`) + `, "tool_choice": "sometimes"`, "tool_choice", `tool_choice must be "none", "auto", "required" or`},
		{qwen, user + `, ` + tool(`{"name": "f"}`) + `, "tool_choice": 3`, "tool_choice", "tool_choice must be"},
		{qwen, user + `, ` + tool(`{"name": "f"}`) + `, "tool_choice": {"type": "function"}`, "tool_choice", "tool_choice must be"},
		{qwen, user + `, ` + tool(`{"name": "f"}`) + `, "tool_choice": {"type": "function", "function": {"name": "g"}}`, "tool_choice.function.name", `"g" is not one of the request's tools`},
		{qwen, user + `, "tool_choice": "required"`, "tool_choice", `tool_choice "required" needs tools`},
		{qwen, `"messages": [{"role": "user", "content": "hi", "tool_calls": [{"function": {"name": "f"}}]}]`, "messages[0].tool_calls", "only assistant messages carry tool calls"},
		{qwen, `"messages": [{"role": "assistant", "tool_calls": "f"}]`, "messages[0].tool_calls", "messages[0].tool_calls must be an array of"},
		{qwen, withCall(`"f"`), "messages[1].tool_calls[0]", "must be an object"},
		{qwen, withCall(`{"type": "function"}`), "messages[1].tool_calls[0].function", "messages[1].tool_calls[0].function is required"},
		{qwen, withCall(`{"function": {"arguments": "{}"}}`), "messages[1].tool_calls[0].function.name", "function.name is required"},
		{qwen, withCall(`{"function": {"name": "f", "arguments": 5}}`), "messages[1].tool_calls[0].function.arguments", "must be a JSON string or an object, got 5"},
		{qwen, withCall(`{"function": {"name": "f", "arguments": ` + deep + `}}`), "messages[1].tool_calls[0].function.arguments", "nested"},
		{qwen, withCall(`{"type": "code", "function": {"name": "f"}}`), "messages[1].tool_calls[0].type", `must be "function"`},
		{qwen, withCall(`{"id": 5, "function": {"name": "f"}}`), "messages[1].tool_calls[0].id", "must be a string, got 5"},
		{qwen, `"messages": [{"role": "tool", "tool_call_id": 5, "content": "x"}]`, "messages[0].tool_call_id", "messages[0].tool_call_id must be a string, got 5"},
	} {
		code, out := post(t, c.srv.url+"/v1/chat/completions", `{`+c.body+`, "max_tokens": 1}`)
		var e apiError
		if code != 400 || json.Unmarshal([]byte(out), &e) != nil || errParam(e) != c.param || !strings.Contains(e.Error.Message, c.msg) || e.Error.Type != "invalid_request_error" {
			t.Errorf("%s:\n got %d %s\nwant 400, param %q, message with %q", c.body, code, out, c.param, c.msg)
		}
		// /api/chat checks tools and messages alike (it has no tool_choice).
		if strings.Contains(c.body, "tool_choice") {
			continue
		}
		code, out = post(t, c.srv.url+"/api/chat", `{`+c.body+`, "stream": false}`)
		var oe map[string]string
		if code != 400 || json.Unmarshal([]byte(out), &oe) != nil || !strings.Contains(oe["error"], c.msg) || len(oe) != 1 {
			t.Errorf("ollama %s:\n got %d %s\nwant 400 with %q", c.body, code, out, c.msg)
		}
	}
	// Without tools in the prompt a template need not take them.
	for _, body := range []string{user + `, "tools": [` + weatherTool + `], "tool_choice": "none"`, user + `, "tools": []`, user + `, "tool_choice": "auto"`} {
		if code, out := post(t, tiny.url+"/v1/chat/completions", `{`+body+`, "max_tokens": 1}`); code != 200 {
			t.Errorf("%s: %d %s", body, code, out)
		}
	}
}

// TestToolStreamHoldsCalls: fed an output in pieces as generation gives it,
// the OpenAI and ollama streams send the text before the call as it comes
// and never a byte of the call, which comes whole at the end.
func TestToolStreamHoldsCalls(t *testing.T) {
	tu := &toolUse{format: chat.QwenTools, names: []string{"get_weather"}}
	out := "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	for _, size := range []int{1, 2, 3, 7} {
		var pieces []string
		for i := 0; i < len(out); i += size {
			pieces = append(pieces, out[i:min(i+size, len(out))])
		}
		var sent strings.Builder
		ts := tu.stream()
		send := ts.wrap(func(s string) { sent.WriteString(s) })
		for i, p := range pieces {
			send(p)
			if i == 20/size && sent.Len() == 0 {
				t.Fatalf("size %d: nothing sent after %q", size, out[:(i+1)*size])
			}
		}
		var delta map[string]any
		finish := ts.finish(out, "stop", func(d map[string]any) { delta = d })
		calls, _ := delta["tool_calls"].([]any)
		if sent.String() != "Let me check." || finish != "tool_calls" || len(calls) != 1 {
			t.Errorf("size %d: sent %q, finish %q, delta %v", size, sent.String(), finish, delta)
		}

		frame := tu.ollamaChatFrame("m")
		var text strings.Builder
		for _, p := range pieces {
			if f := frame(p, nil); f != nil {
				text.WriteString(f["message"].(map[string]any)["content"].(string))
			}
		}
		last := frame("", &Result{Text: out})["message"].(map[string]any)
		text.WriteString(last["content"].(string))
		if text.String() != "Let me check." || len(last["tool_calls"].([]any)) != 1 {
			t.Errorf("size %d: ollama sent %q, last %v", size, text.String(), last)
		}
	}
}
