package server

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sipack/sipack/constrain/schematest"
)

// structuredAnswer sends one request and returns the answer's text and
// finish reason, from any of the four endpoints, streamed or not.
func structuredAnswer(t *testing.T, h http.Handler, path string, body map[string]any) (string, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	code, _, resp := do(t, h, "POST", path, string(b))
	if code != 200 {
		t.Fatalf("%s %s: %d %s", path, b, code, resp)
	}
	stream, _ := body["stream"].(bool)
	if strings.HasPrefix(path, "/api/") {
		stream = body["stream"] != false
		var text strings.Builder
		var last ollamaFinal
		for line := range strings.SplitSeq(strings.TrimSpace(resp), "\n") {
			var f ollamaFinal
			if err := json.Unmarshal([]byte(line), &f); err != nil || f.Error != "" {
				t.Fatalf("%s: bad line %q", path, line)
			}
			text.WriteString(f.text())
			last = f
		}
		if !stream && strings.Count(strings.TrimSpace(resp), "\n") != 0 {
			t.Fatalf("%s: not streamed, but %d lines", path, strings.Count(resp, "\n"))
		}
		return text.String(), last.DoneReason
	}
	if stream {
		var text strings.Builder
		finish := ""
		for ev := range strings.SplitSeq(resp, "\n\n") {
			data, ok := strings.CutPrefix(strings.TrimSpace(ev), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var c struct {
				Choices []struct {
					Text  string `json:"text"`
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &c); err != nil || len(c.Choices) != 1 {
				t.Fatalf("%s: bad event %q", path, data)
			}
			text.WriteString(c.Choices[0].Text + c.Choices[0].Delta.Content)
			if c.Choices[0].FinishReason != nil {
				finish = *c.Choices[0].FinishReason
			}
		}
		return text.String(), finish
	}
	var r struct {
		Choices []struct {
			Text    string `json:"text"`
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(resp), &r); err != nil || len(r.Choices) != 1 {
		t.Fatalf("%s: bad answer %s", path, resp)
	}
	return r.Choices[0].Text + r.Choices[0].Message.Content, r.Choices[0].FinishReason
}

// formatBody is a request for a schema (nil: any JSON object) on one of
// the endpoints.
func formatBody(path, prompt string, schema any) map[string]any {
	body := map[string]any{}
	switch path {
	case "/v1/chat/completions", "/api/chat":
		body["messages"] = []any{map[string]any{"role": "user", "content": prompt}}
	default:
		body["prompt"] = prompt
	}
	if strings.HasPrefix(path, "/api/") {
		body["format"] = "json"
		if schema != nil {
			body["format"] = schema
		}
		return body
	}
	body["response_format"] = map[string]any{"type": "json_object"}
	if schema != nil {
		body["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": schema, "strict": true}}
	}
	return body
}

var structuredPaths = []string{"/v1/chat/completions", "/v1/completions", "/api/chat", "/api/generate"}

// TestStructuredRandomSchemas: random schemas × prompts on the tiny model,
// sampled at temperature 1 so that it wanders, through every endpoint,
// streamed or not: every answer ends by itself ("stop") as JSON that
// validates against its schema.
func TestStructuredRandomSchemas(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	rng := rand.New(rand.NewPCG(46, 1))
	prompts := []string{"Describe a person as JSON.", "In the beginning", "List three colours:", "{\"a\":"}
	tokens := 0
	for i := range 64 {
		schema := schematest.Schema(rng, schematest.Options{Depth: 2, MaxProps: 3, MaxItems: 2, MaxLen: 6})
		if i%2 == 0 { // objects at the root, as clients ask for them
			schema = schematest.Object(rng, schematest.Options{Depth: 2, MaxProps: 3, MaxItems: 2, MaxLen: 6})
		}
		raw, _ := json.Marshal(schema)
		path := structuredPaths[i%len(structuredPaths)]
		body := formatBody(path, prompts[i%len(prompts)], schema)
		body["temperature"], body["seed"], body["top_p"] = 1.0, i, 1.0
		if strings.HasPrefix(path, "/api/") {
			delete(body, "temperature")
			delete(body, "seed")
			delete(body, "top_p")
			body["options"] = map[string]any{"temperature": 1, "seed": i, "top_k": 0, "top_p": 1, "repeat_penalty": 1}
			body["stream"] = i%3 == 0
		} else {
			body["stream"] = i%3 == 1
		}
		text, finish := structuredAnswer(t, h, path, body)
		tokens += len(text)
		if finish != "stop" {
			t.Errorf("%s %s: finish %q, answer %q", path, raw, finish, text)
			continue
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			t.Errorf("%s %s: answer %q does not parse: %v", path, raw, text, err)
			continue
		}
		if err := schematest.Validator(t, raw).Validate(inst); err != nil {
			t.Errorf("%s %s: answer %q does not validate: %v", path, raw, text, err)
		}
		if testing.Verbose() {
			t.Logf("%s %s\n  %s", path, raw, text)
		}
	}
	t.Logf("%d bytes of JSON", tokens)
}

// TestStructuredJSONObject: json_object and ollama's "json" give a JSON
// object; max_tokens still cuts the answer short ("length", maybe not JSON).
func TestStructuredJSONObject(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	for i, path := range structuredPaths {
		body := formatBody(path, "Write JSON about a cat.", nil)
		if strings.HasPrefix(path, "/api/") {
			body["stream"] = false
			body["options"] = map[string]any{"temperature": 0, "num_predict": 400}
		} else {
			body["temperature"], body["max_tokens"] = 0, 400
		}
		text, finish := structuredAnswer(t, h, path, body)
		if testing.Verbose() {
			t.Logf("%s: %q, finish %s", path, text, finish)
		}
		var obj map[string]any
		if finish == "stop" {
			if err := json.Unmarshal([]byte(text), &obj); err != nil {
				t.Errorf("%s: %q is not a JSON object: %v", path, text, err)
			}
		} else if finish != "length" {
			t.Errorf("%s: finish %q", path, finish)
		}
		if !strings.HasPrefix(text, "{") {
			t.Errorf("%s: %q does not start an object", path, text)
		}
		// Three tokens cannot close most objects: cut short, as OpenAI does.
		if strings.HasPrefix(path, "/api/") {
			body["options"] = map[string]any{"temperature": 1, "seed": i, "num_predict": 3}
		} else {
			body["temperature"], body["max_tokens"], body["seed"] = 1, 3, i
		}
		text, finish = structuredAnswer(t, h, path, body)
		if len(text) > 0 && text[0] != '{' || finish == "stop" && json.Valid([]byte(text)) == false {
			t.Errorf("%s, 3 tokens: %q, finish %q", path, text, finish)
		}
	}
}

// TestStructuredEnumStops: a value that closes ends the generation at once,
// greedy or not, with exactly the value.
func TestStructuredEnumStops(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	schema := map[string]any{"enum": []any{"yes", "no", 42}}
	for _, temp := range []float64{0, 1.5} {
		for _, path := range []string{"/v1/completions", "/api/generate"} {
			body := formatBody(path, "Is the sky blue?", schema)
			body["stream"] = false
			if strings.HasPrefix(path, "/api/") {
				body["options"] = map[string]any{"temperature": temp, "seed": 3}
			} else {
				body["temperature"], body["seed"] = temp, 3
			}
			text, finish := structuredAnswer(t, h, path, body)
			if (text != `"yes"` && text != `"no"` && text != "42") || finish != "stop" {
				t.Errorf("%s T=%v: %q, finish %q", path, temp, text, finish)
			}
		}
	}
}

// TestStructuredBadRequests: a bad response_format or format is a 400 in
// the API's own shape that names the field and, for a schema, the keyword.
func TestStructuredBadRequests(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	msg := `"messages": [{"role": "user", "content": "hi"}]`
	rf := func(v string) string { return `{` + msg + `, "response_format": ` + v + `}` }
	js := func(schema string) string {
		return rf(`{"type": "json_schema", "json_schema": {"name": "x", "schema": ` + schema + `}}`)
	}
	const schemaParam = "response_format.json_schema.schema"
	for _, c := range []struct {
		body, param, want string
	}{
		{rf(`"json"`), "response_format", `response_format must be an object {"type": "text" | "json_object" | "json_schema", ...}, got a string`},
		{rf(`{}`), "response_format.type", `response_format.type is required`},
		{rf(`{"type": 1}`), "response_format.type", `response_format.type must be "text", "json_object" or "json_schema", got 1`},
		{rf(`{"type": "xml"}`), "response_format.type", `response_format.type must be "text", "json_object" or "json_schema", got "xml"`},
		{rf(`{"type": "json_schema"}`), "response_format.json_schema", `response_format.json_schema is required`},
		{rf(`{"type": "json_schema", "json_schema": []}`), "response_format.json_schema", `response_format.json_schema must be an object`},
		{rf(`{"type": "json_schema", "json_schema": {"name": "x"}}`), schemaParam, `response_format.json_schema.schema is required`},
		{rf(`{"type": "json_schema", "json_schema": {"name": 3, "schema": {}}}`), "response_format.json_schema.name", `must be a string, got 3`},
		{rf(`{"type": "json_schema", "json_schema": {"strict": "yes", "schema": {}}}`), "response_format.json_schema.strict", `must be a boolean, got a string`},
		{js(`"object"`), schemaParam, `response_format.json_schema.schema must be a JSON schema object, got a string`},
		{js(`{"type": "string", "pattern": "^a"}`), schemaParam, `schema keyword "pattern": not supported by constrained generation`},
		{js(`{"type": "object", "properties": {"email": {"type": "string", "format": "email"}}}`), schemaParam, `schema keyword "format" at /properties/email: not supported`},
		{js(`{"anyOf": [{"type": "object"}, {"type": "object", "required": ["a"]}]}`), schemaParam, `only alternatives of distinct JSON types are supported`},
		{js(`{"$ref": "file:///etc/passwd"}`), schemaParam, `only references within the schema`},
		{js(`{"type": "strng"}`), schemaParam, `invalid JSON schema`},
		{js(`{"type": "string", "minLength": 5, "maxLength": 2}`), schemaParam, `no JSON value satisfies the schema`},
		{rf(`{"type": "json_object", "schema": {"allOf": [{"type": "object"}]}}`), "response_format.schema", `schema keyword "allOf"`},
	} {
		for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
			body := c.body
			if path == "/v1/completions" {
				body = strings.Replace(body, msg, `"prompt": "hi"`, 1)
			}
			code, e, resp := do(t, h, "POST", path, body)
			if code != 400 || errParam(e) != c.param || !strings.Contains(e.Error.Message, c.want) || e.Error.Type != "invalid_request_error" {
				t.Errorf("%s %s:\n got %d %s\nwant 400 param %q with %q", path, body, code, resp, c.param, c.want)
			}
		}
	}
	for _, c := range []struct{ format, want string }{
		{`"yaml"`, `format must be "json" or a JSON schema object, got "yaml"`},
		{`3`, `format must be "json" or a JSON schema object, got 3`},
		{`{"type": "string", "pattern": "^a"}`, `format: schema keyword "pattern": not supported`},
		{`{"type": "array", "items": {"type": "integer", "multipleOf": 3}}`, `format: schema keyword "multipleOf" at /items: not supported`},
	} {
		for _, path := range []string{"/api/chat", "/api/generate"} {
			body := `{` + msg + `, "format": ` + c.format + `}`
			if path == "/api/generate" {
				body = `{"prompt": "hi", "format": ` + c.format + `}`
			}
			if code, got, _ := ollamaDo(t, h, "POST", path, body); code != 400 || !strings.Contains(got, c.want) {
				t.Errorf("%s %s: %d %q, want 400 with %q", path, body, code, got, c.want)
			}
		}
	}
	// Plain text is no constraint; "" and null formats neither.
	for _, c := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt": "In the beginning", "max_tokens": 2, "response_format": {"type": "text"}}`},
		{"/api/generate", `{"prompt": "In the beginning", "stream": false, "format": "", "options": {"num_predict": 2}}`},
		{"/api/generate", `{"prompt": "In the beginning", "stream": false, "format": null, "options": {"num_predict": 2}}`},
	} {
		if code, _, resp := do(t, h, "POST", c.path, c.body); code != 200 {
			t.Errorf("%s %s: %d %s", c.path, c.body, code, resp)
		}
	}
}

