package httpapi

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
)

// TestDeltaAnswerReusesOnlyWhatIsStable drives two sessions with the same
// Pi log (on two servers), one as the extension does (deltas both ways: the server checks
// and encodes only what is new) and one sending the whole log
// and getting the whole context every call, through tool calls, a
// replaced log (user messages that join the previous one) and a model
// switch, and checks every whole context is the same in both.
func TestDeltaAnswerReusesOnlyWhatIsStable(t *testing.T) {
	e, f := newEnv(t, nil), newEnv(t, nil) // two stores: the sessions share tool call ids
	e.open("s")
	f.open("s")
	inc, full := newDeltaClient(e.ts.URL, "s"), newDeltaClient(f.ts.URL, "s")
	var lg piLogBuilder
	n := 0
	step := func(what string) {
		t.Helper()
		n++
		a := inc.call(lg.raws(), -1, "")
		full.heldCall = 0
		b := full.call(lg.raws(), 0, "")
		if a.status != 200 || b.status != 200 {
			t.Fatalf("%s: status %d %s / %d %s", what, a.status, a.code, b.status, b.code)
		}
		if len(a.messages) != len(b.messages) {
			t.Fatalf("call %d (%s): %d messages with deltas, %d whole", n, what, len(a.messages), len(b.messages))
		}
		for i := range a.messages {
			if !bytes.Equal(a.messages[i], b.messages[i]) {
				t.Fatalf("call %d (%s): message %d differs:\n%s\n%s", n, what, i, a.messages[i], b.messages[i])
			}
		}
	}
	for turn := 1; turn <= 6; turn++ {
		lg.user(fmt.Sprintf("Turn %d.", turn))
		step("prompt")
		id := fmt.Sprintf("c%d", turn)
		lg.call(id, "bash", map[string]any{"command": fmt.Sprintf("echo %d", turn)})
		lg.result(id, "bash", fmt.Sprintf("out %d", turn), false)
		step("tool result")
		lg.say(fmt.Sprintf("Done %d.", turn))
	}
	lg.user("Last on this branch.")
	step("prompt")
	// A branch switch: the log goes back to its first two messages and a
	// new prompt follows; the note and the prompt join the user message
	// that ended the previous answer.
	lg.msgs, lg.enc = lg.msgs[:2], nil
	lg.user("On the other branch.")
	step("replaced log")
	if inc.mismatches != 1 {
		t.Errorf("the replaced log met log_mismatch %d times, want once (then the whole log)", inc.mismatches)
	}
	lg.say("Ok.")
	lg.user("And again.")
	step("after the switch")
	// A model switch re-encodes every assistant message.
	lg.msgs = append(lg.msgs, map[string]any{"role": "assistant", "api": "faux", "provider": "scripted", "model": "m2",
		"stopReason": "stop", "timestamp": 999, "content": []any{map[string]any{"type": "text", "text": "From m2."}}})
	lg.user("Next.")
	step("model switch")
}

// TestLostAnswerRebuilt: a client that holds answers (have_call) lets the
// session's frozen prefix leave the server's memory; when it
// then loses what it held (a restart, a log sent whole again) the whole
// answer is rebuilt from the commits and is the one a server that kept
// everything gives, and so are the deltas after it.
func TestLostAnswerRebuilt(t *testing.T) {
	small := func(o *Options) { o.Rebase = assemble.Policy{StaleThreshold: 50} } // rebases often: much is frozen
	e, f := newEnv(t, small), newEnv(t, small)
	e.open("s")
	f.open("s")
	inc, full := newDeltaClient(e.ts.URL, "s"), newDeltaClient(f.ts.URL, "s")
	var lg piLogBuilder
	rebased := 0
	for turn := 1; turn <= 16; turn++ {
		lg.user(fmt.Sprintf("Turn %d.", turn))
		for k := range 3 {
			if k > 0 {
				id := fmt.Sprintf("c%d-%d", turn, k)
				lg.call(id, "bash", map[string]any{"command": fmt.Sprintf("make %d", k)})
				lg.result(id, "bash", strings.Repeat(fmt.Sprintf("out %d %d\n", turn, k), 30), false)
			}
			if turn%5 == 0 && k == 1 {
				inc.heldCall = 0 // the client lost its answer
			}
			a := inc.call(lg.raws(), -1, "")
			full.heldCall = 0
			b := full.call(lg.raws(), 0, "")
			if a.status != 200 || b.status != 200 {
				t.Fatalf("turn %d: status %d %s / %d %s", turn, a.status, a.code, b.status, b.code)
			}
			if a.resp.Rebased {
				rebased++
			}
			if len(a.messages) != len(b.messages) || a.resp.Bytes != b.resp.Bytes {
				t.Fatalf("turn %d call %d: %d messages (%d bytes) with deltas, %d (%d) whole", turn, a.resp.Call, len(a.messages), a.resp.Bytes, len(b.messages), b.resp.Bytes)
			}
			for i := range a.messages {
				if !bytes.Equal(a.messages[i], b.messages[i]) {
					t.Fatalf("turn %d call %d: message %d differs:\n%s\n%s", turn, a.resp.Call, i, a.messages[i], b.messages[i])
				}
			}
		}
		lg.say(fmt.Sprintf("Done %d.", turn))
	}
	if rebased == 0 {
		t.Fatal("no rebase: nothing was frozen")
	}
}
