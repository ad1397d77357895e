// Package constrain restricts generation to JSON: a byte-level pushdown
// recognizer for JSON, optionally narrowed by a JSON schema (Grammar), walked
// over a trie of the vocabulary's token bytes (Vocab) to give, at each step,
// the tokens whose bytes keep the recognizer live (Matcher). Every live state
// can be completed, so a generation masked by it always parses and validates
// once it is Done.
//
// The recognizer accepts a subset of the schema's instances, chosen so that
// a model cannot wander: objects list their declared properties in the
// schema's order (optional ones may be left out) and no others; at most one
// space or newline stands between two tokens of the JSON; numbers have at
// most 15 integer and 15 fraction digits (12 and 6 under bounds) and two
// exponent digits; enum and const values are written in their canonical
// (compact) form; strings hold valid UTF-8 and no escaped surrogates.
package constrain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaError is a schema this package refuses: its keyword and where it is.
type SchemaError struct {
	Path    string // JSON pointer of the subschema ("" is the root)
	Keyword string // the keyword to blame; "" for the schema as a whole
	Msg     string
}

func (e *SchemaError) Error() string {
	where := ""
	if e.Path != "" {
		where = " at " + e.Path
	}
	switch {
	case e.Keyword != "":
		return fmt.Sprintf("schema keyword %q%s: %s", e.Keyword, where, e.Msg)
	case e.Path != "":
		return fmt.Sprintf("schema%s: %s", where, e.Msg)
	}
	return e.Msg
}

// Supported names the keywords a schema may use, for error messages.
const Supported = "type, properties, required, additionalProperties, items, minItems, maxItems, enum, const, " +
	"minLength, maxLength, minimum, maximum, exclusiveMinimum, exclusiveMaximum, anyOf and oneOf (of distinct types), " +
	"$ref (local) with $defs or definitions, and annotations (title, description, default, examples, ...)"

// refused are standard keywords the recognizer cannot enforce. A schema using
// one is refused rather than ignored: the output would not validate.
var refused = map[string]bool{
	"allOf": true, "not": true, "if": true, "then": true, "else": true,
	"pattern": true, "patternProperties": true, "propertyNames": true, "format": true,
	"dependentRequired": true, "dependentSchemas": true, "dependencies": true,
	"unevaluatedProperties": true, "unevaluatedItems": true,
	"prefixItems": true, "additionalItems": true, "contains": true, "minContains": true, "maxContains": true,
	"uniqueItems": true, "minProperties": true, "maxProperties": true, "multipleOf": true,
	"contentEncoding": true, "contentMediaType": true, "contentSchema": true,
	"$anchor": true, "$dynamicRef": true, "$dynamicAnchor": true, "$recursiveRef": true, "$recursiveAnchor": true,
}

// annotations are keywords with no say in validation; they may stand beside
// anything, $ref included.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "$defs": true, "definitions": true,
	"title": true, "description": true, "default": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "strict": true,
}

type kind uint8

const (
	kNever   kind = iota // no value at all: the false schema, an empty enum
	kAny                 // any JSON value
	kObject              // declared properties, or free keys (free != nil)
	kArray               // items
	kString              // minLen, maxLen
	kNumber              // num
	kLiteral             // one of lits (canonical JSON texts)
	kUnion               // one of alts, told apart by their first byte
)

// inf is the depth of a node with no finite instance.
const inf = 1 << 20

// node is a compiled subschema.
type node struct {
	kind kind
	// depth is the number of recognizer frames the smallest instance needs,
	// its own included; inf when it has none.
	depth int
	typed bool   // its kinds are given (type, enum, const), not inferred
	ptr   string // where it is, for errors

	props   []prop
	nextReq []int // nextReq[i]: the first required property at or after i (len(props): none)
	free    *node // kObject: the value of any key, when no properties are declared

	items              *node
	minItems, maxItems int // maxItems < 0: no bound

	minLen, maxLen int // runes; maxLen < 0: no bound

	num numSpec

	lits []string

	alts   []*node
	starts []byteSet // alts[i] starts with a byte of starts[i]

	building bool // being filled: a $ref cycle back to it with no container between is refused
}

