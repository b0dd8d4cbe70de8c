package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// BenchmarkOpenClawEngines runs one scripted OpenClaw session twice, with
// OpenClaw's built-in (legacy) context engine and with ctxstore's, and
// reports what the model was sent per turn (docs/openclaw.md, "Compared").
// The session: turn 1 reads a 40 KB file, turns 2 and 3 read small files,
// turns 4 to 6 are one question each. Every figure comes from the scripted
// endpoint's request log: the request's bytes, and its messages' bytes (the
// history, without the system prompt and tool schemas, which both engines
// send once per request). Slow (12 OpenClaw runs): run it alone.
//
//	go test -run '^$' -bench OpenClawEngines -benchtime 1x ./tests/
func BenchmarkOpenClawEngines(b *testing.B) {
	turns := []string{"read big.txt", "read a.txt", "read b.txt", "what did big.txt say", "and a.txt", "thanks"}
	for b.Loop() {
		legacy := openclawSession(b, false, turns)
		ctx := openclawSession(b, true, turns)
		var lsum, csum, lmsg, cmsg int
		for i := range legacy {
			lsum += legacy[i].bytes
			csum += ctx[i].bytes
			lmsg += legacy[i].messages
			cmsg += ctx[i].messages
			b.Logf("request %2d (turn %d): legacy %6d bytes (messages %6d), ctxstore %6d bytes (messages %6d)",
				i, legacy[i].turn, legacy[i].bytes, legacy[i].messages, ctx[i].bytes, ctx[i].messages)
		}
		b.ReportMetric(float64(lmsg), "legacy-message-bytes")
		b.ReportMetric(float64(cmsg), "ctxstore-message-bytes")
		b.ReportMetric(float64(cmsg)/float64(lmsg), "message-bytes-ratio")
		b.ReportMetric(float64(csum)/float64(lsum), "request-bytes-ratio")
	}
}

type openclawRequestSize struct {
	turn            int
	bytes, messages int
}

// openclawSession runs the scripted session turns with OpenClaw's legacy
// engine or with ctxstore's (on SQLite) and returns each model request's size.
func openclawSession(b *testing.B, withCtxstore bool, turns []string) []openclawRequestSize {
	b.Helper()
	var mu sync.Mutex
	step := 0
	reads := map[int]string{1: "big.txt", 3: "a.txt", 5: "b.txt"}
	respond := func(req messagesRequest) piStep {
		mu.Lock()
		defer mu.Unlock()
		step++
		if f, ok := reads[step]; ok {
			return piStep{Tool: "read", Args: map[string]any{"path": f}, ID: fmt.Sprintf("callread%d", step)}
		}
		return piStep{Text: fmt.Sprintf("answer %d", step)}
	}
	h := newOpenClawHome(b, respond)
	var big strings.Builder
	for i := 0; big.Len() < 40000; i++ {
		fmt.Fprintf(&big, "line %04d of the big file: the quick brown fox jumps over the lazy dog\n", i)
	}
	for name, content := range map[string]string{"big.txt": big.String(), "a.txt": "alpha is the first letter\n", "b.txt": "beta is the second letter\n"} {
		if err := os.WriteFile(filepath.Join(h.ws, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if withCtxstore {
		srv := startServe(b, "sqlite:"+filepath.Join(b.TempDir(), "store.db"))
		h.serviceURL = srv.pxURL
		h.install()
	}
	var sizes []openclawRequestSize
	for i, msg := range turns {
		out := h.run("agent", "--local", "--session-id", "oc-bench", "--message", msg)
		if strings.Contains(out, "[ctxstore]") {
			b.Fatalf("turn %d: ctxstore's engine did not run:\n%s", i+1, out)
		}
		lines, reqs := h.logged()
		for j := len(sizes); j < len(reqs); j++ {
			n := 0
			for _, m := range reqs[j].Messages {
				n += len(m.Content)
			}
			sizes = append(sizes, openclawRequestSize{turn: i + 1, bytes: len(lines[j]), messages: n})
		}
	}
	return sizes
}
