package replay

import (
	"bytes"
	"hash/maphash"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"

	"github.com/ctxstore/ctxstore/context/assemble"
)

// The prices of the cost model, in base-input tokens: a token written to
// the prefix cache (every token after the cached prefix, since each call
// caches its whole context) costs 1.25, a token read from it 0.1; an
// uncached token the harness did not write to the cache costs 1 (recorded
// usage only).
const (
	WritePrice = 1.25
	ReadPrice  = 0.1
	InputPrice = 1.0
)

// EmptyHead is the head every renderer starts with when it has no system
// prompt and no tools: what the transcript does not show (the harness's
// real system prompt and tool definitions) is the calibrated overhead
// instead (Calibration.Overhead).
const EmptyHead = "<<system>>\n\n<<tools>>\n"

// Counter counts the tokens of rendered contexts with one tokenizer, the
// same for every strategy. A context is counted as the sum of its segments,
// each starting at a "<<" marker at the start of a line (a message or block
// header), and each distinct segment is tokenized once: a BPE tokenizer
// makes a token boundary at these markers in practice, so the sum is the
// whole count up to a few tokens per segment, and replaying a session costs
// time proportional to what is new at each call.
type Counter struct {
	tok  assemble.Tokenizer
	seed maphash.Seed
	mu   sync.Mutex
	memo map[uint64]int32
}

// NewCounter returns a Counter over tok (assemble.BytesTokenizer when nil).
func NewCounter(tok assemble.Tokenizer) *Counter {
	if tok == nil {
		tok = assemble.BytesTokenizer{}
	}
	return &Counter{tok: tok, seed: maphash.MakeSeed(), memo: map[uint64]int32{}}
}

// Tokenizer returns the tokenizer.
func (c *Counter) Tokenizer() assemble.Tokenizer { return c.tok }

// segment returns the tokens of one segment, memoized by content.
func (c *Counter) segment(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	h := maphash.Bytes(c.seed, b) ^ uint64(len(b))*0x9e3779b97f4a7c15
	c.mu.Lock()
	n, ok := c.memo[h]
	c.mu.Unlock()
	if ok {
		return int(n)
	}
	k := c.tok.Count(string(b))
	c.mu.Lock()
	c.memo[h] = int32(k)
	c.mu.Unlock()
	return k
}

// Count returns the tokens of b, segment by segment.
func (c *Counter) Count(b []byte) int {
	n := 0
	bounds := appendBounds(nil, b, 0)
	for i, s := range bounds {
		e := len(b)
		if i+1 < len(bounds) {
			e = bounds[i+1]
		}
		n += c.segment(b[s:e])
	}
	return n
}

// marker starts a segment: "<<" at the start of a line.
var marker = []byte("\n<<")

