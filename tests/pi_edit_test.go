package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/transcript"
)

// TestPiContextEdit: Pi's context_edit entries (since 0.87) replace or omit
// a message in future model context without touching history. A test
// extension of its own (tests/testdata/pi/redact.ts), loaded beside
// ctxstore's, redacts a secret in one bash output and omits another
// output at the end of the turn that ran them. With ctxstore in the loop,
// the secret and the omitted output never reach the scripted endpoint (no
// request of the log holds them; the redacted output does reach it), and
// ctxstore's store never holds them either: what it stores of that call is
// the replacement. Pi's session file keeps both originals, as Pi wrote
// them, and its context_edit entries, which harness/pi reads back: the
// session's thread (ctxstore import) shows the replacement, not the
// secret, and not the omitted output.
func TestPiContextEdit(t *testing.T) {
	t.Parallel()
	const secret, noise, later = "hunter2-a8f3e", "NOISE-77c1", "swordfish-19d0"
	e := newPiEnv(t)
	// The values come from the environment, so that only the outputs hold
	// them (a file a command reads is indexed by ctxstore from disk).
	e.env = append(e.env, "T_SECRET="+secret, "T_NOISE="+noise, "T_LATER="+later)
	e.exts = []string{"tests/testdata/pi/redact.ts"}
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	script := []piStep{
		{Tool: "bash", Args: map[string]any{"command": "echo SECRET=$T_SECRET; echo public-line"}, ID: "call_secret"}, // turn 1
		{Tool: "bash", Args: map[string]any{"command": "echo $T_NOISE"}, ID: "call_noise"},
		{Tool: "bash", Args: map[string]any{"command": "echo LATER=$T_LATER"}, ID: "call_later"}, // redacted after the next call
		{Text: "Turn 1 done."},
		{Text: "Turn 2 done."}, // turn 2
	}
	pi := startPi(t, e, srv.pxURL, script)
	pi.prompt("Print the environment.")
	pi.prompt("And now?")
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
	// ctxstore stored neither original: the session's bundle (every entity
	// the session needs, with its whole history, as plain JSON) holds
	// neither, and does hold the redacted output.
	file := piSessionFile(t, e.sessions)
	st, bundle := srv.fetch("GET", "/v1/sessions/"+piSessionID(t, file)+"/export", "", nil)
	if st != 200 {
		t.Fatalf("export: %d %s", st, bundle)
	}
	for _, s := range []string{secret, noise} {
		if bytes.Contains(bundle, []byte(s)) {
			t.Errorf("ctxstore's store holds %q", s)
			for _, l := range bytes.Split(bundle, []byte("\n")) {
				if bytes.Contains(l, []byte(s)) {
					t.Logf("%.400s", l)
				}
			}
		}
	}
	if !bytes.Contains(bundle, []byte("SECRET=[redacted]")) {
		t.Errorf("ctxstore's store lacks the redacted output")
	}
	srv.Stop()
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
