package httpapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
)

// TestPiStateBounded: what the server keeps of a Pi log sent
// as deltas does not grow with the log: its length and digest, of the
// converted log only the messages the ingester may read again (the turn in
// progress, the messages after the last conversation commit), and of the
// last answer the digests of its messages after the reused ones.
func TestPiStateBounded(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Rebase = assemble.Policy{StaleThreshold: 50} }) // rebases often: the stable mark moves on
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
				lg.result(id, "bash", strings.Repeat("built\n", 40), false)
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
	if l.pi.log.Len() != sent || l.pi.start+len(l.pi.conv.Log) != sent {
		t.Fatalf("the server holds %d messages and %d+%d converted messages of %d", l.pi.log.Len(), l.pi.start, len(l.pi.conv.Log), sent)
	}
	// Of its last answer, the digests of the messages after the reused
	// ones (what the next answer compares), not one per message.
	if from, count := l.pi.answer.Digests(); 2*count > l.pi.answer.Len() || from+count != l.pi.answer.Len() {
		t.Errorf("the server holds %d digests of its last answer's %d messages, from %d", count, l.pi.answer.Len(), from)
	}
	if len(l.pi.conv.Log) > 5 || l.pi.start != l.in.Need() {
		t.Errorf("the server holds %d converted messages from %d (the ingester needs them from %d): more than the turn in progress", len(l.pi.conv.Log), l.pi.start, l.in.Need())
	}
	if dc.mismatches != 0 {
		t.Errorf("%d log_mismatch answers to a log that only grew", dc.mismatches)
	}
}