type prop struct {
	name     string
	key      string // the name as a JSON string, quotes included
	n        *node
	required bool
}

// numSpec is a number's shape: digit caps and, when bounded, the range in
// units of 10^-fracCap (so that every bound test is exact integer arithmetic).
type numSpec struct {
	integer, exp    bool
	intCap, fracCap int
	bounded         bool
	lo, hi          int64 // scaled; inclusive
}

type byteSet [4]uint64

func (s *byteSet) add(c byte)      { s[c>>6] |= 1 << (c & 63) }
func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }
func (s *byteSet) or(t byteSet)    { s[0], s[1], s[2], s[3] = s[0]|t[0], s[1]|t[1], s[2]|t[2], s[3]|t[3] }
func (s *byteSet) and(t byteSet) byteSet {
	return byteSet{s[0] & t[0], s[1] & t[1], s[2] & t[2], s[3] & t[3]}
}
func (s byteSet) empty() bool { return s == byteSet{} }

func (s byteSet) first() byte {
	for c := 0; c < 256; c++ {
		if s.has(byte(c)) {
			return byte(c)
		}
	}
	return 0
}

// Digit caps: they keep a number from running on; two exponent digits keep
// it within float64 (JSON parsers read numbers as doubles), and the bounded
// caps keep scaled values within int64 (10^12 · 10^6).
const (
	intCap, fracCap, expCap = 15, 15, 2
	boundedIntCap           = 12
	boundedFracCap          = 6
	integerIntCap           = 15
)

var pow10 = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return
}()

// Shared nodes for the parts of "any JSON value".
var (
	anyNode     = &node{kind: kAny, depth: 1}
	neverNode   = &node{kind: kNever, depth: inf}
	anyObject   = &node{kind: kObject, depth: 1, free: anyNode, nextReq: []int{0}}
	anyArray    = &node{kind: kArray, depth: 1, items: anyNode, maxItems: -1}
	anyString   = &node{kind: kString, depth: 1, maxLen: -1}
	anyNumber   = &node{kind: kNumber, depth: 1, num: numSpec{exp: true, intCap: intCap, fracCap: fracCap}}
	boolNode    = &node{kind: kLiteral, depth: 1, lits: []string{"false", "true"}}
	nullNode    = &node{kind: kLiteral, depth: 1, lits: []string{"null"}}
	anyStarts   = startsOf(anyNode)
	numberStart = func() (s byteSet) {
		s.add('-')
		for c := byte('0'); c <= '9'; c++ {
			s.add(c)
		}
		return
	}()
)

// Grammar is a compiled schema, safe for concurrent use; each generation
// walks it with a Matcher of its own.
type Grammar struct {
	root *node
}

// JSONObject is the grammar of any JSON object (OpenAI's json_object,
// ollama's "json").
func JSONObject() *Grammar { return &Grammar{root: anyObject} }

// Compile checks a JSON schema (with jsonschema, which refuses malformed
// schemas and, having no loader, any $ref outside the document) and compiles
// the recognizer. A keyword it cannot enforce is a *SchemaError naming it.
func Compile(schema []byte) (*Grammar, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, &SchemaError{Msg: "the schema is not JSON: " + err.Error()}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	// An absolute URL: a relative one would be resolved against the
	// server's working directory, which error messages would then show.
	const url = "https://request.invalid/schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, &SchemaError{Msg: "invalid JSON schema: " + schemaMessage(err)}
	}
	if _, err := c.Compile(url); err != nil {
		return nil, &SchemaError{Msg: "invalid JSON schema: " + schemaMessage(err)}
	}
	ordered, err := decodeOrdered(schema)
	if err != nil {
		return nil, &SchemaError{Msg: "the schema is not JSON: " + err.Error()}
	}
	b := &builder{doc: ordered, memo: map[string]*node{}}
	root, err := b.build(ordered, "")
	if err != nil {
		return nil, err
	}
	b.depths()
	if root.depth+1 > maxStack {
		if root.depth >= inf {
			return nil, &SchemaError{Msg: "no JSON value satisfies the schema within this generator's limits (a required property, item or anyOf alternative that can never be generated, an empty enum, minLength above maxLength, minItems above maxItems, or bounds that no number meets with at most 15 integer digits, or 12 and 6 decimals when bounded)"}
		}
		return nil, &SchemaError{Msg: fmt.Sprintf("the schema's smallest instance nests %d deep, at most %d", root.depth, maxStack-1)}
	}
	return &Grammar{root: root}, nil
}

