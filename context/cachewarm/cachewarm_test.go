package cachewarm

import (
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", Off, ""}, {Off, Off, ""}, {Running, Running, ""}, {Idle, Idle, ""},
		{"always", "", `unknown warming mode "always" (known: off, running, idle)`},
	} {
		got, err := Check(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("Check(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestDelay(t *testing.T) {
	for _, tc := range []struct{ ttl, want time.Duration }{
		{5 * time.Minute, 270 * time.Second},
		{time.Hour, 54 * time.Minute},
		{12 * time.Second, 2 * time.Second},
		{60 * time.Second, 50 * time.Second},                 // ten seconds of margin
		{10 * time.Second, 0},                                // too short to warm
		{10*time.Second + time.Nanosecond, time.Millisecond}, // at least a millisecond
		{0, 0},
	} {
		if got := Delay(tc.ttl); got != tc.want {
			t.Errorf("Delay(%v) = %v, want %v", tc.ttl, got, tc.want)
		}
	}
}

func TestBudget(t *testing.T) {
	for _, tc := range []struct {
		name          string
		p, miss, kept int
		write, read   float64
		want          int
	}{
		// (1.25-0.1)*40000 / (0.1*40000+5) = 46000/4005
		{"the whole prompt", 40000, 40000, 0, 1.25, 0.1, 11},
		// the head read after the pause: (1.25-0.1)*10000 = 11500 / 4005
		{"a head cached for an hour", 40000, 10000, 30000, 1.25, 0.1, 2},
		// Claude Code's attio prompt: 70k, a 57k head: 1.15*13000 / 7005
		{"a Claude Code head", 70000, 13000, 57000, 1.25, 0.1, 2},
		// stale content dropped, nothing kept: 1.25*30000 - 4000 = 33500 / 4005
		{"stale content dropped", 40000, 30000, 0, 1.25, 0.1, 8},
		{"a miss no dearer than a warm", 40000, 3000, 0, 1.25, 0.1, 0},
		{"a miss counted at most the prompt", 40000, 90000, 0, 1.25, 0.1, 11},
		{"kept counted at most what is not missed", 40000, 40000, 40000, 1.25, 0.1, 11},
		{"nothing to save", 40000, 40000, 0, 0.1, 0.1, 0},
		{"OpenAI: no write price", 100000, 100000, 0, 1, 0.1, 8}, // 0.9 / 0.1, less the token
		{"a small prompt", 1000, 1000, 0, 1.25, 0.1, 10},         // 1150 / 105
		{"a tiny prompt: the output token dominates", 10, 10, 0, 1.25, 0.1, 1},
		{"a warm dearer than the rewrite", 4, 4, 0, 1.25, 0.1, 0}, // 4.6 / 5.4
		{"nothing", 0, 0, 0, 1.25, 0.1, 0},
	} {
		if got := Budget(tc.p, tc.miss, tc.kept, tc.write, tc.read); got != tc.want {
			t.Errorf("%s: Budget(%d, %d, %d, %v, %v) = %d, want %d", tc.name, tc.p, tc.miss, tc.kept, tc.write, tc.read, got, tc.want)
		}
	}
}

func TestLimit(t *testing.T) {
	if Limit(true) != time.Hour || Limit(false) != 30*time.Minute {
		t.Errorf("Limit: %v, %v", Limit(true), Limit(false))
	}
}
