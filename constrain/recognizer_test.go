package constrain

import (
	"errors"
	"strings"
	"testing"
)

// Outcomes of feeding a text: dead (a byte was refused), live (a prefix of
// an allowed value), end (a whole value that may go on: a number), done (a
// whole value; nothing may follow).
const (
	dead = "dead"
	live = "live"
	end  = "end"
	done = "done"
)

func outcome(g *Grammar, text string) string {
	m := g.Matcher(NewVocab(nil))
	for i := range len(text) {
		if !m.AcceptBytes([]byte{text[i]}) {
			return dead
		}
	}
	switch {
	case m.Done():
		return done
	case m.CanEnd():
		return end
	}
	return live
}

func mustCompile(t testing.TB, schema string) *Grammar {
	t.Helper()
	g, err := Compile([]byte(schema))
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	return g
}

func TestRecognizer(t *testing.T) {
	person := `{"type": "object", "properties": {"name": {"type": "string", "maxLength": 3},
		"age": {"type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name"]}`
	for _, c := range []struct {
		schema string // "" is any JSON object
		cases  map[string]string
	}{
		{"", map[string]string{
			`{}`: done, `{"a":1}`: done, `{"a": [1, true, null, "x", {"b": -0.5e-3}]}`: done,
			"{\n\"a\":1}": done, `{ "a": 1 }`: done, `{"a":1`: live, `{"a":tru`: live,
			`{ "a" : 1}`: dead, `{  "a":1}`: dead, `{"a":1,}`: dead, `{"a":1}  `: dead, `{"a":1} `: dead,
			`[1]`: dead, `"x"`: dead, ` {}`: dead, `{"a":01}`: dead, `{"a":1.}`: dead, `{"a":-}`: dead,
			`{"a":1e5}`: done, `{"a":1E+05}`: done, `{"a":1e1234}`: dead, `{"a":truex}`: dead,
			`{"a":"\u00e9\n\"\\\/"}`: done, `{"a":"\ud83d\ude00"}`: dead, `{"a":"\uDBFF"}`: dead, `{"a":"\uD7FF"}`: done,
			"{\"a\":\"\x01\"}": dead, `{"a":"é€😀"}`: done, "{\"a\":\"\xff\"}": dead, "{\"a\":\"\xc0\xaf\"}": dead,
			"{\"a\":\"\xed\xa0\x80\"}": dead, "{\"a\":\"\xf4\x90\x80\x80\"}": dead, `{"a":"x\q"}`: dead,
			`{"a":123456789012345}`: done, `{"a":1234567890123456}`: dead,
		}},
		{person, map[string]string{
			`{"name":"abc"}`: done, `{"name":"abcd"}`: dead, `{"age":5}`: dead, `{}`: dead,
			`{"name":"a","age":120}`: done, `{"name":"a","age":121}`: dead, `{"name":"a","age":-1}`: dead,
			`{"name":"a","age":1.5}`: dead, `{"name":"a","extra":1}`: dead, `{"name":"a","age":12`: live,
			`{"name":"a","age":0}`: done, `{"name":"a","age":00`: dead, `{"name":"a","age":1000`: dead,
			`{"name":"a",}`: dead, `{"name":"a", "age": 7}`: done,
		}},
		{`{"enum": ["red", "green", 1, 12, null, {"k": [1]}]}`, map[string]string{
			`"red"`: done, `"re`: live, `"blue"`: dead, `1`: end, `12`: done, `null`: done, `{"k":[1]}`: done,
			`{"k": [1]}`: dead, `13`: dead,
		}},
		{`{"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2}`, map[string]string{
			`[]`: dead, `[true]`: done, `[true,false]`: done, `[true,false,true]`: dead, `[ true ]`: done, `[true,]`: dead,
		}},
		{`{"type": "number", "minimum": 0.5, "exclusiveMaximum": 2}`, map[string]string{
			`0.5`: end, `0.4`: dead, `1.99`: end, `1.999999`: end, `1.9999999`: dead, `2`: dead, `-1`: dead, `1e2`: dead, `0.50`: end,
		}},
		{`{"type": "integer", "exclusiveMinimum": -3, "maximum": 1000}`, map[string]string{
			`-2`: end, `-3`: dead, `1000`: end, `1001`: dead, `10000`: dead, `-0`: end, `0`: end, `1.0`: dead,
		}},
		{`{"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}]}`, map[string]string{
			`"x"`: done, `null`: done, `1`: dead, `"xyz"`: dead,
		}},
		{`{"type": ["integer", "null"]}`, map[string]string{`null`: done, `5`: end, `"5"`: dead}},
		{`{"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}},
			"required": ["v"], "additionalProperties": false}}, "$ref": "#/$defs/node"}`, map[string]string{
			`{"v":1,"next":{"v":2,"next":{"v":3}}}`: done, `{"v":1,"next":{}}`: dead, `{"v":1,"next":null}`: dead,
		}},
		{`{"type": "string", "minLength": 2}`, map[string]string{`"a"`: dead, `"ab"`: done, `"\n"`: dead, `"\n\t"`: done}},
		{`{"type": "string", "maxLength": 2}`, map[string]string{
			`"\n\t"`: done, `"\n\t\n"`: dead, `"é€"`: done, `"é€x"`: dead, `"\u0041b"`: done,
		}},
		{`{"type": "object", "additionalProperties": {"type": "integer"}}`, map[string]string{
			`{"x":1,"y":2}`: done, `{"x":"a"}`: dead, `{}`: done,
		}},
		{`{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}}`, map[string]string{
			`{"c":1}`: done, `{"b":1,"a":2}`: dead, `{"a":1,"c":2}`: done, `{}`: done, `{"a":1,"a":2}`: dead,
		}},
		{`{"properties": {"ab": {"const": 1}, "abc": {"type": "boolean"}}, "required": ["abc"]}`, map[string]string{
			`{"abc":true}`: done, `{"ab":1,"abc":false}`: done, `{"ab":1}`: dead, `{"ab":2`: dead,
		}},
		{`{"type": "object", "properties": {"a b\"é": {"type": "null"}}, "required": ["a b\"é"]}`, map[string]string{
			`{"a b\"é":null}`: done, `{"a b\u0022é":null}`: dead,
		}},
		{`{"type": "array", "items": false}`, map[string]string{`[]`: done, `[1]`: dead}},
		{`{"type": "object", "properties": {"x": false, "y": {"type": "null"}}}`, map[string]string{`{"x":null}`: dead, `{"y":null}`: done}},
		{`{"oneOf": [{"type": "array", "maxItems": 0}, {"type": "integer"}, {"const": "k"}]}`, map[string]string{
			`[]`: done, `3`: end, `"k"`: done, `"j"`: dead,
		}},
		{`true`, map[string]string{`"x"`: done, `[]`: done, `-1.5`: end, `nul`: live}},
	} {
		g := JSONObject()
		if c.schema != "" {
			g = mustCompile(t, c.schema)
		}
		for text, want := range c.cases {
			if got := outcome(g, text); got != want {
				t.Errorf("schema %s\n  %q: %s, want %s", strings.Join(strings.Fields(c.schema), " "), text, got, want)
			}
		}
	}
}

