package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sipack/sipack/chat"
)

// fieldError is a request error one field is to blame for; param is the
// field's API name (messages[2].content), sent as the error's "param".
type fieldError struct {
	param, msg string
}

func (e *fieldError) Error() string { return e.msg }

func fieldErr(param, format string, args ...any) error {
	return &fieldError{param, fmt.Sprintf(format, args...)}
}

// or is v, or def where the request left the field out.
func or[T any](v, def *T) *T {
	if v != nil {
		return v
	}
	return def
}

// mustBe says what a field must be and what the request had instead.
func mustBe(param, want string, got json.RawMessage) error {
	return fieldErr(param, "%s must be %s, got %s", param, want, describe(got))
}

// describe names a JSON value's kind for an error: a string, an array of 2
// items; numbers, booleans and null as they are.
func describe(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(v, &items) == nil && len(items) == 1 {
			return "an array of 1 item"
		}
		return fmt.Sprintf("an array of %d items", len(items))
	}
	return clip(string(v), 40)
}

// clip shortens s to at most n bytes (on a rune boundary), marking the cut:
// messages echo user data, which must not make them unbounded.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// isNull says whether a field is absent (nil) or null.
func isNull(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// first is v's first byte past white space, which tells its JSON kind; 0
// for none.
func first(v json.RawMessage) byte {
	if v = bytes.TrimSpace(v); len(v) > 0 {
		return v[0]
	}
	return 0
}

// decode reads a request body into v, a pointer to a request struct. Keys
// match the json tags exactly, as in the OpenAI API; unknown keys are
// ignored (clients send fields this server does not use) and null is an
// absent field. Its errors name the field by its API name and say what it
// must be, for a user who cannot read this package's types.
func decode(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("the request body is empty; it must be a JSON object")
	}
	var raw json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		var se *json.SyntaxError
		if !errors.As(err, &se) {
			return fmt.Errorf("malformed JSON: %v", err)
		}
		// Offset counts the bytes read up to the bad one, so it is the bad
		// byte's position from 1; lines and columns count from 1 too.
		off := int(min(max(se.Offset, 1), int64(len(body))))
		where := fmt.Sprintf("byte %d", off)
		before := body[:off-1]
		if line := bytes.Count(before, []byte("\n")) + 1; line > 1 {
			where += fmt.Sprintf(" (line %d, column %d)", line, len(before)-bytes.LastIndexByte(before, '\n'))
		}
		return fmt.Errorf("malformed JSON at %s: %v", where, se)
	}
	if first(raw) != '{' {
		return fmt.Errorf("the request body must be a JSON object, got %s", describe(raw))
	}
	return decodeObject("", raw, reflect.ValueOf(v).Elem())
}

// decodeObject decodes the JSON object raw into the struct v, whose fields
// (those of embedded structs included) are named path.tag.
func decodeObject(path string, raw json.RawMessage, v reflect.Value) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return mustBe(path, "an object", raw)
	}
	// In the struct's order, so that of two bad fields the same is named.
	var walk func(v reflect.Value) error
	walk = func(v reflect.Value) error {
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				if err := walk(v.Field(i)); err != nil {
					return err
				}
				continue
			}
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			val, ok := fields[tag]
			if !ok {
				continue
			}
			name := tag
			if path != "" {
				name = path + "." + tag
			}
			if err := decodeField(name, val, v.Field(i)); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(v)
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// decodeField decodes one field's value into fv.
func decodeField(name string, val json.RawMessage, fv reflect.Value) error {
	t := fv.Type()
	if t == rawMessageType { // checked by the field's own parser
		fv.SetBytes(slices.Clone(val))
		return nil
	}
	if isNull(val) {
		return nil
	}
	if t.Kind() == reflect.Struct || (t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct) {
		if first(val) != '{' {
			return mustBe(name, "an object", val)
		}
		if t.Kind() == reflect.Struct {
			return decodeObject(name, val, fv)
		}
		p := reflect.New(t.Elem())
		if err := decodeObject(name, val, p.Elem()); err != nil {
			return err
		}
		fv.Set(p)
		return nil
	}
	if err := json.Unmarshal(val, fv.Addr().Interface()); err != nil {
		et := t
		if et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		w, outOfRange := want(et, val)
		if outOfRange {
			return fieldErr(name, "%s must be %s, got %s, which is out of range", name, w, describe(val))
		}
		return mustBe(name, w, val)
	}
	return nil
}

// want says what a Go type takes in JSON, and whether got is a number of
// the right form that did not fit it.
func want(t reflect.Type, got json.RawMessage) (string, bool) {
	c := first(got)
	number := c == '-' || (c >= '0' && c <= '9')
	integral := number && !bytes.ContainsAny(got, ".eE")
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer", integral
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer", integral && c != '-'
	case reflect.Float32, reflect.Float64:
		return "a number", number
	case reflect.Bool:
		return "a boolean", false
	case reflect.String:
		return "a string", false
	case reflect.Slice, reflect.Array:
		return "an array", false
	case reflect.Map, reflect.Struct:
		return "an object", false
	}
	return "of type " + t.String(), false
}

