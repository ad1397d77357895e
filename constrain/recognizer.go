package constrain

// The recognizer reads JSON one byte at a time on a stack of frames: the
// root, then one frame per value being read (an object, an array, a string,
// a number, a literal). A byte is accepted only if the value can still be
// completed: container frames check, before opening a child, that the
// child's smallest instance fits under maxStack; numbers check their bounds
// on every digit.

// maxStack caps the frames (the root's included), so nesting is at most
// maxStack-1 deep and the state stays small.
const maxStack = 33

// maxWS is the whitespace allowed in one gap between tokens of the JSON:
// enough for a model's habit of "a": 1, too little to loop on.
const maxWS = 1

type fkind uint8

const (
	fRoot fkind = iota
	fObject
	fArray
	fString
	fNumber
	fLiteral
)

// Frame states.
const (
	// fRoot
	rStart uint8 = iota
	rIn
	rDone
)

const (
	// fObject; the gaps are oOpen, oComma, oValue and oAfter
	oOpen  uint8 = iota // after {
	oKey                // in a declared key
	oFree               // reading a free key (a string frame above)
	oColon              // after a key
	oValue              // after :
	oIn                 // reading a value (a frame above)
	oAfter              // after a value
	oComma              // after ,
)

const (
	// fArray; the gaps are aOpen, aComma and aAfter
	aOpen uint8 = iota
	aIn
	aAfter
	aComma
)

const (
	// fString
	sBody uint8 = iota
	sCont       // inside a UTF-8 sequence
	sEsc        // after \
	sHex        // in \uXXXX
)

const (
	// fNumber
	nStart uint8 = iota
	nSign
	nZero
	nInt
	nDot
	nFrac
	nE
	nESign
	nExp
)

type frame struct {
	n    *node
	kind fkind
	st   uint8
	ws   uint8 // whitespace bytes in the current gap
	// fString: continuation bytes still expected (sCont), hex digits read (sHex)
	need uint8
	// fString: the next continuation byte's range (sCont); 1 in lo when a
	// \u escape began with d, so the next hex digit may not make a surrogate
	lo, hi byte
	neg    bool  // fNumber
	nInt   uint8 // fNumber: digits
	nFrac  uint8
	nExp   uint8
	// fObject: the next property that may come; fArray: items begun;
	// fString: runes
	count int32
	// fObject in a key, fLiteral: the candidate matched so far and its bytes matched
	rep, pos int32
	cur      int32 // fObject: the property whose value is read
	ival     int64 // fNumber: integer digits' value
	fval     int64 // fNumber: fraction digits' value
}

type result uint8

const (
	bad   result = iota // the byte kills the state
	ok                  // consumed
	ended               // the top value ended just before the byte: pop it and try the byte on its parent
)

type rec struct {
	stack []frame
}

func newRec(root *node, buf []frame) rec {
	return rec{stack: append(buf[:0], frame{n: root, kind: fRoot})}
}

// step feeds one byte; false means the state is dead and must be dropped.
func (r *rec) step(c byte) bool {
	for len(r.stack) > 0 {
		switch r.feed(c) {
		case ok:
			return true
		case bad:
			return false
		}
		r.pop()
	}
	return false
}

// pop removes the top frame, a complete value, and moves its parent on.
func (r *rec) pop() {
	r.stack = r.stack[:len(r.stack)-1]
	p := &r.stack[len(r.stack)-1]
	switch p.kind {
	case fRoot:
		p.st = rDone
	case fObject:
		if p.st == oFree {
			p.st = oColon
		} else {
			p.st = oAfter
		}
	case fArray:
		p.st = aAfter
	}
}

func (r *rec) feed(c byte) result {
	f := &r.stack[len(r.stack)-1]
	switch f.kind {
	case fRoot:
		if f.st != rStart {
			return bad
		}
		f.st = rIn
		return r.start(f.n, c)
	case fObject:
		return r.feedObject(f, c)
	case fArray:
		return r.feedArray(f, c)
	case fString:
		return r.feedString(f, c)
	case fNumber:
		return feedNumber(f, c)
	case fLiteral:
		return r.feedLiteral(f, c)
	}
	return bad
}

