package replay

import (
	"math"
	"testing"

	"github.com/ctxstore/ctxstore/objects/conversation"
)

// TestRecordedCost: a recorded call's writes are priced by the lifetime
// the harness recorded: 1-hour writes at 2x, the rest at the write price
// given; reads at 0.1x, uncached input at 1x.
func TestRecordedCost(t *testing.T) {
	cases := []struct {
		u    conversation.Usage
		want float64
	}{
		{conversation.Usage{Input: 10, CacheRead: 1000, CacheWrite: 100}, 10 + 100 + 125},
		{conversation.Usage{Input: 10, CacheRead: 1000, CacheWrite: 100, CacheWrite1h: 100}, 10 + 100 + 200},
		{conversation.Usage{CacheWrite: 100, CacheWrite1h: 40}, 60*1.25 + 40*2},
		{conversation.Usage{CacheWrite: 100, CacheWrite1h: 400}, 200},
	}
	for _, c := range cases {
		if got := recordedCost(&c.u, WritePrice); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("recordedCost(%+v) = %v, want %v", c.u, got, c.want)
		}
	}
}
