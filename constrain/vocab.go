package constrain

import (
	"bytes"
	"math/bits"
	"slices"
)

// Vocab is a vocabulary's token bytes as a trie: a step's mask walks the
// trie once, each shared prefix stepped once, and a subtree the recognizer
// cannot enter is skipped whole. It is read-only once built, so one Vocab
// serves every generation of a model.
type Vocab struct {
	toks  [][]byte
	nodes []tnode
	order []int32 // token ids sorted by bytes: a trie node's tokens are order[lo:hi]
	// plain[i] is the set of plain tokens (see tnode.plain) of at most
	// plainAt[i] runes; the last holds them all. Inside a string with room
	// for r more runes a step's mask starts as the largest such set within
	// r, and the walk skips the plain subtrees it covers: setting their bits
	// one by one was most of a step's cost.
	plain   [][]uint64
	plainAt []int
}

type tnode struct {
	kids, nkids int32 // children: nodes[kids : kids+nkids]
	lo, end, hi int32 // order[lo:end] end at this node; order[lo:hi] is its subtree
	runes       int32 // the most runes of a token of the subtree
	c           byte  // the byte that leads here
	// plain: every token of the subtree is string text without quotes or
	// escapes (valid UTF-8 but maybe a cut last character), so inside a
	// string with room for its runes the whole subtree is allowed unwalked.
	plain bool
}

// NewVocab builds the trie of tokens (by id). A token with no bytes (nil:
// a special token, or EOS, which the caller allows itself) is never allowed.
func NewVocab(tokens [][]byte) *Vocab {
	v := &Vocab{toks: tokens}
	for id, t := range tokens {
		if len(t) > 0 {
			v.order = append(v.order, int32(id))
		}
	}
	slices.SortStableFunc(v.order, func(a, b int32) int { return bytes.Compare(tokens[a], tokens[b]) })
	plain := make([]bool, len(tokens))
	runes := make([]int32, len(tokens))
	for _, id := range v.order {
		plain[id], runes[id] = plainText(tokens[id])
	}
	v.nodes = []tnode{{hi: int32(len(v.order))}}
	v.build(0, 0, plain, runes)
	most := 0
	for id := range tokens {
		if plain[id] {
			most = max(most, int(runes[id]))
		}
	}
	for r := 0; r < most; r += max(1, r/3) {
		v.plainAt = append(v.plainAt, r)
	}
	v.plainAt = append(v.plainAt, most)
	words := (len(tokens) + 63) / 64
	for _, r := range v.plainAt {
		set := make([]uint64, words)
		for id := range tokens {
			if plain[id] && int(runes[id]) <= r {
				set[id>>6] |= 1 << (id & 63)
			}
		}
		v.plain = append(v.plain, set)
	}
	return v
}

// Size is the number of token ids.
func (v *Vocab) Size() int { return len(v.toks) }

// build makes node ni's children, whose tokens share depth+1 leading bytes;
// each node's children are contiguous in nodes.
func (v *Vocab) build(ni int32, depth int, plain []bool, runes []int32) {
	lo, hi := v.nodes[ni].lo, v.nodes[ni].hi
	e := lo
	for e < hi && len(v.toks[v.order[e]]) == depth {
		e++
	}
	allPlain, most := true, int32(0)
	for _, id := range v.order[lo:e] {
		allPlain = allPlain && plain[id]
		most = max(most, runes[id])
	}
	first := int32(len(v.nodes))
	for i := e; i < hi; {
		c := v.toks[v.order[i]][depth]
		j := i
		for j < hi && v.toks[v.order[j]][depth] == c {
			j++
		}
		v.nodes = append(v.nodes, tnode{lo: i, hi: j, c: c})
		i = j
	}
	last := int32(len(v.nodes))
	for k := first; k < last; k++ {
		v.build(k, depth+1, plain, runes)
		allPlain = allPlain && v.nodes[k].plain
		most = max(most, v.nodes[k].runes)
	}
	nd := &v.nodes[ni]
	nd.end, nd.kids, nd.nkids, nd.plain, nd.runes = e, first, last-first, allPlain, most
}

