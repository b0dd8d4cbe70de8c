package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/bitemporal/postgres"
	"github.com/ctxstore/ctxstore/bitemporal/postgres/pgtest"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// TestPostgresServers runs docs/postgres.md's setup: several ctxstore
// processes on one PostgreSQL database. The CLI writes and reads through a
// postgres:// URL; two `ctxstore serve` take a session over from each
// other; a serve killed with SIGKILL mid-session loses nothing it
// acknowledged and another takes over; PostgreSQL restarted under a
// writer, down for seconds (connections refused) or restarted in the
// middle of an import loses nothing acknowledged, the errors in between
// are ErrUnavailable, a serve recovers by itself and the import finishes
// when run again.
func TestPostgresServers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no PostgreSQL server")
	}
	pg := pgtest.ForTest(t)
	url := pg.Schema(t)
	t.Run("cli", func(t *testing.T) { testPostgresCLI(t, url) })
	t.Run("session-across-servers", func(t *testing.T) { testPostgresSessionAcrossServers(t, url) })
	t.Run("kill-9", func(t *testing.T) { testPostgresKillServe(t, url) })
	t.Run("postgres-restart", func(t *testing.T) { testPostgresServerRestart(t, pg, url) })
	t.Run("connections-refused", func(t *testing.T) { testPostgresConnectionsRefused(t, pg, url) })
	t.Run("restart-mid-import", func(t *testing.T) { testPostgresRestartMidImport(t, pg, pg.Schema(t)) })
}

