package tests

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/datasets"
)

// A session imported from its transcript (commits only, never served) is
// listed by `sessions` as recorded, in text and --json, and `session show`
// and `calls` describe it (its calls the requests its harness recorded).
func TestCLIRecordedSessions(t *testing.T) {
	c := newCLI(t)
	db := c.path("s.db")
	c.ok("", "--store", db, "import", filepath.Join(datasets.Dir(t), inspecttest.Small))
	var ss []struct {
		ID       string `json:"session_id"`
		Recorded bool   `json:"recorded"`
		Commits  int    `json:"commits"`
		Calls    int    `json:"calls"`
		Source   string `json:"source"`
	}
	if err := json.Unmarshal([]byte(c.ok("", "--store", db, "--json", "sessions")), &ss); err != nil || len(ss) != 1 {
		t.Fatalf("sessions --json: %v %+v", err, ss)
	}
	s := ss[0]
	if !s.Recorded || s.Commits < 1 || s.Calls < 1 || !strings.HasSuffix(s.Source, filepath.Base(inspecttest.Small)) {
		t.Fatalf("recorded session %+v", s)
	}
	if out := c.ok("", "--store", db, "sessions"); !strings.Contains(out, s.ID) || !strings.Contains(out, "claude-code") {
		t.Fatalf("sessions:\n%s", out)
	}
	out := c.ok("", "--store", db, "session", "show", s.ID)
	for _, want := range []string{"recorded  imported or captured", "commits   ", "source    " + s.Source} {
		if !strings.Contains(out, want) {
			t.Fatalf("session show lacks %q:\n%s", want, out)
		}
	}
	var calls []struct {
		Recorded bool `json:"recorded"`
	}
	if out := c.ok("", "--store", db, "--json", "calls", s.ID); json.Unmarshal([]byte(out), &calls) != nil || len(calls) != s.Calls || !calls[0].Recorded {
		t.Fatalf("calls of a recorded session: %q", out)
	}
	if r := c.run("", "--store", db, "session", "show", "no-such-session"); r.code == 0 || !strings.Contains(r.stderr, "no-such-session") {
		t.Fatalf("session show of an unknown id: %d %q", r.code, r.stderr)
	}
}