// TestDepthCap: the recognizer holds at most maxStack frames, the root's
// included, so any JSON nests maxStack-2 objects around a scalar; a schema
// whose smallest instance nests deeper is refused.
func TestDepthCap(t *testing.T) {
	g := JSONObject()
	deep := strings.Repeat(`{"a":`, maxStack-2) + "1" + strings.Repeat("}", maxStack-2)
	if got := outcome(g, deep); got != done {
		t.Errorf("nesting %d: %s", maxStack-2, got)
	}
	at := strings.Repeat(`{"a":`, maxStack-2)
	if got := outcome(g, at+`{}`); got != live {
		t.Errorf("an empty object at the cap: %s", got)
	}
	if got := outcome(g, at+`{"`); got != dead {
		t.Errorf("a key over the cap: %s", got)
	}
	if got := outcome(g, at+`[1`); got != dead {
		t.Errorf("an item over the cap: %s", got)
	}
	schema := strings.Repeat(`{"type":"object","required":["a"],"properties":{"a":`, maxStack) + `{"type":"null"}` + strings.Repeat("}}", maxStack)
	var se *SchemaError
	if _, err := Compile([]byte(schema)); !errors.As(err, &se) || !strings.Contains(se.Msg, "nests") {
		t.Errorf("deep schema: %v", err)
	}
}

