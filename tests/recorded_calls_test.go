package tests

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/datasets"
)

// TestCLIRecordedCalls: imported Claude Code sessions are explained like
// served ones: `calls` lists one row per recorded request with its usage
// and cost, `call N` labels the request's parts, `--raw` prints it and
// `--diff` compares two; `sessions --json` carries name, tokens and cost;
// `session show` sums the cache breaks by cause and, once `--replay` has
// computed and stored it, what the session would have cost with
// ctxstore; `search` and
// `query-session` find a word that only an imported session holds.
func TestCLIRecordedCalls(t *testing.T) {
	c := newCLI(t)
	db := c.path("s.db")
	dir := datasets.Dir(t)
	long := "claude-code/templar__35fb9f94__ee2ab929.jsonl" // 164 calls, an expiry and a compaction
	c.ok("", "--store", db, "import", filepath.Join(dir, inspecttest.Small))
	c.ok("", "--store", db, "import", filepath.Join(dir, long))
	var ss []struct {
		ID         string  `json:"session_id"`
		Name       string  `json:"name"`
		Calls      int     `json:"calls"`
		TokensSent int     `json:"tokens_sent"`
		CostUSD    float64 `json:"cost_usd"`
		Recorded   bool    `json:"recorded"`
	}
	out := c.ok("", "--store", db, "--json", "sessions")
	if err := json.Unmarshal([]byte(out), &ss); err != nil {
		t.Fatalf("sessions --json: %v: %s", err, out)
	}
	byCalls := map[int]string{}
	for _, s := range ss {
		if !s.Recorded || s.Name == "" || s.TokensSent <= 0 || s.CostUSD <= 0 {
			t.Errorf("session %+v: want a name, tokens and a cost", s)
		}
		byCalls[s.Calls] = s.ID
	}
	small, ok := byCalls[30]
	if !ok || byCalls[164] == "" {
		t.Fatalf("sessions by calls: %v, want 30 and 164", byCalls)
	}
	table := c.ok("", "--store", db, "calls", small[:8])
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 31 || !strings.Contains(lines[0], "CACHE READ") || !strings.Contains(lines[0], "WRITE 1H") {
		t.Fatalf("calls: %d lines:\n%s", len(lines), table)
	}
	if f := strings.Fields(lines[2]); len(f) < 11 || !strings.HasPrefix(f[9], "$") || f[3] == "-" {
		t.Errorf("call 2's row %q: want its model, usage and cost", lines[2])
	}
	raw := c.ok("", "--store", db, "call", small, "3", "--raw")
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(raw), &body); err != nil || len(body.Messages) < 3 {
		t.Fatalf("call 3 --raw: %v, %d messages: %.300s", err, len(body.Messages), raw)
	}
	view := c.ok("", "--store", db, "call", small, "3")
	for _, want := range []string{"call 3 of session", "usage: ", "read from the cache", "user message", "assistant message", "break: none"} {
		if !strings.Contains(view, want) {
			t.Errorf("call 3 lacks %q:\n%.2000s", want, view)
		}
	}
	if d := c.ok("", "--store", db, "call", small, "3", "--diff", "2"); !strings.Contains(d, "call 2 -> 3") || !strings.Contains(d, "+[") {
		t.Errorf("call 3 --diff 2:\n%.2000s", d)
	}
	show := c.ok("", "--store", db, "session", "show", byCalls[164])
	for _, want := range []string{"cache breaks by cause:", "compaction", "expired"} {
		if !strings.Contains(show, want) {
			t.Errorf("session show lacks %q:\n%s", want, show)
		}
	}
	if out := c.ok("", "--store", db, "session", "show", small); !strings.Contains(out, "not computed yet (session show --replay)") {
		t.Errorf("session show before a replay:\n%s", out)
	}
	if out := c.ok("", "--store", db, "session", "show", small, "--replay"); !strings.Contains(out, "of what it did with ctxstore managing its context: $") {
		t.Errorf("session show --replay:\n%s", out)
	}
	var shown struct {
		CostUSD   float64 `json:"cost_usd"`
		WouldCost *struct {
			Ratio    float64 `json:"ratio"`
			CostUSD  float64 `json:"cost_usd"`
			WouldUSD float64 `json:"would_usd"`
			Calls    int     `json:"calls"`
			Stale    bool    `json:"stale"`
		} `json:"would_cost"`
	}
	if err := json.Unmarshal([]byte(c.ok("", "--store", db, "--json", "session", "show", small)), &shown); err != nil {
		t.Fatal(err)
	}
	if w := shown.WouldCost; w == nil || w.Calls != 30 || w.Ratio <= 0 || w.Ratio > 2 || w.Stale || w.CostUSD != shown.CostUSD ||
		math.Abs(w.WouldUSD-w.CostUSD*w.Ratio) > 1e-9 {
		t.Errorf("the stored replay, read back: %+v (the session cost $%v)", w, shown.CostUSD)
	}
	if out := c.ok("", "--store", db, "session", "list"); !strings.Contains(out, small) || !strings.Contains(out, "recorded: ") {
		t.Errorf("session list:\n%s", out)
	}
	found := c.ok("", "--store", db, "search", "Overcome")
	if !strings.Contains(found, small) || !strings.Contains(found, "chat") {
		t.Errorf("search Overcome:\n%s", found)
	}
	if q := c.ok("", "--store", db, "query-session", small, "Overcome"); !strings.Contains(q, "passages matching") || !strings.Contains(q, "«Overcome»") {
		t.Errorf("query-session:\n%s", q)
	}
}