// appendBounds appends the segment starts of b at or after from (from must
// be a segment start: 0, or just after a newline before "<<").
func appendBounds(out []int, b []byte, from int) []int {
	out = append(out, from)
	for i := from; ; {
		j := bytes.Index(b[i:], marker)
		if j < 0 {
			return out
		}
		p := i + j + 1
		if p > from {
			out = append(out, p)
		}
		i = p
	}
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	const chunk = 4096
	i := 0
	for i+chunk <= n && bytes.Equal(a[i:i+chunk], b[i:i+chunk]) {
		i += chunk
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// Step is what a strategy sends for one call.
type Step struct {
	// Bytes is the rendered context (system prompt, tools, messages); prefix
	// caching is judged on it. It must not change after it is returned.
	Bytes []byte
	// HeadLen is the length of the fixed head at the start of Bytes (the
	// system prompt and tool list): left out of the history tokens.
	HeadLen int
	// Recorded, instead of Bytes, is what the harness reported it sent and
	// paid for this call.
	Recorded *conversation.Usage
	// Reason is the strategy's own note on the call (why it rebased, what
	// it cleared).
	Reason string
	// Hidden tells whether the output of an earlier tool call is not in
	// this context in full (cleared, collapsed); nil: everything is shown.
	Hidden func(toolCallID string) bool
	// Reachable tells whether a hidden output can be brought back by the
	// model (activation); nil: never.
	Reachable func(toolCallID string) bool
	// Breakpoints, when not nil, are where the strategy puts Anthropic's
	// cache_control breakpoints instead of the harness: byte offsets into
	// Bytes, each marking the block that ends at or contains it (at most
	// AnthropicMaxBreakpoints count; the last ones are kept).
	Breakpoints []int
	// HeadTTL, when longer than the TTL, is the lifetime of the breakpoint
	// at the end of the head (Anthropic's "ttl": "1h") at this call, set by
	// a strategy that places its own breakpoints (ctxstore's, as its Pi
	// extension does: the call's assemble.Assembled.HeadTTL, once the
	// session has paused): the head is read after an idle gap within the
	// lifetime of an earlier such breakpoint, and written at
	// LongTTLWritePrice; what follows it keeps the TTL.
	HeadTTL time.Duration
	// proxied tells that Breakpoints are those ctxstore's Claude Code
	// proxy sends (managed mode): the proxy's head lifetime rule applies
	// to them (Env.Proxy).
	proxied bool
	// Stale is the tokens of Bytes (the counter's units) that a call after
	// the cache expired would not send again: ctxstore's strategies rebase
	// then, dropping their stale content. It weighs the warm requests
	// (missTokens, cachewarm.Budget).
	Stale int
}

// raw is one call measured in the tokenizer's units, before calibration.
type raw struct {
	context  int  // tokens of Bytes
	head     int  // tokens of Bytes[:HeadLen]
	cached   int  // tokens of the cached prefix of Bytes (0 when cold)
	warm     bool // the previous call is within the TTL
	extended bool // Bytes extends the previous call's bytes
	lcp      int  // bytes shared with the previous call
	// sameHead: the head (Bytes[:HeadLen]) is the previous call's (false
	// for the first).
	sameHead bool
	// blocks are the context's blocks for the provider cache models: the
	// head, then one per segment (a closing "<</" segment joins the block
	// before it), with raw token ends and prefix hashes.
	blocks []rawBlock
}

// rawBlock is one block of a measured context, in raw tokens.
type rawBlock struct {
	end      int    // raw tokens through the block
	byteEnd  int    // bytes through the block
	hash     uint64 // prefix hash through the block
	user     bool
	msgStart bool
}

// meter measures the calls of one strategy in raw tokens: the context, its
// head, and the prefix it shares with the previous call's bytes.
type meter struct {
	c *Counter

	prev       []byte
	prevBounds []int    // segment starts of prev
	prevCum    []int    // tokens of prev before each segment start
	prevHash   []uint64 // prefix hash of prev through each segment
	prevTime   time.Time
	calls      int
}

func newMeter(c *Counter) *meter { return &meter{c: c} }

// measure counts b and its cached prefix; gap is the time since the
// previous call, ttl the cache lifetime.
func (m *meter) measure(b []byte, headLen int, t time.Time, ttl time.Duration) raw {
	lcp := 0
	if m.calls > 0 {
		lcp = commonPrefix(m.prev, b)
	}
	// Reuse the previous counts for the segments wholly inside the shared
	// prefix, two bytes short of its end so that the marker at the reused
	// boundary is shared too.
	k := 0
	if lcp >= 2 {
		lo, hi := 0, len(m.prevBounds)-1
		for lo < hi { // largest k with prevBounds[k] <= lcp-2
			mid := (lo + hi + 1) / 2
			if m.prevBounds[mid] <= lcp-2 {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		k = lo
	}
	base, baseTokens := 0, 0
	bounds := make([]int, 0, len(m.prevBounds)+16)
	cum := make([]int, 0, cap(bounds))
	hashes := make([]uint64, 0, cap(bounds))
	var h uint64
	if m.calls > 0 && len(m.prevBounds) > 0 {
		base, baseTokens = m.prevBounds[k], m.prevCum[k]
		bounds = append(bounds, m.prevBounds[:k]...)
		cum = append(cum, m.prevCum[:k]...)
		hashes = append(hashes, m.prevHash[:k]...)
		if k > 0 {
			h = hashes[k-1]
		}
	}
	tail := appendBounds(nil, b, base)
	total := baseTokens
	cached := -1
	for i, s := range tail {
		e := len(b)
		if i+1 < len(tail) {
			e = tail[i+1]
		}
		h = chain(h, b[s:e])
		bounds = append(bounds, s)
		cum = append(cum, total)
		hashes = append(hashes, h)
		if cached < 0 && e > lcp {
			// the segment straddling the end of the shared prefix
			cached = total
			if lcp > s {
				cached += m.c.tok.Count(string(b[s:lcp]))
			}
		}
		total += m.c.segment(b[s:e])
	}
	if cached < 0 {
		cached = total
	}
	r := raw{context: total, lcp: lcp, extended: m.calls > 0 && lcp == len(m.prev)}
	r.head = m.headTokens(b, headLen, bounds, cum, total)
	r.warm = m.calls > 0 && t.Sub(m.prevTime) <= ttl
	r.sameHead = m.calls > 0 && lcp >= headLen
	if r.warm && lcp >= headLen {
		r.cached = cached
	}
	r.blocks = makeBlocks(b, headLen, r.head, bounds, cum, hashes, total)
	m.prev, m.prevBounds, m.prevCum, m.prevHash, m.prevTime = b, bounds, cum, hashes, t
	m.calls++
	return r
}

// touch records a request at t that renews the cache entry of the last
// measured bytes (a warm request re-sending them): the next call's cache is
// judged from t.
func (m *meter) touch(t time.Time) {
	if m.calls > 0 && t.After(m.prevTime) {
		m.prevTime = t
	}
}

// makeBlocks groups a context's segments into cache blocks: the head (every
// segment starting before headLen), then one block per segment, a closing
// "<</" segment joining the block before it. A block belongs to a user-role
// wire message when its message starts with "<<user>>" or "<<tool_result"
// (consecutive tool results are one wire message, as harnesses send them).
func makeBlocks(b []byte, headLen, headTokens int, bounds, cum []int, hashes []uint64, total int) []rawBlock {
	out := make([]rawBlock, 0, len(bounds)+1)
	end := func(i int) (int, int) {
		if i+1 < len(bounds) {
			return cum[i+1], bounds[i+1]
		}
		return total, len(b)
	}
	i := 0
	head := rawBlock{end: headTokens, byteEnd: 0, msgStart: true}
	for ; i < len(bounds) && (bounds[i] < headLen || i == 0); i++ {
		head.end, head.byteEnd = end(i)
		head.hash = hashes[i]
	}
	out = append(out, head)
	var prevRole byte
	user := false
	for ; i < len(bounds); i++ {
		e, be := end(i)
		seg := b[bounds[i]:be]
		role, starts := blockRole(seg)
		if role == '/' && len(out) > 1 {
			last := &out[len(out)-1]
			last.end, last.byteEnd, last.hash = e, be, hashes[i]
			continue
		}
		msgStart := starts
		if starts {
			user = role == 'u' || role == 'r'
			if role == 'r' && prevRole == 'r' {
				msgStart = false
			}
			prevRole = role
		}
		out = append(out, rawBlock{end: e, byteEnd: be, hash: hashes[i], user: user, msgStart: msgStart})
	}
	return out
}

// headTokens returns the tokens of b[:headLen], which normally ends at a
// segment start.
func (m *meter) headTokens(b []byte, headLen int, bounds, cum []int, total int) int {
	if headLen <= 0 {
		return 0
	}
	if headLen >= len(b) {
		return total
	}
	for i, s := range bounds {
		if s == headLen {
			return cum[i]
		}
		if s > headLen {
			break
		}
	}
	return m.c.Count(b[:headLen])
}

// Calibration maps raw token counts onto the provider's: the context the
// provider counts for a rendering whose history (everything after the
// fixed head) has h raw tokens is Overhead + Scale·h. Overhead stands for
// what the transcript does not show (the harness's system prompt and tool
// definitions, per-message framing); Scale for the difference between the
// tokenizer used here and the provider's.
type Calibration struct {
	Scale    float64 `json:"scale"`
	Overhead int     `json:"overhead"`
	// Method says how they were found; Points how many calls were used,
	// Excluded how many of them the fit left out as outliers (errors are
	// still reported over all Points).
	Method   string `json:"method"`
	Points   int    `json:"points"`
	Excluded int    `json:"excluded,omitempty"`
	// Error is the relative error |estimate - recorded| / recorded of the
	// naive full history against what the harness recorded sending, over
	// the calls used for the fit: without calibration (Scale 1, Overhead
	// 0: the tokenizer's count of the messages alone), with the overhead
	// only (Scale 1), and with the fit applied.
	Error ErrorStats `json:"error"`
}

// ErrorStats are relative errors of token estimates, per call.
type ErrorStats struct {
	Raw      Stats `json:"raw"`
	Overhead Stats `json:"overhead_only"`
	Fitted   Stats `json:"fitted"`
}

// Stats summarize relative errors (fractions, not percent).
type Stats struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
	// Bias is the mean signed error: positive when the estimate is high.
	Bias float64 `json:"bias"`
}

// identity is the calibration used when nothing was recorded.
var identity = Calibration{Scale: 1, Method: "none"}

// tokens applies the calibration to a raw history count.
func (c Calibration) tokens(h int) int { return c.Overhead + int(c.Scale*float64(h)+0.5) }

// scale applies the scale alone (history tokens, cached tokens beyond the
// head).
func (c Calibration) scale(n int) int { return int(c.Scale*float64(n) + 0.5) }