// start opens a value of n with its first byte c, as the new top frame.
func (r *rec) start(n *node, c byte) result {
	L := len(r.stack)
	if L+n.depth > maxStack {
		return bad
	}
	if n.kind == kUnion {
		var alt *node
		for i, s := range n.starts {
			if s.has(c) {
				alt = n.alts[i]
				break
			}
		}
		if alt == nil || L+alt.depth > maxStack {
			return bad
		}
		n = alt
	}
	if n.kind == kAny {
		switch {
		case c == '{':
			n = anyObject
		case c == '[':
			n = anyArray
		case c == '"':
			n = anyString
		case c == 't' || c == 'f':
			n = boolNode
		case c == 'n':
			n = nullNode
		case numberStart.has(c):
			n = anyNumber
		default:
			return bad
		}
	}
	switch n.kind {
	case kObject:
		if c != '{' {
			return bad
		}
		r.stack = append(r.stack, frame{n: n, kind: fObject, st: oOpen})
		return ok
	case kArray:
		if c != '[' {
			return bad
		}
		r.stack = append(r.stack, frame{n: n, kind: fArray, st: aOpen})
		return ok
	case kString:
		if c != '"' {
			return bad
		}
		r.stack = append(r.stack, frame{n: n, kind: fString, st: sBody})
		return ok
	case kNumber:
		r.stack = append(r.stack, frame{n: n, kind: fNumber, st: nStart})
		return feedNumber(&r.stack[L], c)
	case kLiteral:
		r.stack = append(r.stack, frame{n: n, kind: fLiteral, rep: -1})
		return r.feedLiteral(&r.stack[L], c)
	}
	return bad
}

// gap takes whitespace in a gap state: ok for allowed whitespace, bad for
// too much, and ended for any other byte (which the caller then reads).
func gap(f *frame, c byte) result {
	if c == ' ' || c == '\n' {
		if f.ws >= maxWS {
			return bad
		}
		f.ws++
		return ok
	}
	f.ws = 0
	return ended
}

// fits says whether a child value of n can start above the frame at index L.
func fits(L int, n *node) bool { return L+1+n.depth <= maxStack }

// keyCand finds a property that may come next in the object (from f.count
// up to the first required one), fits, and whose key continues the key
// read so far (that of f.rep, f.pos bytes; rep < 0: none) with c. -1: none.
func (r *rec) keyCand(f *frame, L int, rep, pos int32, c byte) int32 {
	props := f.n.props
	var sofar string
	if rep >= 0 {
		sofar = props[rep].key[:pos]
	}
	for j := int(f.count); j < len(props); j++ {
		p := &props[j]
		if fits(L, p.n) && len(p.key) > int(pos) && p.key[pos] == c && p.key[:pos] == sofar {
			return int32(j)
		}
		if p.required {
			break
		}
	}
	return -1
}

func (r *rec) feedObject(f *frame, c byte) result {
	n := f.n
	L := len(r.stack) - 1
	switch f.st {
	case oOpen, oComma, oValue, oAfter:
		if res := gap(f, c); res != ended {
			return res
		}
	}
	switch f.st {
	case oOpen, oComma:
		if c == '}' && f.st == oOpen && (n.free != nil || n.nextReq[f.count] == len(n.props)) {
			r.pop()
			return ok
		}
		if c != '"' {
			return bad
		}
		if n.free != nil {
			if L+1+max(1, n.free.depth) > maxStack {
				return bad
			}
			f.st = oFree
			r.stack = append(r.stack, frame{n: anyString, kind: fString, st: sBody})
			return ok
		}
		j := r.keyCand(f, L, -1, 0, '"')
		if j < 0 {
			return bad
		}
		f.rep, f.pos, f.st = j, 1, oKey
		return ok
	case oKey:
		j := r.keyCand(f, L, f.rep, f.pos, c)
		if j < 0 {
			return bad
		}
		f.rep, f.pos = j, f.pos+1
		if int(f.pos) == len(n.props[j].key) {
			f.cur, f.count, f.st = j, j+1, oColon
		}
		return ok
	case oColon:
		if c != ':' {
			return bad
		}
		f.st = oValue
		return ok
	case oValue:
		child := n.free
		if child == nil {
			child = n.props[f.cur].n
		}
		f.st = oIn // before start: the push may move the stack
		return r.start(child, c)
	case oAfter:
		switch c {
		case ',':
			if n.free == nil && r.keyCand(f, L, -1, 0, '"') < 0 {
				return bad
			}
			f.st = oComma
			return ok
		case '}':
			if n.free == nil && n.nextReq[f.count] != len(n.props) {
				return bad
			}
			r.pop()
			return ok
		}
	}
	return bad
}

