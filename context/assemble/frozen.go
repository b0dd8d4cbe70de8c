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

// stableMessages counts the messages before the first item a rebase could
// rewrite (see Assembled.Stable); a message that item continues is not
// counted.
func (a *Assembler) stableMessages() int {
	n := a.frozenMsgs
	prev := a.frozenLast
	for _, it := range a.items[a.frozen:] {
		if a.rewritable(it) {
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

// stableTokens is the tokens before the first item a rebase could
// rewrite: where a breakpoint at the end of the stable messages caches up
// to (approximately: a message that item continues is counted whole).
func (a *Assembler) stableTokens() int {
	n := a.frozenTok
	for _, it := range a.items[a.frozen:] {
		if a.rewritable(it) {
			return n
		}
		n += it.tokens
	}
	return a.tokens
}

// frozenBoundary returns where the frozen prefix can end after this call:
// the start of the message holding the last item before the first one a
// rebase could rewrite or an assistant message with a tool call not
// listed yet (its result may make its input collapsible). Items before it
// never change, and neither does where their messages end: an item a
// rebase writes at the first rewritable item's place may join the message
// before it, which is not frozen.
func (a *Assembler) frozenBoundary() int {
	r := len(a.items)
	for i := a.frozen; i < len(a.items); i++ {
		if it := a.items[i]; a.rewritable(it) || a.unanswered(it) {
			r = i
			break
		}
	}
	g := r - 1
	for g > a.frozen && a.items[g].f.joins(a.items[g-1].f) {
		g--
	}
	return max(g, a.frozen)
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

// advanceFrozen moves the frozen prefix to nextFrozen: it counts the
// messages and tokens it adds, hashes their bytes and, with
// Options.Release, drops the items (and the tool-call positions of the
// assistant messages among them, which nothing reads again).
func (a *Assembler) advanceFrozen() {
	g := min(a.nextFrozen, len(a.items))
	if a.o.Layout != LayoutStream || g <= a.frozen || a.switches() {
		return // a lean head changes once more: its bytes are not final
	}
	for i := a.frozen; i < g; i++ {
		it := a.items[i]
		if !it.f.joins(a.frozenLast) {
			a.frozenMsgs++
		}
		a.frozenTok += it.tokens
		a.frozenLast = it.f
		if a.o.Release {
			for _, c := range it.calls {
				if a.callAt[c.ID] == i {
					delete(a.callAt, c.ID)
				}
			}
			a.items[i] = nil
		}
	}
	a.frozen = g
	if a.o.Release {
		a.gone, a.goneMsgs = a.frozen, a.frozenMsgs
	}
	end := a.bufBase + len(a.buf)
	if g < len(a.offs) {
		end = a.offs[g]
	}
	a.hashed.Write(a.buf[a.hashedOff-a.bufBase : end-a.bufBase])
	a.hashedOff = end
	// The released bytes leave memory once they are half the buffer (a
	// copy of what follows them; the rendering's offsets stay absolute).
	if drop := end - a.bufBase; a.o.Release && drop > 0 && drop >= cap(a.buf)/2 {
		a.buf = append(make([]byte, 0, len(a.buf)-drop+4096), a.buf[drop:]...)
		a.bufBase = end
	}
}

// bytesDigest returns the SHA-256, in hex, of c's bytes: in
// LayoutStream, where they are the stream's, the frozen prefix's bytes
// were hashed once (advanceFrozen), and only the rest is hashed here.
func (a *Assembler) bytesDigest(c *Assembled) string {
	if c.Layout != LayoutStream {
		return digest(c.Bytes)
	}
	h, err := a.hashed.(hash.Cloner).Clone()
	if err != nil {
		return digest(c.Bytes)
	}
	h.Write(a.buf[a.hashedOff-a.bufBase:])
	return hex.EncodeToString(h.Sum(nil))
}