func testPostgresCLI(t *testing.T, url string) {
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(ctxstoreBin, append([]string{"--store", url}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctxstore %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	doc := filepath.Join(t.TempDir(), "d.json")
	if err := os.WriteFile(doc, []byte(`{"xt/id":"pg-cli-1","type":"note","title":"Hello PostgreSQL","content":"glacier walrus"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run("put", doc)
	if got := run("get", "pg-cli-1"); !strings.Contains(got, "glacier walrus") {
		t.Fatalf("get: %s", got)
	}
	var st store.Status
	if err := json.Unmarshal([]byte(run("--json", "status")), &st); err != nil || st.Backend != "postgres" || st.LatestCompleted == nil {
		t.Fatalf("status: %+v %v", st, err)
	}
	if got := run("search", "walrus"); !strings.Contains(got, "pg-cli-1") {
		t.Fatalf("search: %s", got)
	}
}

// pgSession drives one session through ctxstore serve processes.
type pgSession struct {
	t    *testing.T
	sid  string
	work string
	log  []conversation.Message
}

func newPGSession(t *testing.T) *pgSession {
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "a.txt"), []byte("alpha one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return &pgSession{t: t, sid: fmt.Sprintf("pg-%d", time.Now().UnixNano()), work: work, log: []conversation.Message{
		{Role: conversation.RoleUser, Text: "read a.txt"},
		{Role: conversation.RoleAssistant, ToolCalls: []conversation.ToolCall{{ID: "c1", Name: "read", Args: map[string]any{"path": "a.txt"}}}},
		{Role: conversation.RoleToolResult, ToolCallID: "c1", ToolName: "read", Output: "alpha one\n"},
	}}
}

func (p *pgSession) open(s *serveProc) map[string]any {
	var out map[string]any
	clusterCall(p.t, s.url, http.MethodPut, "/v1/sessions/"+p.sid, map[string]any{"cwd": p.work, "system_prompt": "You help."}, &out)
	return out
}

func (p *pgSession) call(s *serveProc) string {
	var out struct {
		Assembled json.RawMessage `json:"assembled"`
	}
	clusterCall(p.t, s.url, http.MethodPost, "/v1/sessions/"+p.sid+"/context", map[string]any{"log": p.log}, &out)
	return string(out.Assembled)
}

// turn appends an assistant answer and a user message.
func (p *pgSession) turn(i int) {
	p.log = append(p.log, conversation.Message{Role: conversation.RoleAssistant, Text: fmt.Sprintf("answer %d", i)},
		conversation.Message{Role: conversation.RoleUser, Text: fmt.Sprintf("question %d", i+1)})
}

// testPostgresSessionAcrossServers: a session opened and called on one
// serve is resumed on the other, which assembles the same context and
// continues it, while the first still holds it open; the first then takes
// it back (its view is stale: it reopens the session from the store at the
// conflict, the takeover rule of docs/service.md).
func testPostgresSessionAcrossServers(t *testing.T, url string) {
	s1 := startServe(t, url, "--no-track")
	s2 := startServe(t, url, "--no-track")
	p := newPGSession(t)
	if st := p.open(s1)["state"]; st != "created" {
		t.Fatalf("open on server 1: %v", st)
	}
	c1 := p.call(s1)
	if !strings.Contains(c1, "alpha one") {
		t.Fatalf("call 1 lacks the file: %s", tail(c1, 500))
	}
	// Server 2 opens it while server 1 still holds it open.
	if st := p.open(s2)["state"]; st != "resumed" {
		t.Fatalf("open on server 2: %v, want resumed", st)
	}
	if again := p.call(s2); again != c1 {
		t.Fatalf("server 2 assembles another context for the same log:\n%s\nvs\n%s", tail(again, 300), tail(c1, 300))
	}
	p.turn(1)
	c2 := p.call(s2)
	if !strings.Contains(c2, "answer 1") {
		t.Fatalf("server 2's continuation lacks the new turn: %s", tail(c2, 500))
	}
	p.turn(2)
	c3 := p.call(s1)
	if !strings.Contains(c3, "answer 1") || !strings.Contains(c3, "answer 2") {
		t.Fatalf("server 1 taking the session back lost a turn: %s", tail(c3, 500))
	}
	// Four calls in all: one on server 1, two on server 2, one on 1 again.
	if got := p.open(s2); got["calls"] != float64(4) {
		t.Fatalf("server 2 reopening: %v, want 4 calls", got)
	}
}

// testPostgresKillServe: a serve killed with SIGKILL between calls (its
// connections dropped mid-session); another serve resumes the session
// with every acknowledged call and continues it.
func testPostgresKillServe(t *testing.T, url string) {
	s1 := startServe(t, url, "--no-track")
	p := newPGSession(t)
	p.open(s1)
	acked := 0
	for i := range 6 {
		p.call(s1)
		acked++
		p.turn(i)
	}
	// A call in flight when the process dies: it may or may not have
	// committed, and either way the store stays consistent.
	body, _ := json.Marshal(map[string]any{"log": p.log})
	go func() {
		resp, err := http.Post(s1.url+"/v1/sessions/"+p.sid+"/context", "application/json", strings.NewReader(string(body)))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	time.Sleep(5 * time.Millisecond)
	cmd := s1.cmd
	s1.cmd = nil
	s1.pxSrv.Close()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s1.done

	s2 := startServe(t, url, "--no-track")
	got := p.open(s2)
	calls, _ := got["calls"].(float64)
	if got["state"] != "resumed" || int(calls) < acked || int(calls) > acked+1 {
		t.Fatalf("after kill -9: %v, want resumed with %d or %d calls", got, acked, acked+1)
	}
	p.turn(9)
	if c := p.call(s2); !strings.Contains(c, "answer 5") || !strings.Contains(c, "answer 9") {
		t.Fatalf("server 2 continuing after the kill: %s", tail(c, 500))
	}
}

// testPostgresServerRestart: PostgreSQL restarts (fast shutdown: every
// connection cut) under a writer and a serve.
func testPostgresServerRestart(t *testing.T, pg *pgtest.Server, url string) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := startServe(t, url, "--no-track")
	p := newPGSession(t)
	p.open(srv)
	p.call(srv)

	w := startWriter(s, fmt.Sprintf("pgw-%d-", time.Now().UnixNano()))
	w.waitFor(t, 10)
	before := w.count()
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, before+20) // writes succeed again, on new connections
	w.finish()
	t.Logf("%d writes acknowledged, %d failed around the restart; errors: %v", len(w.acked), w.failed.Load(), w.errs)
	for _, err := range w.errs {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("a write during the restart failed with %v, want ErrUnavailable", err)
		}
	}
	checkAcked(t, "after the restart", s, w)
	for i := 1; i < len(w.acked); i++ {
		if w.acked[i].ID <= w.acked[i-1].ID {
			t.Fatalf("acknowledged tx ids go back: %d then %d", w.acked[i-1].ID, w.acked[i].ID)
		}
	}

	// The serve recovers by itself: a context call may fail while its
	// connections are found dead, then succeeds.
	p.turn(1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, answer := postJSON(t, srv.url+"/v1/sessions/"+p.sid+"/context", map[string]any{"log": p.log})
		if status == http.StatusOK {
			if !strings.Contains(answer, "answer 1") {
				t.Fatalf("the call after the restart: %s", tail(answer, 500))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not recover within 30 s of the restart: %d %s", status, answer)
		}
		t.Logf("serve after the restart: %d %s", status, tail(answer, 300))
		time.Sleep(200 * time.Millisecond)
	}
}

// postJSON posts body and returns the status and the answer.
func postJSON(t *testing.T, url string, body any) (int, string) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(string(data)))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// testPostgresConnectionsRefused: PostgreSQL is down for 5 s, longer than
// a call's retries: writes fail with ErrUnavailable and serve answers 503
// while it is down; nothing acknowledged is lost, and both recover by
// themselves once it is back.
func testPostgresConnectionsRefused(t *testing.T, pg *pgtest.Server, url string) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := startServe(t, url, "--no-track")
	p := newPGSession(t)
	p.open(srv)
	p.call(srv)
	w := startWriter(s, fmt.Sprintf("cut-%d-", time.Now().UnixNano()))
	w.waitFor(t, 5)
	before := w.count()
	down := make(chan error, 1)
	go func() { down <- pg.Down(ctx, 5*time.Second) }()
	time.Sleep(time.Second)
	p.turn(1)
	status, answer := postJSON(t, srv.url+"/v1/sessions/"+p.sid+"/context", map[string]any{"log": p.log})
	if status != http.StatusServiceUnavailable || !strings.Contains(answer, "unavailable") {
		t.Errorf("a context call while PostgreSQL is down: %d %s, want 503 unavailable", status, tail(answer, 300))
	}
	if err := <-down; err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, before+10)
	w.finish()
	t.Logf("%d writes acknowledged, %d failed while PostgreSQL was down; errors: %v", len(w.acked), w.failed.Load(), w.errs)
	if w.failed.Load() == 0 {
		t.Error("no write failed while PostgreSQL was down for 5 s: the outage was not felt")
	}
	for _, err := range w.errs {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("a write while PostgreSQL was down failed with %v, want ErrUnavailable", err)
		}
	}
	checkAcked(t, "after the outage", s, w)
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, answer := postJSON(t, srv.url+"/v1/sessions/"+p.sid+"/context", map[string]any{"log": p.log})
		if status == http.StatusOK {
			if !strings.Contains(answer, "answer 1") {
				t.Fatalf("the call after the outage: %s", tail(answer, 500))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not recover within 30 s of the outage: %d %s", status, answer)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// testPostgresRestartMidImport: PostgreSQL restarts while a version log is
// imported into it. The import either finishes or fails with
// ErrUnavailable; run again, it applies what is left (its cursor is
// written with each transaction), and the store then holds the source's
// documents and histories; a third run applies nothing.
func testPostgresRestartMidImport(t *testing.T, pg *pgtest.Server, url string) {
	ctx := context.Background()
	src, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "src.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	prefix := fmt.Sprintf("imp-%d-", time.Now().UnixNano())
	for _, ops := range sampleOps(prefix, 400) {
		if _, err := store.SubmitWait(ctx, src, ops); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	if _, err := versionlog.Export(ctx, src, &log, versionlog.ExportOptions{After: -1}); err != nil {
		t.Fatal(err)
	}
	target, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	done := make(chan error, 1)
	go func() {
		_, err := versionlog.Import(ctx, target, bytes.NewReader(log.Bytes()), versionlog.ImportOptions{})
		done <- err
	}()
	for {
		st, err := target.Status(ctx)
		if err == nil && st.LatestCompleted != nil && st.LatestCompleted.ID >= 30 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Logf("the import met the restart: %v", err)
		if !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("the import failed with %v, want ErrUnavailable", err)
		}
		if _, err := versionlog.Import(ctx, target, bytes.NewReader(log.Bytes()), versionlog.ImportOptions{}); err != nil {
			t.Fatalf("the import run again: %v", err)
		}
	}
	for i := 0; i < 7; i++ {
		id := fmt.Sprintf("%s%d", prefix, i)
		want, werr := src.Entity(ctx, id, store.Basis{})
		got, gerr := target.Entity(ctx, id, store.Basis{})
		if (werr == nil) != (gerr == nil) || (werr == nil && !store.SameDoc(got, want)) {
			t.Errorf("%s = %v (%v), the source has %v (%v)", id, got, gerr, want, werr)
		}
		hs, _ := src.History(ctx, id, store.HistoryOptions{Order: store.Asc, WithCorrections: true})
		ht, _ := target.History(ctx, id, store.HistoryOptions{Order: store.Asc, WithCorrections: true})
		if len(hs) != len(ht) {
			t.Errorf("%s: %d history points in the source, %d after the import", id, len(hs), len(ht))
		}
	}
	sum, err := versionlog.Import(ctx, target, bytes.NewReader(log.Bytes()), versionlog.ImportOptions{})
	if err != nil || sum.Applied != 0 {
		t.Errorf("a third import: %+v, %v; want nothing applied", sum, err)
	}
}
