package assemble

import (
	"encoding/hex"
	"hash"
)

// frozenPrefix is the part of the stream no later call changes: items
// [0, frozen) are whole messages before the message of the last item that
// precedes the first item a rebase could rewrite (or an assistant message
// waiting for a tool result), so neither they nor their bytes change.
// Each call's scans start at frozen; frozenMsgs and frozenTok are the
// messages and the tokens (head included) before it, frozenLast its last
// item's rendering, and hashed the SHA-256 state of the bytes before it.
// A call moves frozen to nextFrozen (found by the call before, so that
// the caller can still read that call's messages) and, with
// Options.Release, drops those items from memory: they are in the
// context commits.
type frozenPrefix struct {
	frozen, nextFrozen int
	frozenMsgs         int
	frozenTok          int
	frozenLast         *frag
	gone, goneMsgs     int // the items and messages released (frozen, or less when Release was turned off)
	hashed             hash.Hash
	hashedOff          int // bytes of the rendering written to hashed
}

// stableMessages counts the messages of s before the first item a rebase
// could rewrite (see Assembled.Stable); a message that item continues is
// not counted.
func (f *frozenPrefix) stableMessages(s *stream, rewritable func(*item) bool) int {
	n := f.frozenMsgs
	prev := f.frozenLast
	for _, it := range s.items[f.frozen:] {
		if rewritable(it) {
			if it.f.joins(prev) {
				n--
			}
			return n
		}
		if !it.f.joins(prev) {
			n++
		}
		prev = it.f
	}
	return n
}

// stableTokens is the tokens of s before the first item a rebase could
// rewrite: where a breakpoint at the end of the stable messages caches up
// to (approximately: a message that item continues is counted whole).
func (f *frozenPrefix) stableTokens(s *stream, rewritable func(*item) bool) int {
	n := f.frozenTok
	for _, it := range s.items[f.frozen:] {
		if rewritable(it) {
			return n
		}
		n += it.tokens
	}
	return s.tokens
}

// boundary returns where the frozen prefix of s can end after this call:
// the start of the message holding the last item before the first one
// that can change (open: one a rebase could rewrite, or an assistant
// message with a tool call not listed yet, whose result may make its input
// collapsible). Items before it never change, and neither does where their
// messages end: an item a rebase writes at the first open item's place
// may join the message before it, which is not frozen.
func (f *frozenPrefix) boundary(s *stream, open func(*item) bool) int {
	r := len(s.items)
	for i := f.frozen; i < len(s.items); i++ {
		if open(s.items[i]) {
			r = i
			break
		}
	}
	g := r - 1
	for g > f.frozen && s.items[g].f.joins(s.items[g-1].f) {
		g--
	}
	return max(g, f.frozen)
}

// advance moves the frozen prefix of s to nextFrozen: it counts the
// messages and tokens it adds, hashes their bytes and, with release,
// drops the items from memory (forget is told of each first) and the
// released bytes once they are half the buffer.
func (f *frozenPrefix) advance(s *stream, release bool, forget func(i int, it *item)) {
	g := min(f.nextFrozen, len(s.items))
	if g <= f.frozen {
		return
	}
	for i := f.frozen; i < g; i++ {
		it := s.items[i]
		if !it.f.joins(f.frozenLast) {
			f.frozenMsgs++
		}
		f.frozenTok += it.tokens
		f.frozenLast = it.f
		if release {
			forget(i, it)
			s.items[i] = nil
		}
	}
	f.frozen = g
	if release {
		f.gone, f.goneMsgs = f.frozen, f.frozenMsgs
	}
	end := s.bufBase + len(s.buf)
	if g < len(s.offs) {
		end = s.offs[g]
	}
	f.hashed.Write(s.buf[f.hashedOff-s.bufBase : end-s.bufBase])
	f.hashedOff = end
	// The released bytes leave memory once they are half the buffer (a
	// copy of what follows them; the rendering's offsets stay absolute).
	if drop := end - s.bufBase; release && drop > 0 && drop >= cap(s.buf)/2 {
		s.buf = append(make([]byte, 0, len(s.buf)-drop+4096), s.buf[drop:]...)
		s.bufBase = end
	}
}

// digest returns the SHA-256, in hex, of the bytes of s: the frozen
// prefix's bytes were hashed once (advance), and only the rest is hashed
// here.
func (f *frozenPrefix) digest(s *stream) string {
	h, err := f.hashed.(hash.Cloner).Clone()
	if err != nil {
		return digest(s.buf) // unreachable: SHA-256 clones, and nothing is released without it
	}
	h.Write(s.buf[f.hashedOff-s.bufBase:])
	return hex.EncodeToString(h.Sum(nil))
}

// unanswered reports whether it is an assistant message with a tool call
// whose result the stream has not listed.
func (a *Assembler) unanswered(it *item) bool {
	if it.kind != kAssistant {
		return false
	}
	for _, c := range it.calls {
		if !a.listed[c.ID] {
			return true
		}
	}
	return false
}

// advanceFrozen moves the Assembler's frozen prefix (LayoutStream, with
// its head final: a lean head that will switch changes once more), and
// with Options.Release forgets the tool-call positions of the assistant
// messages it drops, which nothing reads again.
func (a *Assembler) advanceFrozen() {
	if a.o.Layout != LayoutStream || a.switches() {
		return
	}
	a.frozenPrefix.advance(&a.stream, a.o.Release, func(i int, it *item) {
		for _, c := range it.calls {
			if a.callAt[c.ID] == i {
				delete(a.callAt, c.ID)
			}
		}
	})
}
