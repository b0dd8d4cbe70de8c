package inspector

import (
	"strconv"
	"testing"

	"github.com/ctxstore/ctxstore/explain/inspect"
)

// TestTimelineCallTicks: the timeline labels its bars with call numbers,
// every call when they fit, else evenly spaced ones that never overlap,
// the first and the last call always among them.
func TestTimelineCallTicks(t *testing.T) {
	for _, n := range []int{1, 3, 30, 43, 200, 1000} {
		cs := make([]inspect.Call, n)
		for i := range cs {
			cs[i] = inspect.Call{N: 101 + i, Tokens: 1000 + i}
		}
		c := timeline(cs)
		if len(c.CallTicks) == 0 {
			t.Fatalf("%d calls: no call labels", n)
		}
		if first, last := c.CallTicks[0], c.CallTicks[len(c.CallTicks)-1]; first.Label != "101" || last.Label != strconv.Itoa(100+n) {
			t.Errorf("%d calls: labels from %s to %s, want 101 to %d", n, first.Label, last.Label, 100+n)
		}
		for i := 1; i < len(c.CallTicks); i++ {
			if gap := c.CallTicks[i].X - c.CallTicks[i-1].X; gap < minCallTickGap {
				t.Errorf("%d calls: labels %s and %s %.1f px apart", n, c.CallTicks[i-1].Label, c.CallTicks[i].Label, gap)
			}
		}
		if n <= 30 && len(c.CallTicks) != n {
			t.Errorf("%d calls: %d labels, want one per call", n, len(c.CallTicks))
		}
		if n >= 200 && len(c.CallTicks) < 20 {
			t.Errorf("%d calls: only %d labels", n, len(c.CallTicks))
		}
		if c.LabelY <= c.H-c.Bottom || c.LabelY > c.H {
			t.Errorf("labels at y %d, not under the axis (%d..%d)", c.LabelY, c.H-c.Bottom, c.H)
		}
	}
}
