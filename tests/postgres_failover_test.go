package tests

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal/postgres/pgtest"
)

// TestPostgresFailover: `ctxstore serve` on a URL naming a primary and its
// synchronous streaming replica (target_session_attrs=read-write,
// docs/postgres.md "Replicas and failover"). A session makes six calls;
// with a seventh in flight the primary is killed with SIGKILL (postmaster
// and backends) and a second later the replica is promoted. The same
// serve, never restarted, answers the next call (503 at most while no
// server accepts writes), and a second serve started afterwards resumes
// the session with every acknowledged call and turn.
func TestPostgresFailover(t *testing.T) {
	primary, replica := pgtest.Replicated(t)
	url := pgtest.FailoverURL(t, primary.Schema(t), primary, replica)
	srv := startServe(t, url, "--no-track")
	p := newPGSession(t)
	p.open(srv)
	acked := 0
	for i := range 6 {
		p.call(srv)
		acked++
		p.turn(i)
	}
	body, _ := json.Marshal(map[string]any{"log": p.log})
	inFlight := make(chan int, 1)
	go func() {
		resp, err := http.Post(srv.url+"/v1/sessions/"+p.sid+"/context", "application/json", strings.NewReader(string(body)))
		if err != nil {
			inFlight <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		inFlight <- resp.StatusCode
	}()
	time.Sleep(5 * time.Millisecond)
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := replica.Promote(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("the call in flight at the kill answered %d", <-inFlight)

	// The same serve recovers by itself.
	p.turn(6)
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, answer := postJSON(t, srv.url+"/v1/sessions/"+p.sid+"/context", map[string]any{"log": p.log})
		if status == http.StatusOK {
			if !strings.Contains(answer, "answer 0") || !strings.Contains(answer, "answer 6") {
				t.Fatalf("the call after the failover lost a turn: %s", tail(answer, 500))
			}
			acked++
			break
		}
		if status != http.StatusServiceUnavailable && status != http.StatusConflict {
			t.Fatalf("a call during the failover: %d %s, want 503 (or 409 and a reopen)", status, tail(answer, 300))
		}
		if status == http.StatusConflict {
			p.open(srv)
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not recover within 30 s of the promotion: %d %s", status, answer)
		}
		t.Logf("serve during the failover: %d %s", status, tail(answer, 200))
		time.Sleep(200 * time.Millisecond)
	}

	// A serve started after the failover finds every acknowledged call.
	s2 := startServe(t, url, "--no-track")
	got := p.open(s2)
	calls, _ := got["calls"].(float64)
	if got["state"] != "resumed" || int(calls) < acked {
		t.Fatalf("a new serve after the failover: %v, want resumed with at least %d calls", got, acked)
	}
	p.turn(7)
	if c := p.call(s2); !strings.Contains(c, "answer 5") || !strings.Contains(c, "answer 6") || !strings.Contains(c, "answer 7") {
		t.Fatalf("the new serve continuing after the failover: %s", tail(c, 500))
	}
}