func (r *rec) feedArray(f *frame, c byte) result {
	n := f.n
	L := len(r.stack) - 1
	if res := gap(f, c); res != ended {
		return res
	}
	switch f.st {
	case aOpen:
		if c == ']' {
			if n.minItems > 0 {
				return bad
			}
			r.pop()
			return ok
		}
		if n.maxItems == 0 {
			return bad
		}
		fallthrough
	case aComma:
		if !fits(L, n.items) {
			return bad
		}
		f.count++
		f.st = aIn
		return r.start(n.items, c)
	case aAfter:
		switch c {
		case ',':
			if (n.maxItems >= 0 && int(f.count) >= n.maxItems) || !fits(L, n.items) {
				return bad
			}
			f.st = aComma
			return ok
		case ']':
			if int(f.count) < n.minItems {
				return bad
			}
			r.pop()
			return ok
		}
	}
	return bad
}

func (r *rec) feedString(f *frame, c byte) result {
	n := f.n
	full := n.maxLen >= 0 && int(f.count) >= n.maxLen
	switch f.st {
	case sBody:
		switch {
		case c == '"':
			if int(f.count) < n.minLen {
				return bad
			}
			r.pop()
			return ok
		case c == '\\':
			if full {
				return bad
			}
			f.count++
			f.st = sEsc
			return ok
		case c < 0x20:
			return bad
		case c < 0x80:
			if full {
				return bad
			}
			f.count++
			return ok
		}
		// A UTF-8 lead byte: how many continuation bytes, and the range of
		// the first (which excludes overlong forms, surrogates and > U+10FFFF).
		lo, hi := byte(0x80), byte(0xBF)
		var need uint8
		switch {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c == 0xE0:
			need, lo = 2, 0xA0
		case c == 0xED:
			need, hi = 2, 0x9F
		case c >= 0xE1 && c <= 0xEF:
			need = 2
		case c == 0xF0:
			need, lo = 3, 0x90
		case c >= 0xF1 && c <= 0xF3:
			need = 3
		case c == 0xF4:
			need, hi = 3, 0x8F
		default:
			return bad
		}
		if full {
			return bad
		}
		f.count++
		f.need, f.lo, f.hi, f.st = need, lo, hi, sCont
		return ok
	case sCont:
		if c < f.lo || c > f.hi {
			return bad
		}
		f.need--
		f.lo, f.hi = 0x80, 0xBF
		if f.need == 0 {
			f.st = sBody
		}
		return ok
	case sEsc:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			f.st = sBody
			return ok
		case 'u':
			f.st, f.need, f.lo = sHex, 0, 0
			return ok
		}
		return bad
	case sHex:
		if !isHex(c) {
			return bad
		}
		// No escaped surrogates (\uD800-\uDFFF): a lone one is not text, and
		// a pair would count as two runes here but one in the value.
		if f.need == 1 && f.lo == 1 && c >= '8' { // 8-9, a-f, A-F
			return bad
		}
		f.lo = 0
		if f.need == 0 && (c == 'd' || c == 'D') {
			f.lo = 1
		}
		f.need++
		if f.need == 4 {
			f.st, f.need = sBody, 0
		}
		return ok
	}
	return bad
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// feedNumber reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? within
// the spec's digit caps and bounds.
func feedNumber(f *frame, c byte) result {
	sp := &f.n.num
	switch f.st {
	case nStart, nSign:
		switch {
		case c == '-' && f.st == nStart:
			f.neg, f.st = true, nSign
		case c == '0':
			f.st, f.nInt = nZero, 1
		case c >= '1' && c <= '9':
			f.st, f.nInt, f.ival = nInt, 1, int64(c-'0')
		default:
			return bad
		}
		return feasible(f, sp)
	case nZero, nInt:
		switch {
		case isDigit(c) && f.st == nInt:
			if int(f.nInt) >= sp.intCap {
				break
			}
			f.nInt++
			f.ival = f.ival*10 + int64(c-'0')
			return feasible(f, sp)
		case c == '.' && !sp.integer:
			f.st = nDot
			return feasible(f, sp)
		case (c == 'e' || c == 'E') && sp.exp:
			f.st = nE
			return ok
		}
	case nDot:
		if !isDigit(c) {
			return bad
		}
		f.st, f.nFrac, f.fval = nFrac, 1, int64(c-'0')
		return feasible(f, sp)
	case nFrac:
		switch {
		case isDigit(c):
			if int(f.nFrac) >= sp.fracCap {
				break
			}
			f.nFrac++
			f.fval = f.fval*10 + int64(c-'0')
			return feasible(f, sp)
		case (c == 'e' || c == 'E') && sp.exp:
			f.st = nE
			return ok
		}
	case nE:
		switch {
		case c == '+' || c == '-':
			f.st = nESign
			return ok
		case isDigit(c):
			f.st, f.nExp = nExp, 1
			return ok
		}
		return bad
	case nESign:
		if !isDigit(c) {
			return bad
		}
		f.st, f.nExp = nExp, 1
		return ok
	case nExp:
		if isDigit(c) && int(f.nExp) < expCap {
			f.nExp++
			return ok
		}
	}
	if numberComplete(f) {
		return ended
	}
	return bad
}

