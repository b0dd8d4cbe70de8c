package tests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/server/httpapi"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// longCalls is the number of context calls of TestLongSession*:
// CTXSTORE_LONG_CALLS, default 600 (CI); the session is 10,000
// (docs/testing.md, "Long sessions").
func longCalls() int {
	if n, err := strconv.Atoi(os.Getenv("CTXSTORE_LONG_CALLS")); err == nil && n >= 20 {
		return n
	}
	return 600
}

// TestLongSessionSQLite and TestLongSessionXTDB: a
// synthetic harness drives `ctxstore serve` through longCalls() context
// calls as the Pi extension makes them (the log and the answer as deltas):
// each turn a prompt, two bash calls and an answer, three calls. The
// session completes with every answer a delta; the server's peak RSS at
// the last call is within 1.3x of its peak at a tenth of the calls (half
// of them in a run under 5,000 calls, past the start-up's growth); a new
// server process resumes the session (the next call, with the whole log,
// applies only the messages new since the last call and extends the
// context); the session exports and imports into
// another store; the inspector's pages of the session load.
func TestLongSessionSQLite(t *testing.T) {
	t.Parallel()
	longSession(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
}

func TestLongSessionXTDB(t *testing.T) {
	t.Parallel()
	longSession(t, xtdbtest.ForTest(t))
}

// longClient is the harness: Pi's log, encoded once per message, and the
// delta protocol's state (docs/service.md).
type longClient struct {
	t     *testing.T
	srv   *serveProc
	sid   string
	log   []json.RawMessage
	n     int       // messages made (timestamps)
	sent  int       // messages the server holds
	sums  []string  // sums[i]: SHA-256 of log[0..i], each followed by "\n"
	h     hash.Hash // the running hash behind sums
	held  []json.RawMessage
	call  int
	calls int
}

func (c *longClient) add(m map[string]any) {
	c.n++
	m["timestamp"] = c.n
	b, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.log = append(c.log, b)
}

func (c *longClient) user(text string) {
	c.add(map[string]any{"role": "user", "content": text})
}

func (c *longClient) assistant(stop string, content ...any) {
	c.add(map[string]any{"role": "assistant", "api": "faux", "provider": "scripted", "model": "m1", "stopReason": stop,
		"usage": map[string]any{"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12}, "content": content})
}

func (c *longClient) result(id, out string) {
	c.add(map[string]any{"role": "toolResult", "toolCallId": id, "toolName": "bash", "isError": false,
		"content": []any{map[string]any{"type": "text", "text": out}}})
}

// context makes one context call, as a delta unless full.
func (c *longClient) context(full bool) httpapi.ContextResponse {
	c.t.Helper()
	base := c.sent
	if full {
		base, c.call, c.held = 0, 0, nil
	}
	var body bytes.Buffer
	body.WriteByte('{')
	if base > 0 {
		fmt.Fprintf(&body, `"base":%d,"base_sha256":%q,`, base, c.sums[base-1])
	}
	if c.call > 0 {
		fmt.Fprintf(&body, `"have_call":%d,`, c.call)
	}
	body.WriteString(`"messages":[`)
	for i, m := range c.log[base:] {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(m)
	}
	body.WriteString("]}")
	status, raw := c.srv.fetchRaw("POST", "/v1/sessions/"+c.sid+"/context", "application/json", body.Bytes())
	if status != 200 {
		c.t.Fatalf("context call %d: %d %s", c.calls+1, status, raw)
	}
	var r struct {
		httpapi.ContextResponse
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		c.t.Fatalf("context call %d: %v", c.calls+1, err)
	}
	if full {
		c.h, c.sums = sha256.New(), nil
		base = 0
	}
	for _, m := range c.log[base:] {
		c.h.Write(m)
		c.h.Write([]byte{'\n'})
		c.sums = append(c.sums, hex.EncodeToString(c.h.Sum(nil)))
	}
	c.sent = len(c.log)
	c.held = append(c.held[:r.Keep:r.Keep], r.Messages...)
	c.call = r.Call
	c.calls++
	r.ContextResponse.Messages = nil
	return r.ContextResponse
}

// peakRSS returns the VmHWM (peak resident set) of process pid, in KiB.
func peakRSS(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the server's memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmHWM in /proc/<pid>/status")
	return 0
}

func longSession(t *testing.T, storeURL string) {
	total := longCalls()
	// The call the peak RSS is compared with: a tenth of the calls (the
	// issue's 1,000 of 10,000); in a short run, half of them, since the
	// first few hundred calls are the server's start-up growth.
	ref := total / 10
	if total < 5000 {
		ref = total / 2
	}
	srv := startServe(t, storeURL)
	c := &longClient{t: t, srv: srv, sid: "long-" + strconv.FormatInt(time.Now().UnixNano(), 36), h: sha256.New()}
	if status, b := srv.fetch("PUT", "/v1/sessions/"+c.sid, "application/json",
		[]byte(`{"cwd":"/tmp","system_prompt":"You are a test agent.","harness":"pi"}`)); status != 200 {
		t.Fatalf("open: %d %s", status, b)
	}
	out := strings.Repeat("a line of build output of moderate length\n", 12) // ~500 bytes
	var rssTenth, rssLast, keeps int
	start := time.Now()
	var last httpapi.ContextResponse
	for turn := 1; c.calls < total; turn++ {
		c.user(fmt.Sprintf("Turn %d: build it twice.", turn))
		for k := 0; k < 3 && c.calls < total; k++ {
			last = c.context(false)
			if last.Keep > 0 {
				keeps++
			}
			if c.calls == ref {
				rssTenth = peakRSS(t, srv.cmd.Process.Pid)
			}
			if k < 2 {
				id := fmt.Sprintf("call_%d_%d", turn, k)
				c.assistant("toolUse", map[string]any{"type": "toolCall", "id": id, "name": "bash",
					"arguments": map[string]any{"command": fmt.Sprintf("make build-%d-%d", turn, k)}})
				c.result(id, fmt.Sprintf("run %d %d\n%s", turn, k, out))
			}
		}
		c.assistant("stop", map[string]any{"type": "text", "text": fmt.Sprintf("Turn %d done.", turn)})
	}
	rssLast = peakRSS(t, srv.cmd.Process.Pid)
	t.Logf("%d calls in %s; server peak RSS %d KiB at call %d, %d KiB at call %d (x%.2f); %d answers were deltas",
		total, time.Since(start).Round(time.Millisecond), rssTenth, ref, rssLast, total, float64(rssLast)/float64(rssTenth), keeps)
	if last.Call != total || keeps < total-1 {
		t.Fatalf("after %d calls: call %d, %d delta answers", total, last.Call, keeps)
	}
	if float64(rssLast) > 1.3*float64(rssTenth) {
		t.Errorf("server peak RSS grew from %d KiB at call %d to %d KiB at call %d (over 1.3x)", rssTenth, ref, rssLast, total)
	}
	whole := append([]json.RawMessage(nil), c.held...)
	srv.Stop()

	// A new server process resumes the session: the whole log, once; only
	// the new prompt is applied and the context extends the last one.
	srv2 := startServe(t, storeURL)
	c.srv = srv2
	if status, b := srv2.fetch("PUT", "/v1/sessions/"+c.sid, "application/json", []byte(`{"cwd":"/tmp","harness":"pi"}`)); status != 200 {
		t.Fatalf("resume: %d %s", status, b)
	}
	c.user("After the restart.")
	pending := len(c.log) - c.sent
	r := c.context(true)
	if r.Call != total+1 || r.Ingested.Applied != pending || r.Ingested.Reset {
		t.Fatalf("resumed call: call %d, ingested %+v (want call %d, the %d new messages applied)", r.Call, r.Ingested, total+1, pending)
	}
	for i, m := range whole[:len(whole)-1] { // the last message may be joined by what follows
		if !bytes.Equal(m, c.held[i]) {
			t.Fatalf("the resumed context changed message %d of %d:\n%s\n%s", i, len(whole), m, c.held[i])
		}
	}

	// The inspector's pages of the session load.
	for _, p := range []string{"/inspect/", "/inspect/s/" + c.sid, fmt.Sprintf("/inspect/s/%s/c/%d", c.sid, total),
		fmt.Sprintf("/inspect/s/%s/c/%d/diff/%d", c.sid, total, total-1), "/inspect/o/chat:" + c.sid} {
		status, body := srv2.fetchRaw("GET", p, "", nil)
		if status != 200 || !strings.Contains(string(body), "</html>") {
			t.Errorf("inspector %s: %d, %d bytes", p, status, len(body))
		}
	}
	srv2.Stop()

	// Export, and import into another store.
	cl := newCLI(t)
	var ex struct {
		Commits int64 `json:"commits"`
	}
	cl.jsonOut(&ex, "", "--store", storeURL, "session", "export", c.sid, "-o", "s.bundle")
	if ex.Commits != int64(total+1) {
		t.Fatalf("export: %d commits, want %d", ex.Commits, total+1)
	}
	var im struct {
		Session  string `json:"session"`
		Complete bool   `json:"complete"`
		Rebuilt  int    `json:"rebuilt"`
	}
	cl.jsonOut(&im, "", "--store", "dst.db", "session", "import", "s.bundle")
	if im.Session != c.sid || !im.Complete {
		t.Fatalf("import: %+v", im)
	}
	if out := cl.ok("", "--store", "dst.db", "call", c.sid, strconv.Itoa(total+1), "--raw"); !strings.Contains(out, "After the restart.") {
		t.Fatalf("the imported session's last call lacks the last prompt:\n%.500s", out)
	}
}
