package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestMalformedSessionImports: every damage of the malformed-input
// catalogue, in a Claude Code transcript imported with the real binary
// (import --as sessions): either the file is imported, its damaged lines
// listed with file and line, and its complete lines materialize back byte
// for byte, or it is refused with a clear error and nothing is written.
// Never a panic, never terminal escapes echoed.
func TestMalformedSessionImports(t *testing.T) {
	c := newCLI(t)
	good := ccLine("u1", "", "hello") + ccLine("u2", "u1", "again")
	for i, d := range catalogue() {
		bad := d.fn([]byte(good))
		db := c.path("imp" + string(rune('a'+i)) + ".db")
		p := c.write("t.jsonl", string(bad))
		r := c.run("", "--store", db, "--json", "import", "--as", "sessions", p)
		if strings.Contains(r.stderr, "panic") || strings.Contains(r.stdout+r.stderr, "\x1b") {
			t.Errorf("%s: %q %q", d.name, r.stdout, r.stderr)
			continue
		}
		if r.code != 0 {
			if !strings.HasPrefix(r.stderr, "ctxstore: ") {
				t.Errorf("%s: exit %d, unclear error %q", d.name, r.code, r.stderr)
			}
			continue
		}
		var res struct {
			Files []struct {
				Tip      string `json:"tip"`
				Offset   int64  `json:"offset"`
				Problems []struct {
					Path string `json:"path"`
					Line int    `json:"line"`
				} `json:"problems"`
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Files) != 1 {
			t.Fatalf("%s: %v %s", d.name, err, r.stdout)
		}
		f := res.Files[0]
		if !bytes.Equal(bad, []byte(good)) && len(bad) > 0 && f.Tip != "" && len(f.Problems) == 0 && bytes.HasSuffix(bad, []byte("\n")) {
			t.Errorf("%s: imported with no damaged line listed", d.name)
		}
		for _, pr := range f.Problems {
			if pr.Path != p || pr.Line < 1 {
				t.Errorf("%s: problem at %s:%d", d.name, pr.Path, pr.Line)
			}
		}
		if f.Tip != "" {
			m := c.path("m.jsonl")
			if mr := c.run("", "--store", db, "commit", "materialize", f.Tip, "--stop", "root", "-o", m); mr.code != 0 {
				t.Fatalf("%s: materialize: %s", d.name, mr.stderr)
			}
			b, err := os.ReadFile(m)
			if err != nil || !bytes.Equal(b, bad[:f.Offset]) {
				t.Errorf("%s: materialized %q, want the %d bytes imported", d.name, b, f.Offset)
			}
		}
	}
}
