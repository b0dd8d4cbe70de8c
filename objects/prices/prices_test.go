package prices

import (
	"math"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects/conversation"
)

// TestTable: the shipped table parses, names its source and date, and
// every entry is complete and consistent with Anthropic's multipliers
// (reads 0.1x or less, 5-minute writes 1.25x, 1-hour writes 2x).
func TestTable(t *testing.T) {
	tb := Default()
	if !strings.HasPrefix(tb.Source, "https://") || len(tb.AsOf) != len("2026-01-01") {
		t.Errorf("source %q, as of %q", tb.Source, tb.AsOf)
	}
	if len(tb.Models) == 0 {
		t.Fatal("no models")
	}
	seen := map[string]bool{}
	for _, p := range tb.Models {
		if p.Provider == "" || p.Model == "" || p.Input <= 0 || p.Output <= 0 || p.CacheRead <= 0 {
			t.Errorf("incomplete entry %+v", p)
		}
		if seen[p.Model] {
			t.Errorf("model %s listed twice", p.Model)
		}
		seen[p.Model] = true
		if p.Provider == "anthropic" && (p.CacheRead > 0.1*p.Input+1e-9 || math.Abs(p.CacheWrite5m-1.25*p.Input) > 1e-9 || math.Abs(p.CacheWrite1h-2*p.Input) > 1e-9) {
			t.Errorf("%s: multipliers off: %+v", p.Model, p)
		}
	}
}

// TestLookup: exact ids, dated ids and provider prefixes find their
// entry; a model the table does not list is unknown, never another's.
func TestLookup(t *testing.T) {
	cases := []struct {
		model string
		want  string
	}{
		{"claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-sonnet-4-20250514", "claude-sonnet-4"},
		{"claude-opus-4-1-20250805", "claude-opus-4-1"},
		{"claude-opus-4-5", "claude-opus-4-5"},
		{"claude-opus-4-20250514", "claude-opus-4"},
		{"anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"claude-sonnet-4-5-mystery", ""},
		{"claude-opus-9", ""},
		{"gpt-5.1-codex", ""},
		{"", ""},
		{"<synthetic>", ""},
	}
	for _, c := range cases {
		p, ok := Default().Lookup(c.model)
		if ok != (c.want != "") || p.Model != c.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", c.model, p.Model, ok, c.want)
		}
	}
	if _, ok := (*Table)(nil).Lookup("claude-sonnet-4"); ok {
		t.Error("a nil table priced a model")
	}
}

// TestCost: each kind of token at its own price; a recorded 1-hour write
// at the 1-hour price, the rest of the writes at the 5-minute price.
func TestCost(t *testing.T) {
	p := Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite5m: 3.75, CacheWrite1h: 6}
	cases := []struct {
		u    conversation.Usage
		want float64
	}{
		{conversation.Usage{Input: 1e6}, 3},
		{conversation.Usage{Output: 1e6}, 15},
		{conversation.Usage{CacheRead: 1e6}, 0.3},
		{conversation.Usage{CacheWrite: 1e6}, 3.75},
		{conversation.Usage{CacheWrite: 1e6, CacheWrite1h: 1e6}, 6},
		{conversation.Usage{CacheWrite: 2e6, CacheWrite1h: 1e6}, 9.75},
		{conversation.Usage{CacheWrite: 1e6, CacheWrite1h: 5e6}, 6}, // the 1-hour part is at most the writes
	}
	for _, c := range cases {
		if got := p.Cost(c.u); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Cost(%+v) = %v, want %v", c.u, got, c.want)
		}
	}
	if got, ok := Default().Cost("claude-opus-9", conversation.Usage{Input: 1e6}); ok || got != 0 {
		t.Errorf("an unknown model was priced: %v", got)
	}
	if got, ok := Default().Cost("claude-sonnet-4-5-20250929", conversation.Usage{Input: 1e6, CacheWrite: 1e6, CacheWrite1h: 1e6}); !ok || math.Abs(got-9) > 1e-9 {
		t.Errorf("sonnet 4.5: %v %v, want 9", got, ok)
	}
}
