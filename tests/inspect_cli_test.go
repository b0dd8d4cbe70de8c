package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/datasets"
)

// The inspection commands on a real session replayed through the real
// service: the help leads with them, every one answers
// in text and --json, `call --raw` prints the bytes whose SHA-256 the call
// record holds, and a diff, an object's history and the errors say what
// they should.
func TestCLIInspect(t *testing.T) {
	c := newCLI(t)
	help := c.ok("", "help")
	if i, j := strings.Index(help, "  sessions "), strings.Index(help, "  put "); i < 0 || j < 0 || i > j {
		t.Fatalf("the help does not lead with the session commands:\n%s", help)
	}
	for _, cmd := range []string{"calls", "call", "object", "session", "serve", "replay"} {
		if !strings.Contains(help, "  "+cmd+" ") {
			t.Errorf("help lacks %q", cmd)
		}
	}
	if v := c.ok("", "--version"); !strings.HasPrefix(v, "ctxstore ") {
		t.Fatalf("--version: %q", v)
	}

	db := c.path("s.db")
	// replay --use-store on a path where no store exists yet creates it
	// (docs/benchmarks.md measures storage this way)
	r := c.run("", "--store", db, "replay", "--use-store", "--strategies", "ctxstore_stream", "--tokenizer", "bytes",
		filepath.Join(datasets.Dir(t), inspecttest.Small))
	if r.code != 0 {
		t.Fatalf("replay: %d %s", r.code, r.stderr)
	}
	var ss []struct {
		ID          string  `json:"session_id"`
		Name        string  `json:"name"`
		Calls       int     `json:"calls"`
		CachedShare float64 `json:"cached_share"`
		CostUSD     float64 `json:"cost_usd"`
	}
	if err := json.Unmarshal([]byte(c.ok("", "--store", db, "--json", "sessions")), &ss); err != nil || len(ss) != 1 {
		t.Fatalf("sessions --json: %v %+v", err, ss)
	}
	s := ss[0]
	if s.Calls != 30 || s.Name == "" || s.CachedShare <= 0 || s.CostUSD <= 0 {
		t.Fatalf("session %+v", s)
	}
	out := c.ok("", "--store", db, "sessions")
	if !strings.Contains(out, s.ID) || !strings.Contains(out, "CACHED") || !strings.Contains(out, "claude-code") {
		t.Fatalf("sessions:\n%s", out)
	}
	out = c.ok("", "--store", db, "session", "show", s.ID)
	for _, want := range []string{"harness   claude-code", "calls     30", "cache breaks by cause:", "first", "paging    "} {
		if !strings.Contains(out, want) {
			t.Fatalf("session show lacks %q:\n%s", want, out)
		}
	}
	var shown struct {
		Paging *struct {
			Previews  *int `json:"previews"`
			Collapsed *int `json:"collapsed"`
		} `json:"paging"`
	}
	if err := json.Unmarshal([]byte(c.ok("", "--store", db, "--json", "session", "show", s.ID)), &shown); err != nil ||
		shown.Paging == nil || shown.Paging.Previews == nil || shown.Paging.Collapsed == nil {
		t.Fatalf("session show --json: %v, paging %+v", err, shown.Paging)
	}
	out = c.ok("", "--store", db, "calls", s.ID)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 31 || !strings.HasPrefix(lines[1], "1 ") {
		t.Fatalf("calls: %d lines:\n%s", len(lines), out)
	}
	var calls []struct {
		N     int `json:"call"`
		Break struct {
			Cause string `json:"cause"`
		} `json:"break"`
	}
	if err := json.Unmarshal([]byte(c.ok("", "--store", db, "--json", "calls", s.ID, "--from", "11", "--limit", "3")), &calls); err != nil ||
		len(calls) != 3 || calls[0].N != 11 || calls[2].N != 13 {
		t.Fatalf("calls page: %v %+v", err, calls)
	}

	raw := c.ok("", "--store", db, "call", s.ID, "12", "--raw")
	var rec struct {
		SHA string `json:"bytes_sha256"`
	}
	if err := json.Unmarshal([]byte(c.ok("", "--store", db, "--json", "get", "ctx-"+s.ID+"-12")), &rec); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(raw))
	if hex.EncodeToString(sum[:]) != rec.SHA || !strings.HasPrefix(raw, "<<system>>\n") {
		t.Fatalf("call --raw is not the bytes recorded (%d bytes)", len(raw))
	}
	out = c.ok("", "--store", db, "call", s.ID, "12")
	for _, want := range []string{"call 12 of session " + s.ID, "break: none", "[0] system prompt", "[1] tool list", "user message", "tool result · toolcall"} {
		if !strings.Contains(out, want) {
			t.Fatalf("call lacks %q:\n%s", want, out)
		}
	}
	var view struct {
		Blocks []struct {
			Kind     string `json:"kind"`
			ObjectID string `json:"object_id"`
			Text     string `json:"text"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(c.ok("", "--store", db, "--json", "call", s.ID, "12")), &view); err != nil {
		t.Fatal(err)
	}
	var joined strings.Builder
	obj := ""
	for _, b := range view.Blocks {
		joined.WriteString(b.Text)
		// A content block, or (rendering 3) a tool result that is its
		// call's live output.
		if b.Kind == "content" || b.Kind == "toolref" && b.ObjectID != "" && !strings.Contains(b.Text, "\nstatus=") && !strings.Contains(b.Text, "[ctxstore] collapsed: ") {
			obj = b.ObjectID
		}
	}
	if joined.String() != raw || obj == "" {
		t.Fatalf("call --json: blocks do not make up the context, or no content block (%q)", obj)
	}
	out = c.ok("", "--store", db, "call", s.ID, "12", "--diff", "11")
	if !strings.HasPrefix(out, "call 11 -> 12: ") || !strings.Contains(out, "0 removed") || !strings.Contains(out, "\n+[") {
		t.Fatalf("diff:\n%s", out)
	}
	out = c.ok("", "--store", db, "object", obj)
	if !strings.Contains(out, "object "+obj) || !strings.Contains(out, "as content") || !strings.Contains(out, s.ID) {
		t.Fatalf("object:\n%s", out)
	}
	c.ok("", "--store", db, "--json", "object", obj, "--session", s.ID)

	c.fail(1, "", []string{"--store", db, "call", s.ID, "99"}, "session "+s.ID+" has no call 99")
	c.fail(1, "", []string{"--store", db, "calls", "nope"}, "session nope")
	c.fail(2, "", []string{"--store", db, "call", s.ID, "3", "--raw", "--diff", "2"}, "--raw and --diff")
}