func TestSchemaErrors(t *testing.T) {
	for _, c := range []struct {
		schema, keyword, path, msg string
	}{
		{`{"type": "string", "pattern": "x"}`, "pattern", "", "not supported"},
		{`{"properties": {"e/1": {"type": "string", "format": "email"}}}`, "format", "/properties/e~11", "not supported"},
		{`{"allOf": [{"type": "string"}]}`, "allOf", "", "not supported"},
		{`{"type": "array", "uniqueItems": true}`, "uniqueItems", "", "not supported"},
		{`{"type": "object", "minProperties": 1}`, "minProperties", "", "not supported"},
		{`{"type": "number", "multipleOf": 2}`, "multipleOf", "", "not supported"},
		{`{"anyOf": [{"type": "object"}, {"type": "object", "properties": {}}]}`, "anyOf", "", "may both start with '{'"},
		{`{"anyOf": [{"type": "integer"}, {"type": "number"}]}`, "anyOf", "", "distinct JSON types"},
		{`{"oneOf": [{"properties": {"a": {}}}, {"type": "string"}]}`, "oneOf", "/oneOf/0", "must give its type"},
		{`{"type": "object", "anyOf": [{"type": "object"}]}`, "anyOf", "", `"type" beside anyOf`},
		{`{"$ref": "http://example.com/s.json"}`, "", "", "only references within the schema"},
		{`{"$ref": "file:///etc/passwd"}`, "", "", "only references within the schema"},
		{`{"$ref": "#/nope"}`, "", "", "invalid JSON schema"},
		{`{"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a", "maxLength": 3}`, "$ref", "", `"maxLength" beside $ref`},
		{`{"type": "strin"}`, "", "", "invalid JSON schema"},
		{`{"type": "string", "enum": [1, 2]}`, "", "", "no JSON value satisfies the schema"},
		{`{"type": "array", "minItems": 3, "maxItems": 2}`, "", "", "no JSON value satisfies the schema"},
		{`{"type": "integer", "minimum": 1e20}`, "", "", "no JSON value satisfies the schema"},
		{`{"type": "object", "properties": {"a": false}, "required": ["a"]}`, "", "", "no JSON value satisfies the schema"},
		{`{"$defs": {"n": {"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}, "required": ["n"]}}, "$ref": "#/$defs/n"}`, "", "", "no JSON value satisfies the schema"},
		{`{"$defs": {"n": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}}, "$ref": "#/$defs/n"}`, "anyOf", "/$defs/n", "cycle"},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]}`, "items", "", "tuple"},
		{`{"type": "string", "enum": ["a"], "maxLength": 3}`, "maxLength", "", "beside enum"},
		{`{`, "", "", "not JSON"},
		{`[]`, "", "", "invalid JSON schema"},
	} {
		_, err := Compile([]byte(c.schema))
		var se *SchemaError
		if !errors.As(err, &se) {
			t.Errorf("%s: %v, want a SchemaError", c.schema, err)
			continue
		}
		if se.Keyword != c.keyword || se.Path != c.path || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s:\n  got keyword %q path %q: %v\n want keyword %q path %q, %q", c.schema, se.Keyword, se.Path, err, c.keyword, c.path, c.msg)
		}
	}
}

// FuzzCompileAndFeed: no schema and no input makes Compile or the
// recognizer panic, and whatever is accepted keeps a completable state.
func FuzzCompileAndFeed(f *testing.F) {
	f.Add([]byte(`{"type": "object", "properties": {"a": {"type": "integer", "minimum": -5, "maximum": 5}}, "required": ["a"]}`), []byte(`{"a": -3}`))
	f.Add([]byte(`{"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}, {"type": "array", "items": {"$ref": "#"}}]}`), []byte(`[[null,"ab"],[]]`))
	f.Add([]byte(`{"enum": [1, 12, "x", {"k": null}]}`), []byte(`12`))
	f.Add([]byte(`{"type": "number", "exclusiveMinimum": 0.25, "maximum": 1e3}`), []byte(`0.2500001`))
	f.Add([]byte(`true`), []byte(`{"a":[1,2,{"b":"\u00e9"}]}`))
	f.Fuzz(func(t *testing.T, schema, input []byte) {
		g, err := Compile(schema)
		if err != nil {
			return
		}
		m := g.Matcher(NewVocab(nil))
		for _, c := range input {
			if !m.AcceptBytes([]byte{c}) {
				break
			}
			// A live state has a next byte or is a whole value.
			if !m.CanEnd() {
				any := false
				for b := range 256 {
					r := rec{stack: append([]frame(nil), m.r.stack...)}
					if r.step(byte(b)) {
						any = true
						break
					}
				}
				if !any {
					t.Fatalf("%s after some of %q: a dead end", schema, input)
				}
			}
		}
	})
}
