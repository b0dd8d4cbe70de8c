package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
)

// TestServeKilledUnderCalls: `serve` is killed with SIGKILL while a client
// makes context calls, several times over; every call it answered (200)
// is in the store afterwards and rebuilds byte for byte (its commit's
// length and SHA-256), and the file is intact.
func TestServeKilledUnderCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "serve.db")
	var msgs []map[string]any
	acked := map[int]bool{}
	ts := 0
	for cycle := range 4 {
		srv := startServe(t, "sqlite:"+db)
		open, _ := json.Marshal(map[string]any{"cwd": dir, "system_prompt": "p", "harness": "pi"})
		if st, body := srv.fetch("PUT", "/v1/sessions/k1", "application/json", open); st != 200 {
			t.Fatalf("cycle %d: open: %d %s", cycle, st, body)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				ts++
				msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("message %d %s", ts, "x"), "timestamp": ts})
				b, _ := json.Marshal(map[string]any{"messages": msgs})
				st, body := srv.fetchRaw("POST", "/v1/sessions/k1/context", "application/json", b)
				if st != 200 {
					return // killed
				}
				var r struct {
					Call int `json:"call"`
				}
				if json.Unmarshal(body, &r) == nil && r.Call > 0 {
					acked[r.Call] = true
				}
				ts++
				msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "ok"}}, "stopReason": "stop", "timestamp": ts})
			}
		}()
		time.Sleep(time.Duration(400+rand.IntN(800)) * time.Millisecond)
		srv.kill()
		<-done
	}
	if len(acked) < 4 {
		t.Fatalf("only %d calls acknowledged", len(acked))
	}
	checkIntegrity(t, db)
	st, err := bitemporal.Open(ctx, db, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for n := range acked {
		if _, err := assemble.Rebuild(ctx, st, "k1", n); err != nil {
			t.Errorf("acknowledged call %d: %v", n, err)
		}
	}
	t.Logf("%d calls acknowledged over 4 kills, each rebuilt", len(acked))
}

// fetchRaw sends a request straight to the server (not through the
// checking proxy); a transport error (the server was killed) gives 0.
func (s *serveProc) fetchRaw(method, path, contentType string, body []byte) (int, []byte) {
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil
	}
	return resp.StatusCode, b
}

// kill ends the server with SIGKILL.
func (s *serveProc) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
	s.pxSrv.Close()
}