// noLoader refuses to load schemas: a request's $ref must not read files
// or the network.
type noLoader struct{}

func (noLoader) Load(string) (any, error) {
	return nil, errors.New("only references within the schema (#/...) are allowed")
}

// schemaMessage says what jsonschema found wrong with a schema: where the
// metaschema failed (the innermost causes, at most three), or the error
// itself on one line.
func schemaMessage(err error) string {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if !errors.As(err, &sve) || !errors.As(sve.Err, &ve) {
		return flatten(err)
	}
	p := message.NewPrinter(language.English)
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 && len(leaves) < 3 {
			where := "/" + strings.Join(e.InstanceLocation, "/")
			leaves = append(leaves, fmt.Sprintf("at %s: %s", where, e.ErrorKind.LocalizedString(p)))
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return flatten(errors.New(strings.Join(leaves, "; ")))
}

// flatten makes a multi-line error one line, clipped.
func flatten(err error) string {
	s := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// object is a JSON object that keeps its keys' order: properties are
// generated in the order the schema gives them.
type object struct {
	keys []string
	vals map[string]any
}

// decodeOrdered decodes JSON with objects as *object and numbers as
// json.Number.
func decodeOrdered(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("data after the schema")
	}
	return v, nil
}

func decodeValue(d *json.Decoder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		o := &object{vals: map[string]any{}}
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			if _, dup := o.vals[k]; !dup {
				o.keys = append(o.keys, k)
			}
			o.vals[k] = v
		}
		_, err := d.Token()
		return o, err
	case json.Delim('['):
		a := []any{}
		for d.More() {
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := d.Token()
		return a, err
	}
	return t, nil
}