// numberComplete says whether the number read so far is a whole number in
// bounds.
func numberComplete(f *frame) bool {
	switch f.st {
	case nZero, nInt, nFrac:
	case nExp:
		return true // exponents only come unbounded
	default:
		return false
	}
	sp := &f.n.num
	if !sp.bounded {
		return true
	}
	v := f.ival*pow10[sp.fracCap] + f.fval*pow10[sp.fracCap-int(f.nFrac)]
	if f.neg {
		v = -v
	}
	return v >= sp.lo && v <= sp.hi
}

// feasible says (ok or bad) whether some completion of the number read so
// far is in bounds: the completions' values, in units of 10^-fracCap, form
// one interval per count of integer digits still to come.
func feasible(f *frame, sp *numSpec) result {
	if !sp.bounded {
		return ok
	}
	S := pow10[sp.fracCap]
	hit := func(a, b int64) bool { // magnitudes [a, b]
		if f.neg {
			a, b = -b, -a
		}
		return a <= sp.hi && b >= sp.lo
	}
	var found bool
	switch f.st {
	case nSign:
		found = hit(0, pow10[sp.intCap]*S-1)
	case nZero:
		found = hit(0, S-1)
	case nInt:
		for k := 0; int(f.nInt)+k <= sp.intCap && !found; k++ {
			base := f.ival * pow10[k]
			found = hit(base*S, (base+pow10[k])*S-1)
		}
	case nDot:
		found = hit(f.ival*S, f.ival*S+S-1)
	case nFrac:
		unit := pow10[sp.fracCap-int(f.nFrac)]
		v := f.ival*S + f.fval*unit
		found = hit(v, v+unit-1)
	}
	if found {
		return ok
	}
	return bad
}

// feedLiteral matches one of the node's literals byte by byte; rep is a
// literal matched so far (its first pos bytes are the bytes read).
func (r *rec) feedLiteral(f *frame, c byte) result {
	lits := f.n.lits
	var sofar string
	if f.rep >= 0 {
		sofar = lits[f.rep][:f.pos]
	}
	for k, l := range lits {
		if len(l) > int(f.pos) && l[f.pos] == c && l[:f.pos] == sofar {
			f.rep, f.pos = int32(k), f.pos+1
			if literalComplete(f) && !literalLonger(f) {
				r.pop()
			}
			return ok
		}
	}
	if f.rep >= 0 && literalComplete(f) {
		return ended
	}
	return bad
}

// literalComplete says whether the bytes read are a whole literal.
func literalComplete(f *frame) bool {
	sofar := f.n.lits[f.rep][:f.pos]
	for _, l := range f.n.lits {
		if l == sofar {
			return true
		}
	}
	return false
}

// literalLonger says whether a longer literal continues the bytes read
// (only numbers do: 1 and 12).
func literalLonger(f *frame) bool {
	sofar := f.n.lits[f.rep][:f.pos]
	for _, l := range f.n.lits {
		if len(l) > len(sofar) && l[:len(sofar)] == sofar {
			return true
		}
	}
	return false
}

// complete says whether the input so far is a whole value: the root done,
// or a number or literal at the top level that may end here.
func (r *rec) complete() bool {
	switch len(r.stack) {
	case 1:
		return r.stack[0].st == rDone
	case 2:
		f := &r.stack[1]
		switch f.kind {
		case fNumber:
			return numberComplete(f)
		case fLiteral:
			return f.rep >= 0 && literalComplete(f)
		}
	}
	return false
}

// done says whether the value is complete and nothing may follow.
func (r *rec) done() bool {
	return len(r.stack) == 1 && r.stack[0].st == rDone
}
