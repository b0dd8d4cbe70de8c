package replay

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"strings"
	"time"
)

// Provider cache models (docs/replay.md, "Provider cache
// models"). A call's context is a sequence of blocks (the head, then one
// block per content block of the messages); a model decides, from the
// blocks, their breakpoints and the time, how many of the call's tokens
// are read from the provider's prompt cache, written to it, or sent
// uncached.

// The cache models.
const (
	// CacheAuto picks the model from the provider the transcript records
	// (the model names of its responses): Anthropic or OpenAI.
	CacheAuto = "auto"
	// CacheAnthropic is Anthropic's explicit prompt caching.
	CacheAnthropic = "anthropic"
	// CacheOpenAI is OpenAI's automatic prefix caching.
	CacheOpenAI = "openai"
	// CachePrefix is the ideal prefix cache the replay used before issue
	// 17: the longest byte-identical prefix shared with the previous call
	// is read, everything after it written. It is the fallback for a
	// harness whose recorded usage the provider model does not predict.
	CachePrefix = "prefix"
)

// CacheModels are the names --cache-model accepts.
var CacheModels = []string{CacheAuto, CacheAnthropic, CacheOpenAI, CachePrefix}

// The parameters of the provider models.
const (
	// AnthropicMaxBreakpoints is the most cache_control breakpoints a
	// request may carry.
	AnthropicMaxBreakpoints = 4
	// AnthropicLookback is how many block boundaries before a breakpoint
	// the API checks for a cached prefix besides the breakpoint's own.
	AnthropicLookback = 20
	// OpenAIMinTokens is the shortest prompt OpenAI caches; OpenAIStep the
	// granularity of its cached prefixes.
	OpenAIMinTokens = 1024
	OpenAIStep      = 128
	// LongTTLWritePrice is Anthropic's price of a cache write with the
	// one-hour TTL, in base-input tokens (the 5-minute one is WritePrice).
	LongTTLWritePrice = 2.0
)

// AnthropicMinTokens returns the minimum cacheable prompt length of an
// Anthropic model: a breakpoint whose prefix is shorter is not cached.
// From Anthropic's prompt-caching documentation: 4,096 for Claude Opus 4.5
// and 4.6 and Haiku 4.5, 2,048 for Haiku 3 and 3.5, 1,024 for the others
// (Opus 4 and 4.1, Sonnet 3.7 to 4.5, ...).
func AnthropicMinTokens(model string) int {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "opus-4-5"), strings.Contains(m, "opus-4-6"), strings.Contains(m, "haiku-4-5"):
		return 4096
	case strings.Contains(m, "haiku-3"), strings.Contains(m, "3-haiku"), strings.Contains(m, "3-5-haiku"):
		return 2048
	default:
		return 1024
	}
}

// ProviderOf names the provider of a model from its name: "anthropic" for
// Claude models, "openai" for GPT and o-series models, "" when unknown.
func ProviderOf(model string) string {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "claude"):
		return CacheAnthropic
	case strings.HasPrefix(m, "gpt-"), strings.Contains(m, "codex"), strings.HasPrefix(m, "o1"), strings.HasPrefix(m, "o3"), strings.HasPrefix(m, "o4"):
		return CacheOpenAI
	}
	return ""
}

// Breakpoint placements: where a harness puts Anthropic's cache_control
// breakpoints (read from its request code and recorded requests; docs).
const (
	// PlacementPi: the system prompt (and the last tool) and the last
	// block of the last message when it is a user message (a prompt or
	// tool results): earendil-works/pi, packages/ai, anthropic provider.
	PlacementPi = "pi"
	// PlacementClaudeCode: the system prompt and the last block of the
	// last message (Claude Code's requests as the scripted endpoint
	// records them).
	PlacementClaudeCode = "claude-code"
)

// cacheBlock is one block of a call's context as a cache model sees it.
type cacheBlock struct {
	end      int    // provider tokens of the prefix through this block
	hash     uint64 // identity of the prefix through this block
	user     bool   // the block belongs to a user-role message (prompt or tool results)
	msgStart bool   // the block starts a wire message
}

// cacheRequest is one call.
type cacheRequest struct {
	blocks      []cacheBlock
	breakpoints []int // indexes into blocks, ascending
	// ttls, when not nil, are the breakpoints' own lifetimes (aligned with
	// breakpoints; 0 is the cache's TTL): Anthropic's cache_control takes
	// "ttl": "1h" per breakpoint, a longer one before any shorter one.
	ttls []time.Duration
	at   time.Time
	// model is the model the call went to: a provider's cache is per
	// model, so a call to another model reads nothing another model's
	// calls wrote ("" for the session's).
	model string
}