// jsonContentType says whether a Content-Type names JSON; an absent one
// counts as JSON (scripts send none, and curl -d a form type, with JSON).
func jsonContentType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// decodeRequest reads and decodes r's body into v; it answers the error
// itself and returns false. The Content-Type is not enforced, but a body
// that is not JSON under a type that is not either is told so.
func (s *Server) decodeRequest(w http.ResponseWriter, r *http.Request, v any) bool {
	body := s.readBody(w, r)
	if body == nil {
		return false
	}
	err := decode(body, v)
	if err == nil {
		return true
	}
	var fe *fieldError
	if ct := r.Header.Get("Content-Type"); !errors.As(err, &fe) && !jsonContentType(ct) {
		err = fmt.Errorf("%v (the request's Content-Type is %q: send a JSON body with Content-Type: application/json)", err, clip(ct, 80))
	}
	badRequest(w, err)
	return false
}

// parseStop reads "stop": a string or an array of strings.
func parseStop(raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		raw = json.RawMessage(`[` + string(raw) + `]`)
	}
	var items []json.RawMessage
	if first(raw) != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, mustBe("stop", "a string or an array of strings", raw)
	}
	if len(items) > 16 {
		return nil, fieldErr("stop", "stop must hold at most 16 strings, got %d", len(items))
	}
	stops := make([]string, len(items))
	for i, it := range items {
		name := fmt.Sprintf("stop[%d]", i)
		if json.Unmarshal(it, &stops[i]) != nil || first(it) != '"' {
			return nil, mustBe(name, "a string", it)
		}
		if s := stops[i]; s == "" || len(s) > 256 {
			return nil, fieldErr(name, "%s must be 1-256 bytes, got %d", name, len(s))
		}
	}
	return stops, nil
}

// parsePrompt reads "prompt": a string, or an array of one string.
func parsePrompt(raw json.RawMessage) (string, error) {
	const what = "a string (or an array of one string; token ids are not supported)"
	if isNull(raw) {
		return "", fieldErr("prompt", "prompt is required: %s", what)
	}
	var prompt string
	if first(raw) == '"' && json.Unmarshal(raw, &prompt) == nil {
		return prompt, nil
	}
	var list []string
	if first(raw) == '[' && json.Unmarshal(raw, &list) == nil && len(list) == 1 {
		return list[0], nil
	}
	return "", mustBe("prompt", what, raw)
}

// parseMessages reads chat messages: a role string and a content string
// (content may also be an array of {"type": "text", "text": ...} parts, or
// null).
func parseMessages(raw json.RawMessage) ([]chat.Message, error) {
	const what = `an array of {"role": ..., "content": ...} objects`
	if isNull(raw) {
		return nil, fieldErr("messages", "messages is required: %s", what)
	}
	var items []json.RawMessage
	if first(raw) != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, mustBe("messages", what, raw)
	}
	if len(items) == 0 {
		return nil, fieldErr("messages", "messages must not be empty")
	}
	msgs := make([]chat.Message, len(items))
	for i, it := range items {
		name := fmt.Sprintf("messages[%d]", i)
		var m map[string]json.RawMessage
		if first(it) != '{' || json.Unmarshal(it, &m) != nil {
			return nil, mustBe(name, `an object {"role": ..., "content": ...}`, it)
		}
		role := m["role"]
		if isNull(role) {
			return nil, fieldErr(name+".role", "%s.role is required: one of %s", name, strings.Join(chat.Roles, ", "))
		}
		if first(role) != '"' || json.Unmarshal(role, &msgs[i].Role) != nil {
			return nil, mustBe(name+".role", "a string", role)
		}
		if !slices.Contains(chat.Roles, msgs[i].Role) {
			return nil, fieldErr(name+".role", "%s.role must be one of %s, got %q", name, strings.Join(chat.Roles, ", "), clip(msgs[i].Role, 40))
		}
		content, err := parseContent(name+".content", m["content"])
		if err != nil {
			return nil, err
		}
		msgs[i].Content = content
		if err := parseToolFields(name, m, &msgs[i]); err != nil { // tools.go
			return nil, err
		}
	}
	return msgs, chat.CheckMessages(msgs)
}

// parseContent reads a message's content: null, a string, or an array of
// text parts, joined.
func parseContent(name string, c json.RawMessage) (string, error) {
	if isNull(c) {
		return "", nil
	}
	var text string
	if first(c) == '"' && json.Unmarshal(c, &text) == nil {
		return text, nil
	}
	var parts []json.RawMessage
	if first(c) != '[' || json.Unmarshal(c, &parts) != nil {
		return "", mustBe(name, `a string or an array of {"type": "text", "text": ...} parts`, c)
	}
	var b strings.Builder
	for j, raw := range parts {
		pname := fmt.Sprintf("%s[%d]", name, j)
		var p map[string]json.RawMessage
		if first(raw) != '{' || json.Unmarshal(raw, &p) != nil {
			return "", mustBe(pname, `an object {"type": "text", "text": ...}`, raw)
		}
		var typ string
		if first(p["type"]) != '"' || json.Unmarshal(p["type"], &typ) != nil {
			if isNull(p["type"]) {
				return "", fieldErr(pname+".type", `%s.type is required: "text"`, pname)
			}
			return "", mustBe(pname+".type", `"text"`, p["type"])
		}
		if typ != "text" {
			return "", fieldErr(pname+".type", `%s.type must be "text" (this server reads text only), got %q`, pname, clip(typ, 40))
		}
		var t string
		if first(p["text"]) != '"' || json.Unmarshal(p["text"], &t) != nil {
			if isNull(p["text"]) {
				return "", fieldErr(pname+".text", "%s.text is required: a string", pname)
			}
			return "", mustBe(pname+".text", "a string", p["text"])
		}
		b.WriteString(t)
	}
	return b.String(), nil
}