// plainText says whether a token is string text that needs no quote or
// escape, read from a string's clean state, and how many runes it begins.
func plainText(t []byte) (bool, int32) {
	r := rec{stack: []frame{{kind: fRoot, st: rIn}, {n: anyString, kind: fString}}}
	for _, c := range t {
		if c == '"' || c == '\\' || !r.step(c) {
			return false, 0
		}
	}
	return true, r.stack[1].count
}

// Matcher is one generation's place in a Grammar. It is not safe for
// concurrent use.
type Matcher struct {
	v     *Vocab
	r     rec
	spare []frame
	bufs  [][]frame // the walk's states, one per trie depth
	mask  []uint64
	// fast: the walk starts in a string's clean state, with count runes
	// read and room up to maxLen (< 0: no bound)
	fast bool
	room int // runes the string may still take; < 0: no bound
	// covered: the mask began with the plain tokens of at most covered runes
	covered int
}

// Matcher starts a generation over the vocabulary v.
func (g *Grammar) Matcher(v *Vocab) *Matcher {
	return &Matcher{v: v, r: newRec(g.root, make([]frame, 0, 8))}
}

// Fill sets the bit (id%64 of word id/64) of every token whose bytes keep
// the JSON completable, clearing the others, and returns how many it set.
// EOS is not among them: the caller allows it when CanEnd.
func (m *Matcher) Fill(mask []uint64) int {
	clear(mask)
	m.mask = mask
	top := &m.r.stack[len(m.r.stack)-1]
	m.fast = top.kind == fString && top.st == sBody
	if m.fast {
		m.room = -1
		if top.n.maxLen >= 0 {
			m.room = top.n.maxLen - int(top.count)
		}
		i := len(m.v.plainAt) - 1
		for m.room >= 0 && m.v.plainAt[i] > m.room {
			i--
		}
		copy(mask, m.v.plain[i])
		m.covered = m.v.plainAt[i]
	}
	m.walk(0, m.r.stack, 0)
	n := 0
	for _, w := range mask {
		n += bits.OnesCount64(w)
	}
	return n
}

func (m *Matcher) walk(ni int32, state []frame, depth int) {
	if len(m.bufs) <= depth {
		m.bufs = append(m.bufs, make([]frame, 0, max(8, len(state)+2)))
	}
	nd := m.v.nodes[ni]
	for k := nd.kids; k < nd.kids+nd.nkids; k++ {
		kid := &m.v.nodes[k]
		if m.fast && kid.plain {
			if int(kid.runes) <= m.covered {
				continue
			}
			if m.room < 0 || int(kid.runes) <= m.room {
				m.set(m.v.order[kid.lo:kid.hi])
				continue
			}
		}
		r := rec{stack: append(m.bufs[depth][:0], state...)}
		live := r.step(kid.c)
		m.bufs[depth] = r.stack[:0] // keep what the step grew
		if !live {
			continue
		}
		m.set(m.v.order[kid.lo:kid.end])
		if kid.nkids > 0 {
			m.walk(k, r.stack, depth+1)
		}
	}
}

func (m *Matcher) set(ids []int32) {
	for _, id := range ids {
		if int(id>>6) < len(m.mask) {
			m.mask[id>>6] |= 1 << (id & 63)
		}
	}
}

// Accept advances past a token; false (the state unchanged) if its bytes
// are not allowed.
func (m *Matcher) Accept(id int) bool {
	if id < 0 || id >= len(m.v.toks) || len(m.v.toks[id]) == 0 {
		return false
	}
	return m.AcceptBytes(m.v.toks[id])
}

// AcceptBytes advances past bytes; false (the state unchanged) if they are
// not allowed.
func (m *Matcher) AcceptBytes(b []byte) bool {
	r := rec{stack: append(m.spare[:0], m.r.stack...)}
	for _, c := range b {
		if !r.step(c) {
			m.spare = r.stack[:0]
			return false
		}
	}
	m.spare, m.r.stack = m.r.stack[:0], r.stack
	return true
}

// CanEnd says whether the text so far is a whole value (EOS may come).
func (m *Matcher) CanEnd() bool { return m.r.complete() }

// Done says whether the value is complete and nothing may follow it: the
// generation stops.
func (m *Matcher) Done() bool { return m.r.done() }