// canonical writes a value as compact JSON, object keys in their order.
func canonical(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quote(k))
			b.WriteByte(':')
			canonical(b, v.vals[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			canonical(b, x)
		}
		b.WriteByte(']')
	case string:
		b.WriteString(quote(v))
	case json.Number:
		b.WriteString(string(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	default:
		b.WriteString("null")
	}
}

// quote is s as a JSON string, without HTML escapes.
func quote(s string) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// escapePtr is a JSON pointer's escaping of one key.
func escapePtr(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

type builder struct {
	doc  any
	memo map[string]*node // $ref targets by pointer
	all  []*node
}

func (b *builder) newNode(k kind, ptr string) *node {
	n := &node{kind: k, ptr: ptr, maxItems: -1, maxLen: -1}
	b.all = append(b.all, n)
	return n
}

func errAt(ptr, kw, format string, args ...any) error {
	return &SchemaError{Path: ptr, Keyword: kw, Msg: fmt.Sprintf(format, args...)}
}

// build compiles the subschema v found at ptr.
func (b *builder) build(v any, ptr string) (*node, error) {
	switch s := v.(type) {
	case bool:
		if s {
			return anyNode, nil
		}
		return neverNode, nil
	case *object:
		return b.buildObject(s, ptr)
	}
	return nil, errAt(ptr, "", "a schema must be an object or a boolean")
}

func (b *builder) buildObject(s *object, ptr string) (*node, error) {
	for _, k := range s.keys {
		if !refused[k] {
			continue
		}
		if k == "uniqueItems" && s.vals[k] == false {
			continue
		}
		return nil, errAt(ptr, k, "not supported by constrained generation (supported: %s)", Supported)
	}
	if _, ok := s.vals["$id"]; ok && ptr != "" {
		return nil, errAt(ptr, "$id", "only the root may have an $id")
	}
	if ref, ok := s.vals["$ref"]; ok {
		for _, k := range s.keys {
			if k != "$ref" && !annotations[k] {
				return nil, errAt(ptr, "$ref", "%q beside $ref is not supported; move it into the referenced schema", k)
			}
		}
		return b.ref(ref, ptr)
	}
	n := b.newNode(kNever, ptr)
	n.building = true
	if err := b.fill(n, s, ptr); err != nil {
		return nil, err
	}
	n.building = false
	return n, nil
}

// ref compiles the target of a local $ref once; a cycle shares the node.
func (b *builder) ref(v any, ptr string) (*node, error) {
	ref, ok := v.(string)
	if !ok {
		return nil, errAt(ptr, "$ref", "must be a string")
	}
	if !strings.HasPrefix(ref, "#") {
		return nil, errAt(ptr, "$ref", "only references within the schema (#/...) are allowed, got %q", clip(ref))
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return nil, errAt(ptr, "$ref", "malformed reference %q", clip(ref))
	}
	if n, ok := b.memo[frag]; ok {
		return n, nil
	}
	target, ok := resolve(b.doc, frag)
	if !ok {
		return nil, errAt(ptr, "$ref", "%q does not name a part of the schema", clip(ref))
	}
	switch t := target.(type) {
	case bool:
		return b.build(t, frag)
	case *object:
		if _, ok := t.vals["$ref"]; ok { // a chain of references: follow it, guarding cycles
			b.memo[frag] = neverNode
			n, err := b.build(t, frag)
			if err != nil {
				return nil, err
			}
			b.memo[frag] = n
			return n, nil
		}
		n := b.newNode(kNever, frag)
		b.memo[frag] = n
		n.building = true
		if err := b.fill(n, t, frag); err != nil {
			return nil, err
		}
		n.building = false
		return n, nil
	}
	return nil, errAt(ptr, "$ref", "%q is not a schema", clip(ref))
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// resolve follows a JSON pointer ("" or "/a/0/b") in doc.
func resolve(doc any, p string) (any, bool) {
	if p == "" {
		return doc, true
	}
	if p[0] != '/' {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case *object:
			v, ok := c.vals[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

var typeNames = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// fill compiles the object schema s into n.
func (b *builder) fill(n *node, s *object, ptr string) error {
	has := func(k string) bool { _, ok := s.vals[k]; return ok }
	types, typed, err := typesOf(s, ptr)
	if err != nil {
		return err
	}
	if has("enum") || has("const") {
		return b.literal(n, s, ptr, types, typed)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if has(kw) {
			return b.union(n, s, ptr, kw)
		}
	}
	if !typed { // no type: the kinds whose keywords appear, or any value
		infer := map[string][]string{
			"object": {"properties", "required", "additionalProperties"},
			"array":  {"items", "minItems", "maxItems"},
			"string": {"minLength", "maxLength"},
			"number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
		}
		for _, t := range []string{"object", "array", "string", "number"} {
			if slices.ContainsFunc(infer[t], has) {
				types = append(types, t)
			}
		}
		if len(types) == 0 {
			*n = *anyNode
			n.ptr = ptr
			return nil
		}
	}
	if slices.Contains(types, "integer") && slices.Contains(types, "number") {
		types = slices.DeleteFunc(types, func(t string) bool { return t == "integer" })
	}
	var alts []*node
	for _, t := range types {
		a := n
		if len(types) > 1 {
			a = b.newNode(kNever, ptr)
		}
		if err := b.typed(a, s, ptr, t); err != nil {
			return err
		}
		a.typed = typed
		alts = append(alts, a)
	}
	if len(alts) > 1 {
		return b.setUnion(n, alts, ptr, "type", typed)
	}
	return nil
}

// typesOf reads "type": a name or a list of names.
func typesOf(s *object, ptr string) ([]string, bool, error) {
	v, ok := s.vals["type"]
	if !ok {
		return nil, false, nil
	}
	var names []string
	switch t := v.(type) {
	case string:
		names = []string{t}
	case []any:
		for _, x := range t {
			name, _ := x.(string)
			names = append(names, name)
		}
	}
	for _, name := range names {
		if !slices.Contains(typeNames, name) {
			return nil, false, errAt(ptr, "type", "unknown type %q", clip(name))
		}
	}
	return names, true, nil
}

// typed compiles s as an instance of the one type t.
func (b *builder) typed(n *node, s *object, ptr, t string) error {
	switch t {
	case "object":
		return b.object(n, s, ptr)
	case "array":
		return b.array(n, s, ptr)
	case "string":
		n.kind = kString
		var err error
		if n.minLen, err = count(s, ptr, "minLength", 0); err != nil {
			return err
		}
		n.maxLen, err = count(s, ptr, "maxLength", -1)
		return err
	case "number", "integer":
		n.kind = kNumber
		return numberSpec(n, s, ptr, t == "integer")
	case "boolean":
		n.kind, n.lits = kLiteral, boolNode.lits
	case "null":
		n.kind, n.lits = kLiteral, nullNode.lits
	}
	return nil
}

// count reads a non-negative integer keyword (def when absent).
func count(s *object, ptr, kw string, def int) (int, error) {
	v, ok := s.vals[kw]
	if !ok {
		return def, nil
	}
	num, _ := v.(json.Number)
	r, ok := new(big.Rat).SetString(string(num))
	if !ok || !r.IsInt() || r.Sign() < 0 {
		return 0, errAt(ptr, kw, "must be a non-negative integer")
	}
	if !r.Num().IsInt64() || r.Num().Int64() > math.MaxInt32 {
		return math.MaxInt32, nil
	}
	return int(r.Num().Int64()), nil
}

func (b *builder) object(n *node, s *object, ptr string) error {
	n.kind = kObject
	if v, ok := s.vals["properties"]; ok {
		props, ok := v.(*object)
		if !ok {
			return errAt(ptr, "properties", "must be an object")
		}
		for _, name := range props.keys {
			child, err := b.build(props.vals[name], ptr+"/properties/"+escapePtr(name))
			if err != nil {
				return err
			}
			n.props = append(n.props, prop{name: name, key: quote(name), n: child})
		}
	}
	if v, ok := s.vals["required"]; ok {
		list, _ := v.([]any)
		for _, x := range list {
			name, _ := x.(string)
			i := slices.IndexFunc(n.props, func(p prop) bool { return p.name == name })
			if i < 0 { // required but undeclared: any value
				n.props = append(n.props, prop{name: name, key: quote(name), n: anyNode})
				i = len(n.props) - 1
			}
			n.props[i].required = true
		}
	}
	// Additional properties are never generated when properties are
	// declared (leaving them out always validates); with none declared,
	// keys are free and their values follow additionalProperties.
	if len(n.props) == 0 {
		switch ap := s.vals["additionalProperties"].(type) {
		case nil:
			n.free = anyNode
		case bool:
			if ap {
				n.free = anyNode
			}
		default:
			child, err := b.build(ap, ptr+"/additionalProperties")
			if err != nil {
				return err
			}
			n.free = child
		}
	}
	n.nextReq = make([]int, len(n.props)+1)
	n.nextReq[len(n.props)] = len(n.props)
	for i := len(n.props) - 1; i >= 0; i-- {
		n.nextReq[i] = n.nextReq[i+1]
		if n.props[i].required {
			n.nextReq[i] = i
		}
	}
	return nil
}

func (b *builder) array(n *node, s *object, ptr string) error {
	n.kind, n.items = kArray, anyNode
	if v, ok := s.vals["items"]; ok {
		if _, tuple := v.([]any); tuple {
			return errAt(ptr, "items", "an array of schemas (a tuple) is not supported")
		}
		child, err := b.build(v, ptr+"/items")
		if err != nil {
			return err
		}
		n.items = child
	}
	var err error
	if n.minItems, err = count(s, ptr, "minItems", 0); err != nil {
		return err
	}
	n.maxItems, err = count(s, ptr, "maxItems", -1)
	return err
}

// numberSpec reads a number's bounds into exact scaled integers.
func numberSpec(n *node, s *object, ptr string, integer bool) error {
	sp := numSpec{integer: integer, intCap: intCap, fracCap: fracCap, exp: true, lo: math.MinInt64, hi: math.MaxInt64}
	if integer {
		sp.intCap, sp.fracCap, sp.exp = integerIntCap, 0, false
	}
	kws := []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}
	for _, kw := range kws {
		if _, ok := s.vals[kw]; ok && !integer {
			sp.intCap, sp.fracCap, sp.exp = boundedIntCap, boundedFracCap, false
		}
	}
	for _, kw := range kws {
		v, ok := s.vals[kw]
		if !ok {
			continue
		}
		num, isNum := v.(json.Number)
		if !isNum {
			return errAt(ptr, kw, "must be a number")
		}
		r, ok := new(big.Rat).SetString(string(num))
		if !ok {
			return errAt(ptr, kw, "%s is out of range", clip(string(num)))
		}
		sp.bounded = true
		r.Mul(r, new(big.Rat).SetInt64(pow10[sp.fracCap]))
		fl, ce := floorCeil(r)
		switch kw {
		case "minimum":
			sp.lo = max(sp.lo, ce)
		case "exclusiveMinimum":
			sp.lo = max(sp.lo, fl+1)
		case "maximum":
			sp.hi = min(sp.hi, fl)
		case "exclusiveMaximum":
			sp.hi = min(sp.hi, ce-1)
		}
	}
	n.num = sp
	return nil
}

// floorCeil is ⌊r⌋ and ⌈r⌉, clamped to ±10^18 (beyond any value generated).
func floorCeil(r *big.Rat) (int64, int64) {
	const lim = 1_000_000_000_000_000_000
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // Euclidean: m ≥ 0, q = ⌊r⌋
	fl := q
	ce := new(big.Int).Set(q)
	if m.Sign() != 0 {
		ce.Add(ce, big.NewInt(1))
	}
	clamp := func(x *big.Int) int64 {
		if x.Cmp(big.NewInt(lim)) > 0 {
			return lim
		}
		if x.Cmp(big.NewInt(-lim)) < 0 {
			return -lim
		}
		return x.Int64()
	}
	return clamp(fl), clamp(ce)
}

// literal compiles enum/const: the values (of the types given, if any) in
// canonical form. Other constraints beside them are refused.
func (b *builder) literal(n *node, s *object, ptr string, types []string, typed bool) error {
	for _, k := range s.keys {
		if k != "enum" && k != "const" && k != "type" && !annotations[k] {
			return errAt(ptr, k, "beside enum or const is not supported")
		}
	}
	var vals []any
	if v, ok := s.vals["enum"]; ok {
		vals, _ = v.([]any)
	}
	if c, ok := s.vals["const"]; ok {
		cs := canon(c)
		if _, hasEnum := s.vals["enum"]; hasEnum {
			vals = slices.DeleteFunc(vals, func(v any) bool { return canon(v) != cs })
		} else {
			vals = []any{c}
		}
	}
	n.kind, n.typed = kLiteral, true
	for _, v := range vals {
		if typed && !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			continue
		}
		if c := canon(v); !slices.Contains(n.lits, c) {
			n.lits = append(n.lits, c)
		}
	}
	return nil
}

func canon(v any) string {
	var b bytes.Buffer
	canonical(&b, v)
	return b.String()
}

// hasType says whether a decoded value is of a JSON schema type.
func hasType(v any, t string) bool {
	switch v := v.(type) {
	case *object:
		return t == "object"
	case []any:
		return t == "array"
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case nil:
		return t == "null"
	case json.Number:
		if t == "number" {
			return true
		}
		r, ok := new(big.Rat).SetString(string(v))
		return t == "integer" && ok && r.IsInt()
	}
	return false
}

// union compiles anyOf or oneOf. Alternatives must start with different
// bytes (different JSON types), so the first byte of a value picks one; for
// oneOf each must also name its types, so that no instance of one is an
// instance of another.
func (b *builder) union(n *node, s *object, ptr, kw string) error {
	for _, k := range s.keys {
		if k != kw && !annotations[k] {
			return errAt(ptr, kw, "%q beside %s is not supported; move it into the alternatives", k, kw)
		}
	}
	list, _ := s.vals[kw].([]any)
	var alts []*node
	for i, v := range list {
		a, err := b.build(v, fmt.Sprintf("%s/%s/%d", ptr, kw, i))
		if err != nil {
			return err
		}
		if kw == "oneOf" && !a.typed && a.kind != kNever {
			return errAt(a.ptr, kw, "each oneOf alternative must give its type (or enum or const)")
		}
		alts = append(alts, a)
	}
	return b.setUnion(n, alts, ptr, kw, true)
}

// setUnion makes n the union of alts, flattening nested unions and
// dropping alternatives with no value.
func (b *builder) setUnion(n *node, alts []*node, ptr, kw string, typed bool) error {
	var flat []*node
	for _, a := range alts {
		if a.building {
			return errAt(ptr, kw, "a $ref cycle with no object or array between is not supported")
		}
		switch a.kind {
		case kUnion:
			flat = append(flat, a.alts...)
		case kNever:
		default:
			flat = append(flat, a)
		}
	}
	n.kind, n.typed, n.alts, n.starts = kUnion, typed, nil, nil
	for _, a := range flat {
		n.typed = n.typed && a.typed
	}
	if len(flat) == 0 {
		n.kind = kNever
		return nil
	}
	for _, a := range flat {
		st := startsOf(a)
		for j, other := range n.starts {
			if both := st.and(other); !both.empty() {
				return errAt(ptr, kw, "alternatives %s and %s may both start with %q; only alternatives of distinct JSON types are supported",
					where(n.alts[j]), where(a), both.first())
			}
		}
		n.alts = append(n.alts, a)
		n.starts = append(n.starts, st)
	}
	return nil
}

func where(n *node) string {
	if n.ptr == "" {
		return "(the root)"
	}
	return n.ptr
}

// startsOf is the set of bytes an instance of n may start with.
func startsOf(n *node) (s byteSet) {
	switch n.kind {
	case kAny:
		for _, c := range []byte(`{["tfn`) {
			s.add(c)
		}
		s.or(numberStart)
	case kObject:
		s.add('{')
	case kArray:
		s.add('[')
	case kString:
		s.add('"')
	case kNumber:
		s = numberStart
	case kLiteral:
		for _, l := range n.lits {
			s.add(l[0])
		}
	case kUnion:
		for _, t := range n.starts {
			s.or(t)
		}
	}
	return s
}

// depths computes every node's depth, a least fixed point: recursive
// schemas settle once every finite instance has been counted.
func (b *builder) depths() {
	for _, n := range b.all {
		n.depth = inf
	}
	for changed := true; changed; {
		changed = false
		for _, n := range b.all {
			if d := depthOf(n); d < n.depth {
				n.depth, changed = d, true
			}
		}
	}
}

func depthOf(n *node) int {
	switch n.kind {
	case kNever:
		return inf
	case kAny:
		return 1
	case kString:
		if n.maxLen >= 0 && n.minLen > n.maxLen {
			return inf
		}
		return 1
	case kLiteral:
		if len(n.lits) == 0 {
			return inf
		}
		return 1
	case kNumber:
		if !numberFeasible(&n.num) {
			return inf
		}
		return 1
	case kArray:
		if n.maxItems >= 0 && n.minItems > n.maxItems {
			return inf
		}
		if n.minItems > 0 {
			return min(inf, 1+n.items.depth)
		}
		return 1
	case kObject:
		d := 1
		for _, p := range n.props {
			if p.required {
				d = max(d, min(inf, 1+p.n.depth))
			}
		}
		return d
	case kUnion:
		d := inf
		for _, a := range n.alts {
			d = min(d, a.depth)
		}
		return d
	}
	return inf
}

// numberFeasible says whether some number of the spec's shape is in bounds.
func numberFeasible(sp *numSpec) bool {
	if !sp.bounded {
		return true
	}
	top := pow10[sp.intCap]*pow10[sp.fracCap] - 1
	return sp.lo <= sp.hi && sp.lo <= top && sp.hi >= -top
}
