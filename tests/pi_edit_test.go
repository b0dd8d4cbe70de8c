package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/session/commits"
)

// TestPiContextEdit: Pi's context_edit entries (since 0.87) replace or omit
// a message in future model context without touching history. A test
// extension of its own (tests/testdata/pi/redact.ts), loaded beside
// ctxstore's, redacts a secret in one bash output and omits another
// output at the end of the turn that ran them, and redacts a third output
// one turn after the model (and ctxstore) saw it. With ctxstore in the
// loop, the secret and the omitted output never reach the scripted
// endpoint (no request of the log holds them; the redacted output does
// reach it), the late-edited output is its replacement from the next call
// on, and ctxstore's store holds none of the originals: not the session's
// export, the late-edited call's history, search, a spill file, a
// conversation commit or the store's files. The session then goes on in
// a new server process and a new Pi process: ctxstore answers from its
// commits (which name the evicted original up to the late edit) without
// any original. Pi's session file keeps the
// originals, as Pi wrote them, and its context_edit entries, which
// harness/pi reads back: the session's thread (ctxstore import) shows the
// replacement, not the secret, and not the omitted output.
func TestPiContextEdit(t *testing.T) {
	t.Parallel()
	const secret, noise, later = "hunter2-a8f3e", "NOISE-77c1", "swordfish-19d0"
	e := newPiEnv(t)
	// The values come from the environment, so that only the outputs hold
	// them (a file a command reads is indexed by ctxstore from disk).
	// A bare head (Pi's default with ctxstore): outputs that enter as
	// previews are whole in spill files.
	e.env = append(e.env, "T_SECRET="+secret, "T_NOISE="+noise, "T_LATER="+later, "CTXSTORE_HEAD=bare")
	e.exts = []string{"tests/testdata/pi/redact.ts"}
	db, spillRoot := filepath.Join(t.TempDir(), "store.db"), t.TempDir()
	srv := startServe(t, "sqlite:"+db, "--spill-dir", spillRoot)
	// The context calls answered, those that failed (the extension then
	// fails open: Pi sends its own context), and those whose log the
	// service took for a replaced one (an edited log is not).
	var answered, failed, resets atomic.Int32
	observe := srv.proxy.Observe
	srv.proxy.Observe = func(req *http.Request, reqBody []byte, status int, body []byte) {
		observe(req, reqBody, status, body)
		if !strings.HasSuffix(req.URL.Path, "/context") {
			return
		}
		var out struct {
			Code     string `json:"code"`
			Ingested struct {
				Reset bool `json:"reset"`
			} `json:"ingested"`
		}
		_ = json.Unmarshal(body, &out)
		switch {
		case status == 200:
			answered.Add(1)
		case out.Code != "log_mismatch":
			failed.Add(1)
			t.Logf("context call failed: %d %s", status, body)
		}
		if out.Ingested.Reset {
			resets.Add(1)
		}
	}
	script := []piStep{
		{Tool: "bash", Args: map[string]any{"command": "echo SECRET=$T_SECRET; echo public-line"}, ID: "call_secret"}, // turn 1
		{Tool: "bash", Args: map[string]any{"command": "echo $T_NOISE"}, ID: "call_noise"},
		// Redacted after the next call; long enough to enter as a preview
		// (whose spill file holds it whole), short enough for Pi's bash to
		// keep whole.
		{Tool: "bash", Args: map[string]any{"command": "echo LATER=$T_LATER; seq -f 'output line %g of a long listing, long enough to be previewed' 1 400"}, ID: "call_later"},
		{Text: "Turn 1 done."},
		{Text: "Turn 2 done."}, // turn 2
	}
	pi := startPi(t, e, srv.pxURL, script)
	pi.prompt("Print the environment.")
	pi.prompt("And now?")
	// While the session is open: the previewed output's spill file holds
	// the replacement, and no spill file the original.
	spilled := false
	filepath.WalkDir(spillRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
		}
		if bytes.Contains(b, []byte(later)) {
			t.Errorf("spill file %s holds the output edited after the model saw it", p)
		}
		spilled = spilled || filepath.Base(p) == "call_later.txt" && bytes.HasPrefix(b, []byte("LATER=[redacted]\noutput line 1 "))
		return nil
	})
	if !spilled {
		t.Errorf("no spill file holds the late-edited output's replacement")
	}
	pi.quit()

	reqs, err := os.ReadFile(e.ctxLog)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(reqs), []byte("\n"))
	if len(lines) != len(script) {
		t.Fatalf("the model was called %d times, want %d", len(lines), len(script))
	}
	for i, l := range lines {
		for _, s := range []string{secret, noise} {
			if bytes.Contains(l, []byte(s)) {
				t.Errorf("request %d holds %q, which an extension took out of the context", i, s)
			}
		}
	}
	// The replacement is what the model sees from the turn's next call on.
	for i, l := range lines[1:] {
		if !bytes.Contains(l, []byte("SECRET=[redacted]")) || !bytes.Contains(l, []byte("public-line")) {
			t.Errorf("request %d lacks the redacted output", i+1)
		}
	}
	// An output edited after the model saw it (request 3) is the
	// replacement from the next call on, though ctxstore had recorded it.
	if !bytes.Contains(lines[3], []byte(later)) {
		t.Errorf("request 3 lacks the output of the third command")
	}
	for i, l := range lines[4:] {
		if bytes.Contains(l, []byte(later)) || !bytes.Contains(l, []byte("LATER=[redacted]")) {
			t.Errorf("request %d holds the output edited after the model saw it, or lacks its replacement", i+4)
		}
	}
	// ctxstore answered every call (it never failed open), and took the
	// edited log for the log it applied, edited: not a replaced one, whose
	// messages it would apply again after a note.
	if a, f := answered.Load(), failed.Load(); int(a) != len(script) || f > 0 {
		t.Errorf("ctxstore answered %d context calls of %d, %d failed", a, len(script), f)
	}
	if n := resets.Load(); n > 0 {
		t.Errorf("ctxstore took the edited log for a replaced one %d times", n)
	}
	// ctxstore stored no original, not even of the output edited after
	// it recorded it: the session's bundle (every entity the session
	// needs, with its whole history, as plain JSON) holds none, and does
	// hold the redacted outputs; the late-edited call's history is one
	// version, the replacement; search finds no original.
	file := piSessionFile(t, e.sessions)
	st, bundle := srv.fetch("GET", "/v1/sessions/"+piSessionID(t, file)+"/export", "", nil)
	if st != 200 {
		t.Fatalf("export: %d %s", st, bundle)
	}
	for _, s := range []string{secret, noise, later} {
		if bytes.Contains(bundle, []byte(s)) {
			t.Errorf("ctxstore's store holds %q", s)
			for _, l := range bytes.Split(bundle, []byte("\n")) {
				if bytes.Contains(l, []byte(s)) {
					t.Logf("%.400s", l)
				}
			}
		}
	}
	if !bytes.Contains(bundle, []byte("SECRET=[redacted]")) || !bytes.Contains(bundle, []byte("LATER=[redacted]")) {
		t.Errorf("ctxstore's store lacks a redacted output")
	}
	st, hist := srv.fetch("GET", "/v1/history/call_later?with_docs=true&with_corrections=true", "", nil)
	var h struct {
		Entries []struct {
			Doc map[string]any `json:"doc"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(hist, &h); st != 200 || err != nil || len(h.Entries) != 1 {
		t.Errorf("the late-edited call's history: %d %v, %d versions, want one: %s", st, err, len(h.Entries), hist)
	} else if c, _ := h.Entries[0].Doc["content"].(string); !strings.HasPrefix(c, "LATER=[redacted]\n") {
		t.Errorf("the late-edited call's only version holds %.40q, want the replacement", c)
	}
	for _, s := range []string{secret, noise, later} {
		st, found := srv.fetch("POST", "/v1/search", "application/json", []byte(`{"text":"`+s+`"}`))
		if st != 200 || bytes.Contains(found, []byte(`"id"`)) {
			t.Errorf("search for %q: %d %s", s, st, found)
		}
	}
	srv.Stop()
	// Nor do the conversation commits (their contents are deflated: read
	// them), or any byte of the store's files.
	noOriginals(t, db, secret, noise, later)
	// The session goes on in a new server process over the same store (its
	// context commits up to the late edit name the evicted original) and
	// a new Pi process continuing the session file: ctxstore answers the
	// call, and the request holds no original.
	srv2 := startServe(t, "sqlite:"+db, "--spill-dir", spillRoot)
	var resumed, resumeFailed atomic.Int32
	observe2 := srv2.proxy.Observe
	srv2.proxy.Observe = func(req *http.Request, reqBody []byte, status int, body []byte) {
		observe2(req, reqBody, status, body)
		switch {
		case status >= 400:
			// The open that resumes the session, or a context call.
			resumeFailed.Add(1)
			t.Logf("%s %s after the restart failed: %d %s", req.Method, req.URL.Path, status, body)
		case strings.HasSuffix(req.URL.Path, "/context"):
			resumed.Add(1)
		}
	}
	pi2 := startPi(t, e, srv2.pxURL, []piStep{{Text: "Resumed."}}, "--session", file)
	pi2.prompt("Still there?")
	pi2.quit()
	srv2.Stop()
	if r, f := resumed.Load(), resumeFailed.Load(); r != 1 || f > 0 {
		t.Errorf("after the restart ctxstore answered %d context calls of 1, %d failed", r, f)
	}
	reqs, err = os.ReadFile(e.ctxLog)
	if err != nil {
		t.Fatal(err)
	}
	lines = bytes.Split(bytes.TrimSpace(reqs), []byte("\n"))
	if len(lines) != len(script)+1 {
		t.Fatalf("the model was called %d times, want %d", len(lines), len(script)+1)
	}
	last := lines[len(lines)-1]
	for _, s := range []string{secret, noise, later} {
		if bytes.Contains(last, []byte(s)) {
			t.Errorf("the request after the restart holds %q, which an extension took out of the context", s)
		}
	}
	if !bytes.Contains(last, []byte("Still there?")) || !bytes.Contains(last, []byte("SECRET=[redacted]")) {
		t.Errorf("the request after the restart lacks the session")
	}
	noOriginals(t, db, secret, noise, later)

	// Pi kept the originals and wrote its edits.
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(secret)) || !bytes.Contains(raw, []byte(noise)) || bytes.Count(raw, []byte(`"type":"context_edit"`)) != 3 {
		t.Fatalf("Pi's session file lacks the originals or its three context_edit entries:\n%s", raw)
	}
	// Read back (harness/pi, as import and replay read it), the thread is
	// what Pi's later calls send: the replacement in the output's place, the
	// omitted output out.
	ss, err := transcript.ReadAllFile(file)
	if err != nil || len(ss) != 1 {
		t.Fatalf("reading Pi's session file: %v (%d sessions)", err, len(ss))
	}
	redacted := false
	for _, m := range ss[0].Messages {
		text := m.Text + m.Output
		if strings.Contains(text, secret) || strings.Contains(text, noise) || strings.Contains(text, later) {
			t.Errorf("the thread read back holds an edited-out output: %+v", m)
		}
		redacted = redacted || m.ToolCallID == "call_secret" && strings.Contains(m.Output, "SECRET=[redacted]")
	}
	if !redacted || len(ss[0].Report.Problems) > 0 {
		t.Errorf("the thread read back lacks the replacement, or has problems %v: %+v", ss[0].Report.Problems, ss[0].Messages)
	}
}

// noOriginals checks that no conversation commit in the SQLite store db
// (decoded), and no byte of its files, holds any of the strings.
func noOriginals(t *testing.T, db string, originals ...string) {
	t.Helper()
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, db, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs := commits.New(st, commits.Options{})
	list, err := cs.ListCommits(ctx, nil)
	if err != nil || len(list) == 0 {
		t.Fatalf("the store's conversation commits: %d, %v", len(list), err)
	}
	for _, c := range list {
		b, err := cs.Content(ctx, c)
		if err != nil {
			t.Fatalf("conversation commit %s: %v", c.ID, err)
		}
		for _, s := range originals {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("conversation commit %s (%s) holds %q", c.ID, c.Trigger, s)
			}
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(db + "*")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range originals {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("the store's file %s holds %q", filepath.Base(f), s)
			}
		}
	}
}
