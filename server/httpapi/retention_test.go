package httpapi

import (
	"fmt"
	"testing"
)

// TestPiStateBounded (issue 18): what the server keeps of a Pi log sent
// as deltas does not grow with the log: a digest per message, and of the
// converted log only the messages the ingester may read again (the turn in
// progress, the messages after the last conversation commit).
func TestPiStateBounded(t *testing.T) {
	e := newEnv(t, nil)
	e.check = false
	e.open("s")
	dc := newDeltaClient(e.ts.URL, "s")
	var lg piLogBuilder
	for turn := 1; turn <= 20; turn++ {
		lg.user(fmt.Sprintf("Turn %d.", turn))
		for k := range 3 {
			if r := dc.call(lg.raws(), -1, ""); r.status != 200 || (turn > 1 && r.resp.Keep == 0) {
				t.Fatalf("turn %d call %d: %d %s, keep %d", turn, k, r.status, r.code, r.resp.Keep)
			}
			if k < 2 {
				id := fmt.Sprintf("c_%d_%d", turn, k)
				lg.call(id, "bash", map[string]any{"command": "make"})
				lg.result(id, "bash", "built", false)
			}
		}
		lg.say("Done.")
	}
	e.srv.mu.Lock()
	l := e.srv.sessions["s"]
	e.srv.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	sent := len(lg.msgs) - 1 // the last answer is not sent yet
	if len(l.pi.sums) != sent || l.pi.start+len(l.pi.conv.Log) != sent {
		t.Fatalf("the server holds %d digests and %d+%d converted messages of %d", len(l.pi.sums), l.pi.start, len(l.pi.conv.Log), sent)
	}
	if len(l.pi.conv.Log) > 5 || l.pi.start != l.in.Need() {
		t.Errorf("the server holds %d converted messages from %d (the ingester needs them from %d): more than the turn in progress", len(l.pi.conv.Log), l.pi.start, l.in.Need())
	}
	if dc.mismatches != 0 {
		t.Errorf("%d log_mismatch answers to a log that only grew", dc.mismatches)
	}
}