// key is the cache key of block j: its prefix hash, salted with the model.
func (q *cacheRequest) key(j int) uint64 {
	if q.model == "" {
		return q.blocks[j].hash
	}
	return chain(q.blocks[j].hash, []byte(q.model))
}

func (q *cacheRequest) total() int {
	if len(q.blocks) == 0 {
		return 0
	}
	return q.blocks[len(q.blocks)-1].end
}

// cacheUse is what a call reads from the cache, writes to it and sends
// uncached, in provider tokens. writeLong is written at breakpoints whose
// lifetime is longer than the cache's TTL (Anthropic's one hour, billed at
// LongTTLWritePrice, reported as cache_creation.ephemeral_1h_input_tokens);
// write is the rest of what is written, at the cache's write price. So a
// call costs LongTTLWritePrice·writeLong + writePrice·write + readPrice·read
// + input.
type cacheUse struct {
	read, write, writeLong, input int
}

// cost prices a use under a cache model.
func (u cacheUse) cost(sim cacheSim) float64 {
	return LongTTLWritePrice*float64(u.writeLong) + sim.writePrice()*float64(u.write) + sim.readPrice()*float64(u.read) + InputPrice*float64(u.input)
}

// cacheSim is a provider's cache over the calls of one strategy.
type cacheSim interface {
	call(q *cacheRequest) cacheUse
	writePrice() float64
	readPrice() float64
	// place returns the breakpoints of a request (nil for providers
	// without explicit breakpoints).
	place(blocks []cacheBlock) []int
}

// anthropicSim models Anthropic's prompt caching: a request caches the
// prefix up to each of its breakpoints (at most 4) whose prefix is at least
// the model's minimum; a breakpoint reads the longest cached prefix ending
// at it or at one of the AnthropicLookback block boundaries before it; an
// entry lives its lifetime after its last write or read: the TTL, or a
// breakpoint's own longer one (cacheRequest.ttls; Anthropic's "ttl": "1h").
// Read = the longest prefix found (Anthropic's position A); written at the
// long lifetime = from there to the last long-lived cacheable breakpoint
// (B); written at the TTL = from there to the last cacheable breakpoint
// (C); the rest is uncached input. Anthropic bills A as read, B - A as
// 1-hour writes and C - B as 5-minute writes ("Mixing different TTLs").
type anthropicSim struct {
	ttl       time.Duration
	min       int
	lookback  int
	placement string
	live      map[uint64]liveEntry // prefix hash -> entry
	calls     int
}

// liveEntry is a cache entry: when it expires, and the lifetime a read
// renews it for (the lifetime of the breakpoint that wrote it).
type liveEntry struct {
	exp time.Time
	ttl time.Duration
}

func newAnthropicSim(ttl time.Duration, min int, placement string) *anthropicSim {
	return &anthropicSim{ttl: ttl, min: min, lookback: AnthropicLookback, placement: placement, live: map[uint64]liveEntry{}}
}

func (s *anthropicSim) writePrice() float64 { return writePriceFor(s.ttl) }

// writePriceFor is the price of a cache write that lives ttl: Anthropic's
// 5-minute price up to 5 minutes, its one-hour price beyond (the prefix
// model prices writes the same way).
func writePriceFor(ttl time.Duration) float64 {
	if ttl > 5*time.Minute {
		return LongTTLWritePrice
	}
	return WritePrice
}

func (s *anthropicSim) readPrice() float64 { return ReadPrice }

func (s *anthropicSim) place(blocks []cacheBlock) []int { return placeBreakpoints(s.placement, blocks) }

func (s *anthropicSim) call(q *cacheRequest) cacheUse {
	s.calls++
	if s.calls%64 == 0 {
		for h, e := range s.live {
			if q.at.After(e.exp) {
				delete(s.live, h)
			}
		}
	}
	bps, ttls := q.breakpoints, q.ttls
	if len(bps) > AnthropicMaxBreakpoints {
		if ttls != nil {
			ttls = ttls[len(bps)-AnthropicMaxBreakpoints:]
		}
		bps = bps[len(bps)-AnthropicMaxBreakpoints:]
	}
	read := 0
	for _, b := range bps {
		for j := b; j >= 0 && j >= b-s.lookback; j-- {
			e, ok := s.live[q.key(j)]
			if !ok || q.at.After(e.exp) {
				continue
			}
			// A read renews the entry for its own lifetime.
			s.live[q.key(j)] = liveEntry{exp: q.at.Add(e.ttl), ttl: e.ttl}
			read = max(read, q.blocks[j].end)
			break
		}
	}
	min := s.min
	if q.model != "" {
		min = AnthropicMinTokens(q.model)
	}
	last, long := -1, -1
	for k, b := range bps {
		if q.blocks[b].end < min {
			continue
		}
		ttl := s.ttl
		if ttls != nil && ttls[k] > ttl {
			ttl = ttls[k]
			long = b
		}
		// An entry still live with a longer lifetime keeps it.
		if e, ok := s.live[q.key(b)]; ok && !q.at.After(e.exp) && e.ttl > ttl {
			ttl = e.ttl
		}
		s.live[q.key(b)] = liveEntry{exp: q.at.Add(ttl), ttl: ttl}
		last = b
	}
	u := cacheUse{read: read}
	from := read
	if long >= 0 && q.blocks[long].end > from {
		u.writeLong = q.blocks[long].end - from
		from = q.blocks[long].end
	}
	if last >= 0 && q.blocks[last].end > from {
		u.write = q.blocks[last].end - from
	}
	u.input = q.total() - u.read - u.writeLong - u.write
	return u
}

