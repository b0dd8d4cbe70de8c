package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/internal/datasets"
)

// TestImportSessionsCLI imports a dataset transcript and a Pi file through
// the CLI (--json), then again (unchanged), and checks that a version log
// is still read as one.
func TestImportSessionsCLI(t *testing.T) {
	ds := datasets.Dir(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	src := filepath.Join(dir, "src")
	os.MkdirAll(src, 0o755)
	for _, f := range []string{"claude-code/raw/claude-reliability__hello-world-script.jsonl", "pi/pi-mono__large-session.jsonl"} {
		b, err := os.ReadFile(filepath.Join(ds, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(src, filepath.Base(f)), b, 0o644)
	}
	runCLI := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--store", db}, args...), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	out, errs, code := runCLI("--json", "import", src)
	if code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	var res struct {
		Imported int `json:"imported"`
		Files    []struct {
			Harness string `json:"harness"`
			Tip     string `json:"tip"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Imported != 2 || res.Files[0].Harness != "claude-code" || res.Files[1].Harness != "pi" {
		t.Fatalf("import --json: %v %s", err, out)
	}
	out, _, code = runCLI("import", src)
	if code != 0 || !strings.Contains(out, "2 files: 0 imported, 0 grew, 2 unchanged") {
		t.Fatalf("second import: %d %s", code, out)
	}
	// The file chain materializes to the file.
	m := filepath.Join(dir, "m.jsonl")
	if _, errs, code := runCLI("commit", "materialize", res.Files[1].Tip, "--stop", "root", "-o", m); code != 0 {
		t.Fatalf("materialize: %s", errs)
	}
	a, _ := os.ReadFile(m)
	b, _ := os.ReadFile(filepath.Join(src, "pi-mono__large-session.jsonl"))
	if !bytes.Equal(a, b) {
		t.Fatalf("materialized %d bytes, want %d", len(a), len(b))
	}
	// A version log is still a version log.
	vl := filepath.Join(dir, "v.log")
	if _, errs, code := runCLI("export", "-o", vl); code != 0 {
		t.Fatal(errs)
	}
	db2 := filepath.Join(dir, "t.db")
	var o2, e2 bytes.Buffer
	if code := run(context.Background(), []string{"--store", db2, "import", vl}, strings.NewReader(""), &o2, &e2); code != 0 || !strings.Contains(o2.String(), "applied") {
		t.Fatalf("version log import: %d %s %s", code, o2.String(), e2.String())
	}
	if k, _ := importKind(vl, ""); k != "versionlog" {
		t.Fatalf("kind of a version log: %q", k)
	}
	for name, want := range map[string]string{"": "versionlog", "garbage\n": "versionlog", `{"t":"tx"}` + "\n": "versionlog",
		`{"type":"session","version":3,"id":"x"}` + "\n": "", `{"type":"user","sessionId":"s","message":{}}` + "\n": ""} {
		f := filepath.Join(dir, "kind.jsonl")
		os.WriteFile(f, []byte(name), 0o644)
		if k, err := importKind(f, ""); err != nil || k != want {
			t.Fatalf("kind of %q: %q %v, want %q", name, k, err, want)
		}
	}
	if _, _, code := runCLI("import", "--partial", src); code != 2 {
		t.Fatalf("--partial with sessions: exit %d, want 2", code)
	}
}

// A transcript with one line over the per-line limit is not imported
// whole: the import fails (exit status not 0) naming the file and the
// line, instead of succeeding with the lines after it dropped.
func TestImportSessionsLineOverLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 32 MiB line")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "big.jsonl")
	var b bytes.Buffer
	b.WriteString(`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s-big","timestamp":"2025-01-01T00:00:00Z","message":{"role":"user","content":"hello"}}` + "\n")
	b.WriteString(`{"type":"user","uuid":"u2","parentUuid":"u1","sessionId":"s-big","timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":"`)
	b.WriteString(strings.Repeat("x", harness.MaxLineBytes))
	b.WriteString(`"}}` + "\n")
	b.WriteString(`{"type":"user","uuid":"u3","parentUuid":"u2","sessionId":"s-big","timestamp":"2025-01-01T00:00:02Z","message":{"role":"user","content":"after"}}` + "\n")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--store", filepath.Join(dir, "s.db"), "import", p}, strings.NewReader(""), &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), p+": line 2 ") {
		t.Fatalf("import of a file with a line over the limit: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}
