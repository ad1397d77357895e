// Package schematest makes random JSON schemas of the kinds package
// constrain supports, for tests: objects, arrays, enums, numbers, strings,
// nesting and nullable alternatives, with bounded sizes so that every
// instance the recognizer allows is short.
package schematest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Options bound a random schema.
type Options struct {
	Depth    int // nesting of objects and arrays
	MaxProps int // properties per object
	MaxItems int // maxItems of every array
	MaxLen   int // maxLength of every string
}

var names = []string{"name", "age", "id", "tags", "ok", "city", "a b", "x_1", "été", "n"}

// Schema returns a random schema.
func Schema(rng *rand.Rand, o Options) map[string]any {
	kinds := []string{"string", "integer", "number", "boolean", "enum", "const", "nullable"}
	if o.Depth > 0 {
		kinds = append(kinds, "object", "object", "array")
	}
	switch kinds[rng.IntN(len(kinds))] {
	case "object":
		return Object(rng, o)
	case "array":
		s := map[string]any{"type": "array", "items": Schema(rng, Options{o.Depth - 1, o.MaxProps, o.MaxItems, o.MaxLen})}
		lo := rng.IntN(2)
		s["maxItems"] = lo + rng.IntN(o.MaxItems-lo+1)
		if lo > 0 {
			s["minItems"] = lo
		}
		return s
	case "string":
		s := map[string]any{"type": "string", "maxLength": 1 + rng.IntN(o.MaxLen)}
		if rng.IntN(3) == 0 {
			s["minLength"] = 1
		}
		return s
	case "integer":
		s := map[string]any{"type": "integer"}
		if rng.IntN(2) == 0 {
			lo := rng.IntN(200) - 100
			s["minimum"] = lo
			s["maximum"] = lo + rng.IntN(50)
		}
		return s
	case "number":
		s := map[string]any{"type": "number"}
		switch rng.IntN(3) {
		case 0:
			s["minimum"] = json.Number("-2.5")
			s["exclusiveMaximum"] = json.Number("7.25")
		case 1:
			s["exclusiveMinimum"] = 0
		}
		return s
	case "boolean":
		return map[string]any{"type": "boolean"}
	case "enum":
		pool := []any{"red", "green", "blue", 1, 12, 3.5, true, nil, "a\"q", "ü"}
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
		return map[string]any{"enum": pool[:2+rng.IntN(3)]}
	case "const":
		return map[string]any{"const": []any{"fixed", 7, false}[rng.IntN(3)]}
	}
	// nullable: a scalar or null
	inner := Schema(rng, Options{0, o.MaxProps, o.MaxItems, o.MaxLen})
	switch inner["type"] {
	case "boolean", "string":
		inner["type"] = []any{inner["type"], "null"}
	case "integer", "number":
		return map[string]any{"anyOf": []any{inner, map[string]any{"type": "null"}}}
	}
	return inner
}

// Object returns a random object schema.
func Object(rng *rand.Rand, o Options) map[string]any {
	props := map[string]any{}
	var required []any
	perm := rng.Perm(len(names))
	for _, i := range perm[:1+rng.IntN(o.MaxProps)] {
		props[names[i]] = Schema(rng, Options{o.Depth - 1, o.MaxProps, o.MaxItems, o.MaxLen})
		if rng.IntN(2) == 0 {
			required = append(required, names[i])
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	if rng.IntN(2) == 0 {
		s["additionalProperties"] = false
	}
	return s
}

// Validator compiles schema with jsonschema/v6, the independent check of
// what the recognizer lets through.
func Validator(t testing.TB, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}
