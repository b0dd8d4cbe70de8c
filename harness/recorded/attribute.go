package recorded

import (
	"fmt"
	"strings"
	"time"
)

// TTL is the prompt cache's default lifetime; a harness that writes its
// cache entries for an hour (Claude Code, recorded as 1-hour writes) gets
// HourTTL.
const (
	TTL     = 5 * time.Minute
	HourTTL = time.Hour
)

// attribute says why call i's cache broke against the previous call of
// its lane, from the recorded usage and miss reason where there are some,
// else from the difference between the two requests.
func (d *Derived) attribute(i int) {
	c := &d.Calls[i]
	if c.Prev == 0 {
		attributeWith(c, nil, link{})
		return
	}
	p := &d.Calls[c.Prev-1]
	l := c.link
	l.hour = d.hour(c.Prev - 1)
	l.compacted = d.compactedBetween(c.Lane, d.laneOf, p.first, c.first)
	attributeWith(c, p, l)
}

// compare links a request's digests (and where each ends) with the
// previous request's of its lane.
func compare(msgs []string, ends []int, prev []string) link {
	l := link{shared: sharedSlices(msgs, prev), prevMsgs: len(prev), systemChanged: systemChanged(msgs, prev)}
	if l.shared > 0 {
		l.prefixBytes = ends[l.shared-1]
	}
	return l
}

// link is what attribution needs of a call's request against the
// previous call's of its lane, fixed when the call is made: the messages
// they share and the bytes those take in the call's request, how many
// messages the previous request had, whether the system prompt changed
// and a compaction came between them, and whether the lane's last cache
// write at the previous call was a 1-hour one.
type link struct {
	shared, prefixBytes, prevMsgs  int
	systemChanged, compacted, hour bool
}

// attributeWith says why call c's cache broke against p, the previous
// call of its lane (nil: none), given their link.
func attributeWith(c, p *Call, l link) {
	if p == nil {
		c.Cause = CauseFirst
		c.Detail = "first call of its conversation: nothing was cached"
		if c.Lane != "" {
			c.Detail = "first call of sub-agent " + c.Lane + ": nothing of it was cached"
		}
		return
	}
	if !c.Time.IsZero() && !p.Time.IsZero() {
		c.GapSeconds = c.Time.Sub(p.Time).Seconds()
	}
	shared := l.shared
	c.PrefixMessages = shared
	c.PrefixBytes = l.prefixBytes
	ttl := TTL
	if l.hour {
		ttl = HourTTL
	}
	gap := time.Duration(c.GapSeconds * float64(time.Second))
	pSent := p.Sent()
	// What the previous call had in the cache that this request could
	// have read: all of it when this request extends it, else the shared
	// part's share.
	expect := pSent
	if shared < l.prevMsgs && p.Bytes > 0 {
		expect = int(float64(pSent) * float64(c.PrefixBytes) / float64(p.Bytes))
	}
	broke := false
	if u := c.Usage; u != nil {
		// What the previous call left in the cache: what it read and
		// wrote there (its uncached input is not cached), when recorded.
		pCached := pSent
		if p.Usage != nil {
			pCached = int(p.Usage.CacheRead + p.Usage.CacheWrite)
		}
		if pCached == 0 {
			c.Cause = CauseNone
			c.Detail = "the previous request cached nothing (too short to cache, or caching off): there was nothing to read"
			return
		}
		missed := max(0, pCached-int(u.CacheRead))
		c.RewrittenTokens = min(missed, int(u.Input+u.CacheWrite))
		broke = c.RewrittenTokens > 0 && (c.RewrittenTokens >= 1024 || c.RewrittenTokens*10 >= pCached)
		if !broke {
			c.RewrittenTokens = 0
		}
	} else {
		switch {
		case gap >= ttl, c.Model != p.Model && c.Model != "" && p.Model != "":
			c.RewrittenTokens = pSent
		default:
			c.RewrittenTokens = pSent - expect
		}
		broke = c.RewrittenTokens > 0
	}
	if !broke {
		c.Cause = CauseNone
		c.Detail = "the request extends the previous one and read it from the cache"
		return
	}
	switch {
	case c.MissReason != "":
		c.Cause = mapReason(c.MissReason)
		c.Detail = "the provider reported the cache miss as " + c.MissReason
	case c.Model != p.Model && c.Model != "" && p.Model != "":
		c.Cause = CauseModel
		c.Detail = fmt.Sprintf("the model changed from %s to %s: the cache is per model", p.Model, c.Model)
	case l.compacted:
		c.Cause = CauseCompact
		c.Detail = "the conversation was compacted: its summary replaced the history the cache held"
	case c.Shape != "" && p.Shape != "" && c.Shape != p.Shape:
		c.Cause = CauseShape
		c.Detail = "the system prompt or the tool list changed (the recorded request's shape differs)"
	case l.systemChanged:
		c.Cause = CauseSystem
		c.Detail = "the system prompt changed: everything after it was written again"
	case gap >= ttl:
		c.Cause = CauseExpired
		c.Detail = fmt.Sprintf("the cache expired after a pause of %s (its lifetime is %s)", roundGap(gap), roundGap(ttl))
	case c.Usage != nil && c.Usage.CacheRead == 0 && c.Usage.CacheWrite == 0:
		c.Cause = CauseUncached
		c.Detail = "the request neither read nor wrote the prompt cache (caching was off, or the provider did not cache it)"
	case shared < l.prevMsgs:
		c.Cause = CauseChanged
		c.Detail = fmt.Sprintf("message %d of the previous request changed (or was dropped): the messages from there on were written again", shared+1)
	default:
		c.Cause = CauseUnknown
		c.Detail = fmt.Sprintf("the request extends the previous one %s later, within the cache's %s lifetime, yet read %s of it from the cache",
			roundGap(gap), roundGap(ttl), readShare(c, pSent))
	}
}

// hour tells whether the cache entries call k's lane held at call k were
// written for an hour: its last call that wrote to the cache wrote 1-hour
// entries.
func (d *Derived) hour(k int) bool {
	lane := d.Calls[k].Lane
	for ; k >= 0; k-- {
		c := d.Calls[k]
		if c.Lane != lane || c.Usage == nil || c.Usage.CacheWrite == 0 {
			continue
		}
		return c.Usage.CacheWrite1h > 0
	}
	return false
}

func readShare(c *Call, pSent int) string {
	if c.Usage == nil || pSent == 0 {
		return "none"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(c.Usage.CacheRead)/float64(pSent))
}

func roundGap(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	case d >= time.Minute:
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// mapReason maps a provider's cache_miss_reason to a cause.
func mapReason(r string) string {
	s := strings.ToLower(r)
	switch {
	case strings.Contains(s, "ttl") || strings.Contains(s, "expir"):
		return CauseExpired
	case strings.Contains(s, "system"):
		return CauseSystem
	case strings.Contains(s, "tool"):
		return CauseTools
	case strings.Contains(s, "model"):
		return CauseModel
	case strings.Contains(s, "compact"):
		return CauseCompact
	case strings.Contains(s, "message") || strings.Contains(s, "prefix") || strings.Contains(s, "content"):
		return CauseChanged
	}
	return CauseReported
}