// placeBreakpoints returns the breakpoints a harness puts on a request:
// the end of the head (system prompt and tools) and the last block of the
// last message (Pi: only when that message is a user message).
func placeBreakpoints(placement string, blocks []cacheBlock) []int {
	if len(blocks) == 0 {
		return nil
	}
	out := []int{0}
	last := len(blocks) - 1
	if last == 0 {
		return out
	}
	switch placement {
	case PlacementPi:
		if blocks[last].user {
			out = append(out, last)
		}
	default:
		out = append(out, last)
	}
	return out
}

// openaiSim models OpenAI's automatic prompt caching: a prompt of at least
// OpenAIMinTokens tokens reads the longest prefix it shares with a prompt
// sent within the TTL, in steps of OpenAIStep tokens (and at least
// OpenAIMinTokens); nothing is billed for writing. Prefixes are compared
// at block boundaries (a block that differs is not shared in part).
type openaiSim struct {
	ttl   time.Duration
	live  map[uint64]time.Time
	calls int
}

func newOpenAISim(ttl time.Duration) *openaiSim {
	return &openaiSim{ttl: ttl, live: map[uint64]time.Time{}}
}

func (s *openaiSim) writePrice() float64      { return InputPrice }
func (s *openaiSim) readPrice() float64       { return ReadPrice }
func (s *openaiSim) place([]cacheBlock) []int { return nil }
func (s *openaiSim) prune(at time.Time)       { pruneLive(s.live, at) }
func pruneLive(m map[uint64]time.Time, at time.Time) {
	for h, exp := range m {
		if at.After(exp) {
			delete(m, h)
		}
	}
}

func (s *openaiSim) call(q *cacheRequest) cacheUse {
	s.calls++
	if s.calls%64 == 0 {
		s.prune(q.at)
	}
	total := q.total()
	lcp := 0
	for j := len(q.blocks) - 1; j >= 0; j-- {
		if exp, ok := s.live[q.key(j)]; ok && !q.at.After(exp) {
			lcp = q.blocks[j].end
			break
		}
	}
	if total >= OpenAIMinTokens {
		for j := range q.blocks {
			s.live[q.key(j)] = q.at.Add(s.ttl)
		}
	}
	read := lcp / OpenAIStep * OpenAIStep
	if total < OpenAIMinTokens || read < OpenAIMinTokens {
		read = 0
	}
	return cacheUse{read: read, input: total - read}
}

// newCacheSim returns the simulator of a model for a session.
func newCacheSim(model, placement, llm string, ttl time.Duration) (cacheSim, error) {
	switch model {
	case CacheAnthropic:
		return newAnthropicSim(ttl, AnthropicMinTokens(llm), placement), nil
	case CacheOpenAI:
		return newOpenAISim(ttl), nil
	case CachePrefix:
		return nil, nil
	}
	return nil, fmt.Errorf("unknown cache model %q (known: %s)", model, strings.Join(CacheModels, ", "))
}

// blockRole classifies a segment by its marker: a user-role wire message
// (a prompt, tool results), an assistant one, a block continuing the
// current message, or the closing marker of a content block (merged into
// the block before it).
func blockRole(seg []byte) (role byte, starts bool) {
	switch {
	case bytes.HasPrefix(seg, []byte("<<user>>")):
		return 'u', true
	case bytes.HasPrefix(seg, []byte("<<tool_result")):
		return 'r', true
	case bytes.HasPrefix(seg, []byte("<<assistant>>")):
		return 'a', true
	case bytes.HasPrefix(seg, []byte("<</")):
		return '/', false
	}
	return 0, false
}

// hashSeed is fixed so prefix hashes need no state beyond a strategy's
// replay; they never leave the process.
var hashSeed = maphash.MakeSeed()

// chain extends a prefix hash by a segment.
func chain(prev uint64, seg []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], prev)
	h.Write(b[:])
	h.Write(seg)
	return h.Sum64()
}
