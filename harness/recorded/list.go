package recorded

import (
	"crypto/sha256"
	"encoding"
	"strings"
)

// A reqList is a rebuilt request's system prompt and messages as they
// stand after some events, kept so that a request one block longer costs
// one block: the messages are a list from the last to the first, each
// node immutable, so the requests of one conversation share every
// message they have in common. Digests and positions are those
// renderer.digest gives for the same events: a message's digest is the
// SHA-256 of its role and its blocks' sums, kept as a running hash.
type reqList struct {
	sys  *sysPart
	last *msgNode
	// kept, when set, keeps the blocks themselves, the last first (the
	// one without a block ends the list): a list that rebuilds one call's
	// request (RequestOf) writes its body from them. The blocks of an
	// import's lists are not kept.
	kept *blockNode
}

// blockNode is one kept block of a request, after the ones before it.
type blockNode struct {
	prev *blockNode
	b    *block
}

// keptList is an empty request that keeps its blocks.
func keptList() reqList { return reqList{kept: &blockNode{}} }

// sysPart is the system prompt's blocks.
type sysPart struct {
	h     []byte // the running hash of the blocks' sums
	bytes int    // the blocks' JSON with the commas between them
	dig   string
}

// msgNode is one message of a request.
type msgNode struct {
	prev *msgNode
	n    int // its index among the request's messages, from 0
	role string
	h    []byte // the running hash of its role and blocks' sums
	size int    // its bytes: {"role":...,"content":[...]}
	rel  int    // where it ends, from the start of the first message
	dig  string // its digest, once asked for
}

func hashOn(state []byte, parts ...[]byte) []byte {
	h := sha256.New()
	if state != nil {
		_ = h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state)
	}
	for _, p := range parts {
		h.Write(p)
	}
	b, _ := h.(encoding.BinaryMarshaler).MarshalBinary()
	return b
}

func hashSum(state []byte) string {
	h := sha256.New()
	_ = h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state)
	return string(h.Sum(nil)[:12])
}

// validHash tells whether b is a running hash hashOn wrote.
func validHash(b []byte) bool {
	return sha256.New().(encoding.BinaryUnmarshaler).UnmarshalBinary(b) == nil
}

func (s *sysPart) digest() string {
	if s.dig == "" {
		s.dig = "s" + hashSum(s.h)
	}
	return s.dig
}

func (m *msgNode) digest() string {
	if m.dig == "" {
		m.dig = hashSum(m.h)
	}
	return m.dig
}

func relAfter(prev *msgNode) int {
	if prev == nil {
		return 0
	}
	return prev.rel + 1
}

// add returns l with block b sent after it (b nil: l).
func (l reqList) add(b *block) reqList {
	if b == nil {
		return l
	}
	if l.kept != nil {
		l.kept = &blockNode{prev: l.kept, b: b}
	}
	if b.role == "system" {
		if l.sys == nil {
			l.sys = &sysPart{h: hashOn(nil, b.sum[:]), bytes: len(b.json)}
		} else {
			l.sys = &sysPart{h: hashOn(l.sys.h, b.sum[:]), bytes: l.sys.bytes + 1 + len(b.json)}
		}
		return l
	}
	m := l.last
	if m != nil && m.role == b.role {
		nm := &msgNode{prev: m.prev, n: m.n, role: m.role, h: hashOn(m.h, b.sum[:]), size: m.size + 1 + len(b.json)}
		nm.rel = relAfter(nm.prev) + nm.size
		l.last = nm
		return l
	}
	nm := &msgNode{prev: m, role: b.role, h: hashOn(nil, []byte(b.role), b.sum[:]),
		size: len(`{"role":"","content":[`) + len(b.role) + len(b.json) + len(`]}`)}
	if m != nil {
		nm.n = m.n + 1
	}
	nm.rel = relAfter(m) + nm.size
	l.last = nm
	return l
}

// count is the number of digests the request has (the system prompt's
// counts as one).
func (l reqList) count() int {
	n := 0
	if l.sys != nil {
		n++
	}
	if l.last != nil {
		n += l.last.n + 1
	}
	return n
}

// layout gives where the system prompt ends, where the messages start,
// and the body's size.
func (l reqList) layout() (sysEnd, base, total int) {
	pos := len(`{`)
	if l.sys != nil {
		pos += len(`"system":[`) + l.sys.bytes
		sysEnd = pos
		pos += len(`],`)
	}
	pos += len(`"messages":[`)
	base = pos
	if l.last != nil {
		pos += l.last.rel
	}
	return sysEnd, base, pos + len(`]}`)
}

// endAt is where digest k of the request ends in its body.
func (l reqList) endAt(k int) int {
	sysEnd, base, _ := l.layout()
	if l.sys != nil {
		if k == 0 {
			return sysEnd
		}
		k--
	}
	m := l.last
	for m != nil && m.n > k {
		m = m.prev
	}
	if m == nil {
		return 0
	}
	return base + m.rel
}

// digests lists the request's digests and where each ends, as
// renderer.digest does.
func (l reqList) digests() ([]string, []int) {
	n := l.count()
	msgs, ends := make([]string, n), make([]int, n)
	sysEnd, base, _ := l.layout()
	off := 0
	if l.sys != nil {
		msgs[0], ends[0] = l.sys.digest(), sysEnd
		off = 1
	}
	for m := l.last; m != nil; m = m.prev {
		msgs[off+m.n], ends[off+m.n] = m.digest(), base+m.rel
	}
	return msgs, ends
}

// shared is the number of leading digests requests c and p have in
// common. Walking back from the ends, it stops at the first message node
// both share: everything before it is the same.
func shared(c, p reqList) int {
	switch {
	case c.sys != nil && p.sys != nil:
		if c.sys.digest() != p.sys.digest() {
			return 0
		}
		return 1 + sharedMsgs(c.last, p.last)
	case c.sys != nil || p.sys != nil:
		// A system prompt's digest against a message's, or nothing.
		return 0
	}
	return sharedMsgs(c.last, p.last)
}

func sharedMsgs(a, b *msgNode) int {
	for a != nil && b != nil && a.n != b.n {
		if a.n > b.n {
			a = a.prev
		} else {
			b = b.prev
		}
	}
	if a == nil || b == nil {
		return 0
	}
	n := a.n + 1
	for a != nil && a != b {
		if a.digest() != b.digest() {
			n = a.n
		}
		a, b = a.prev, b.prev
	}
	return n
}

// sharedSlices is shared for requests given as digests.
func sharedSlices(c, p []string) int {
	n := 0
	for n < len(c) && n < len(p) && c[n] == p[n] {
		n++
	}
	return n
}

// systemChanged tells whether c begins with a system prompt other than
// the one p begins with (p having anything).
func systemChanged(c, p []string) bool {
	return len(c) > 0 && len(p) > 0 && strings.HasPrefix(c[0], "s") && c[0] != p[0]
}
