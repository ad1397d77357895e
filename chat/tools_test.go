package chat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sipack/sipack/format"
)

type parseCase struct {
	name    string
	f       ToolFormat
	text    string
	content string   // when calls are parsed
	calls   []string // name + " " + arguments; nil: the output is text
}

var weatherCall = `{"name": "get_weather", "arguments": {"city": "Paris"}}`

var parseCases = []parseCase{
	{"qwen single", QwenTools, "<tool_call>\n" + weatherCall + "\n</tool_call>", "", []string{`get_weather {"city":"Paris"}`}},
	{"qwen several after text", QwenTools, "Let me check.\n\n<tool_call>\n" + weatherCall + "\n</tool_call>\n<tool_call>\n" +
		`{"name": "get_time", "arguments": {"timezone": "Europe/Paris", "precision": 2}}` + "\n</tool_call>\n",
		"Let me check.", []string{`get_weather {"city":"Paris"}`, `get_time {"timezone":"Europe/Paris","precision":2}`}},
	{"qwen after thinking", QwenTools, "<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n" + weatherCall + "\n</tool_call>",
		"<think>\nThe user wants weather.\n</think>", []string{`get_weather {"city":"Paris"}`}},
	{"qwen arguments keep order and text", QwenTools, "<tool_call>\n" + `{"name": "get_time", "arguments": {"z": "été <b> & ü", "a": [1, 2.5, null]}}` + "\n</tool_call>",
		"", []string{`get_time {"z":"été <b> & ü","a":[1,2.5,null]}`}},
	{"qwen no arguments", QwenTools, "<tool_call>\n{\"name\": \"ping\"}\n</tool_call>", "", []string{`ping {}`}},
	{"qwen plain text", QwenTools, "The weather is fine.", "", nil},
	{"qwen malformed json", QwenTools, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>", "", nil},
	{"qwen unclosed", QwenTools, "<tool_call>\n" + weatherCall, "", nil},
	{"qwen text after", QwenTools, "<tool_call>\n" + weatherCall + "\n</tool_call>\nDone.", "", nil},
	{"qwen text between", QwenTools, "<tool_call>\n" + weatherCall + "\n</tool_call> and <tool_call>\n" + weatherCall + "\n</tool_call>", "", nil},
	{"qwen unknown tool", QwenTools, "<tool_call>\n{\"name\": \"launch\", \"arguments\": {}}\n</tool_call>", "", nil},
	{"qwen one of two unknown", QwenTools, "<tool_call>\n" + weatherCall + "\n</tool_call>\n<tool_call>\n{\"name\": \"launch\", \"arguments\": {}}\n</tool_call>", "", nil},
	{"qwen arguments not an object", QwenTools, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"Paris\"}\n</tool_call>", "", nil},
	{"qwen no name", QwenTools, "<tool_call>\n{\"arguments\": {}}\n</tool_call>", "", nil},
	{"qwen name not a string", QwenTools, "<tool_call>\n{\"name\": 7, \"arguments\": {}}\n</tool_call>", "", nil},
	{"qwen two objects in a block", QwenTools, "<tool_call>\n" + weatherCall + weatherCall + "\n</tool_call>", "", nil},
	{"qwen array", QwenTools, "<tool_call>\n[" + weatherCall + "]\n</tool_call>", "", nil},

	{"llama bare", LlamaTools, `{"name": "get_weather", "parameters": {"city": "Paris"}}`, "", []string{`get_weather {"city":"Paris"}`}},
	{"llama white space around", LlamaTools, "\n  {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n", "", []string{`get_weather {"city":"Paris"}`}},
	{"llama python tag", LlamaTools, `<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}`, "", []string{`get_weather {"city":"Paris"}`}},
	{"llama text then tag", LlamaTools, "I will look it up. <|python_tag|>" + weatherCall, "I will look it up.", []string{`get_weather {"city":"Paris"}`}},
	{"llama arguments key", LlamaTools, weatherCall, "", []string{`get_weather {"city":"Paris"}`}},
	{"llama several", LlamaTools, `{"name": "get_weather", "parameters": {"city": "Rome"}}; {"name": "get_time", "parameters": {"timezone": "Europe/Rome"}};`,
		"", []string{`get_weather {"city":"Rome"}`, `get_time {"timezone":"Europe/Rome"}`}},
	{"llama text before without tag", LlamaTools, "Sure: " + weatherCall, "", nil},
	{"llama text after", LlamaTools, weatherCall + " Hope this helps.", "", nil},
	{"llama malformed", LlamaTools, `{"name": "get_weather", "parameters": {"city": "Paris"}`, "", nil},
	{"llama unknown tool", LlamaTools, `{"name": "launch", "parameters": {}}`, "", nil},
	{"llama not a call", LlamaTools, `{"answer": 42}`, "", nil},
	{"llama builtin tool syntax", LlamaTools, `<|python_tag|>brave_search.call(query="paris weather")`, "", nil},
	{"llama plain text", LlamaTools, "It is sunny.", "", nil},
	{"llama empty", LlamaTools, "", "", nil},

	{"format unknown", UnknownTools, "<tool_call>\n" + weatherCall + "\n</tool_call>", "", nil},
	{"no tools", NoTools, weatherCall, "", nil},
}

var offered = []string{"get_weather", "get_time", "ping"}

// TestParseToolCalls: model outputs → calls, or the whole output as text.
func TestParseToolCalls(t *testing.T) {
	for _, c := range parseCases {
		content, calls, ok := ParseToolCalls(c.f, c.text, offered)
		if c.calls == nil {
			if ok || calls != nil || content != c.text {
				t.Errorf("%s: got %q %v %v, want the output as text", c.name, content, calls, ok)
			}
			continue
		}
		var got []string
		for _, call := range calls {
			got = append(got, call.Name+" "+string(call.Arguments))
		}
		if !ok || content != c.content || strings.Join(got, "\n") != strings.Join(c.calls, "\n") {
			t.Errorf("%s: got %q %q %v, want %q %q", c.name, content, got, ok, c.content, c.calls)
		}
	}
	// Without a list of names any name is a call.
	if _, calls, ok := ParseToolCalls(LlamaTools, `{"name": "launch", "parameters": {}}`, nil); !ok || calls[0].Name != "launch" {
		t.Errorf("names nil: %v %v", calls, ok)
	}
}

// TestStreamable: what a stream sends while the output grows is always a
// prefix of the content the whole output finally gives (the text before the
// calls, or all of it), and never shrinks.
func TestStreamable(t *testing.T) {
	for _, c := range parseCases {
		final := c.text
		if content, _, ok := ParseToolCalls(c.f, c.text, offered); ok {
			final = content
		}
		last := 0
		for k := 0; k <= len(c.text); k++ {
			if k < len(c.text) && !utf8.RuneStart(c.text[k]) {
				continue
			}
			n := c.f.Streamable(c.text[:k])
			if n < last || n > k || !strings.HasPrefix(final, c.text[:n]) {
				t.Errorf("%s: Streamable(%q) = %d after %d; the final content is %q", c.name, c.text[:k], n, last, final)
				break
			}
			last = n
		}
	}
	// Plain text streams as it comes, but for trailing white space and what
	// may begin a call.
	for _, c := range []struct {
		f    ToolFormat
		text string
		want int
	}{
		{QwenTools, "Hello there", 11}, {QwenTools, "Hello there\n", 11}, {QwenTools, "Hello <tool_", 5},
		{QwenTools, "Hi <tool_call>\n{", 2}, {LlamaTools, "Hello", 5}, {LlamaTools, " {\"na", 0},
		{LlamaTools, "<|python", 0}, {LlamaTools, "Hi <|python_tag|>{", 2}, {NoTools, "{\"name\"", 7},
	} {
		if got := c.f.Streamable(c.text); got != c.want {
			t.Errorf("%v.Streamable(%q) = %d, want %d", c.f, c.text, got, c.want)
		}
	}
}

// TestToolFormat: the format comes from what the template reads and writes.
func TestToolFormat(t *testing.T) {
	ts := goldenTemplates(t)
	for name, want := range map[string]ToolFormat{"qwen3": QwenTools, "llama3_2": LlamaTools, "llama3": NoTools,
		"llama3_1": NoTools, "gemma3": NoTools, "tiny": NoTools} {
		if got := ts[name].ToolFormat(); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	for src, want := range map[string]ToolFormat{
		"{% for t in tools %}{{ t | tojson }}{% endfor %}":                      UnknownTools,
		"{%- if tools %}<tool_call>{% endif %}":                                 QwenTools,
		"{{ '<tools>' }} tools {{ 'tools' }}{{ messages[0].content }}":          NoTools,
		"{% if custom_tools is defined %}{{ x.tools }}{% endif %}":              NoTools,
		"{% if tools is not none %}{\"name\": f, \"parameters\": p}{% endif %}": LlamaTools,
	} {
		cfg := &Config{Templates: []format.ChatTemplate{{Name: "default", Template: src}}}
		tmpl, err := cfg.Compile("")
		if err != nil {
			t.Fatal(err)
		}
		if got := tmpl.ToolFormat(); got != want {
			t.Errorf("%q: %v, want %v", src, got, want)
		}
	}
}

// TestRenderToolsData: tools are defined only when given, keys of a message
// only when set, and arguments are objects with their keys' order.
func TestRenderToolsData(t *testing.T) {
	cfg := &Config{Templates: []format.ChatTemplate{{Name: "default", Template: "{{ tools is defined }}|{{ tools | length if tools is defined }}|" +
		"{% for m in messages %}{{ 'tool_calls' in m }},{{ 'tool_call_id' in m }},{{ 'name' in m }};{% endfor %}|" +
		"{{ messages[1].tool_calls[0].function.arguments | tojson }}|{{ messages[1].tool_calls[0].id }}|{{ tools[0].function.name if tools is defined }}"}}}
	tmpl, err := cfg.Compile("")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "x"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_9", Name: "f", Arguments: json.RawMessage(`{"z": 1, "a": {"y": true, "b": null}}`)}}},
		{Role: "tool", Content: "42", ToolCallID: "call_9", Name: "f"}}
	out, err := tmpl.RenderTools(msgs, []Tool{{Name: "f", Spec: json.RawMessage(`{"type": "function", "function": {"name": "f"}}`)}}, false)
	want := `True|1|False,False,False;True,False,False;False,True,True;|{"z": 1, "a": {"y": true, "b": null}}|call_9|f`
	if err != nil || out != want {
		t.Fatalf("got %q, %v\nwant %q", out, err, want)
	}
	out, err = tmpl.Render(msgs, false)
	if want := `False||`; err != nil || !strings.HasPrefix(out, want) {
		t.Fatalf("without tools: %q, %v; want it to start %q", out, err, want)
	}
}

func TestStrftime(t *testing.T) {
	at := time.Date(2024, 3, 5, 14, 7, 9, 0, time.UTC)
	if got, want := strftime(at, "%d %b %Y|%Y-%m-%d %H:%M:%S|%B %A %a %I%p %j %y %% %Q"), "05 Mar 2024|2024-03-05 14:07:09|March Tuesday Tue 02PM 065 24 % %Q"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