// TestStructuredOpenAIClient: the official client's response_format shapes
// (json_schema with strict, json_object) are understood, and the answer
// validates.
func TestStructuredOpenAIClient(t *testing.T) {
	ts := startServer(t, Options{Parallel: 1}, nil)
	schema := map[string]any{
		"type": "object", "additionalProperties": false, "required": []any{"name", "age"},
		"properties": map[string]any{
			"name": map[string]any{"type": "string", "maxLength": 8},
			"age":  map[string]any{"type": "integer", "minimum": 0, "maximum": 99},
		},
	}
	p := chatParams("Who are you? Answer in JSON.", 200)
	p.Temperature = openai.Float(1)
	p.Seed = openai.Int(5)
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Schema: schema, Strict: openai.Bool(true)},
	}}
	res, err := ts.client().Chat.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(schema)
	text := res.Choices[0].Message.Content
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil || res.Choices[0].FinishReason != "stop" {
		t.Fatalf("%q (finish %s): %v", text, res.Choices[0].FinishReason, err)
	}
	if err := schematest.Validator(t, raw).Validate(inst); err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	p.Temperature = openai.Float(0)
	if res, err = ts.client().Chat.Completions.New(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if text := res.Choices[0].Message.Content; res.Choices[0].FinishReason == "stop" && !json.Valid([]byte(text)) || !strings.HasPrefix(text, "{") {
		t.Fatalf("json_object: %q, finish %s", text, res.Choices[0].FinishReason)
	}
}
