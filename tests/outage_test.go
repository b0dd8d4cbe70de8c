package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/xtdb/xtdbserver"
)

// TestXTDBOutage: `serve` on an XTDB node that goes down answers clear 503s
// (code unavailable) while it is down, and once the node is back (same
// data, same port) serves the session again by itself, without a restart.
func TestXTDBOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("xtdb: -short starts no JVM")
	}
	ctx := context.Background()
	data := t.TempDir()
	start := func(port int) *xtdbserver.Server {
		t.Helper()
		n, err := xtdbserver.Start(ctx, xtdbserver.Options{DataDir: data, Port: port})
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("starting XTDB: %v", err)
			}
			t.Skipf("no XTDB node (set CI=true to fail instead): %v", err)
		}
		t.Cleanup(func() { n.Stop() })
		return n
	}
	node := start(0)
	u, err := url.Parse(node.URL())
	if err != nil {
		t.Fatal(err)
	}
	var port int
	fmt.Sscanf(u.Port(), "%d", &port)

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, node.URL(), "--xtdb-timeout", "5s")
	open, _ := json.Marshal(map[string]any{"cwd": dir, "system_prompt": "p", "harness": "pi"})
	if st, body := srv.fetch("PUT", "/v1/sessions/o1", "application/json", open); st != 200 {
		t.Fatalf("open: %d %s", st, body)
	}
	msgs := []map[string]any{{"role": "user", "content": "one", "timestamp": 1}}
	call := func() (int, string) {
		b, _ := json.Marshal(map[string]any{"messages": msgs})
		st, body := srv.fetch("POST", "/v1/sessions/o1/context", "application/json", b)
		return st, string(body)
	}
	if st, body := call(); st != 200 {
		t.Fatalf("context before the outage: %d %s", st, body)
	}

	if err := node.Kill(); err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "ok"}}, "stopReason": "stop", "timestamp": 2},
		map[string]any{"role": "user", "content": "two", "timestamp": 3})
	began := time.Now()
	st, body := call()
	if st != 503 || !strings.Contains(body, `"unavailable"`) {
		t.Fatalf("context during the outage: %d %s", st, body)
	}
	t.Logf("503 after %s", time.Since(began).Round(time.Millisecond))
	if st, body := srv.fetch("GET", "/v1/sessions/o1", "", nil); st != 503 {
		t.Errorf("session read during the outage: %d %s", st, body)
	}

	start(port)
	var last string
	for range 30 { // the server recovers by itself: no reopen, no restart
		st, body := call()
		if st == 200 {
			last = ""
			break
		}
		last = fmt.Sprintf("%d %s", st, body)
		time.Sleep(time.Second)
	}
	if last != "" {
		t.Fatalf("context after the node came back: %s\n%s", last, srv.stderr)
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "ok"}}, "stopReason": "stop", "timestamp": 4},
		map[string]any{"role": "user", "content": "three", "timestamp": 5})
	if st, body := call(); st != 200 {
		t.Fatalf("the next call: %d %s", st, body)
	}
}
