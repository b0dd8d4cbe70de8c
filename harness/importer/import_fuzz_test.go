package importer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
)

// FuzzImportFile imports arbitrary bytes as a session file of every
// format (and detected) into a real store: no panic; an import that
// reads the file accounts for every byte of it (imported up to a line
// end, the rest pending) and counts no more lines than the file has;
// every problem names the file and a line of it; a second import of the
// unchanged file adds nothing.
func FuzzImportFile(f *testing.F) {
	for _, s := range []string{
		`{"type":"user","uuid":"u1","sessionId":"s1","message":{"role":"user","content":"hi"}}` + "\n" +
			`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"ok"}]}}` + "\n",
		`{"type":"session","version":3,"id":"p1","cwd":"/w"}` + "\n" + `{"type":"message","id":"e1","parentId":null,"message":{"role":"user","content":"x"}}` + "\n",
		`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"c1"}}` + "\n" + `{"type":"event_msg","payload":{"type":"task_started"}}` + "\n",
		`{"trajectory":[{"action":"ls","observation":"a"}],"history":[]}`,
		"{\"type\":\"user\"\n\xff\xfe\n[[[[[[\n", "", "\n\n", `{"type":"user","uuid":"u","message":{"content":[{"type":"tool_result","tool_use_id":"t"}]}}`,
	} {
		for as := range uint8(5) {
			f.Add([]byte(s), as)
		}
	}
	ctx := context.Background()
	dir := f.TempDir()
	st, err := bitemporal.Open(ctx, filepath.Join(dir, "s.db"), bitemporal.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	n := 0
	f.Fuzz(func(t *testing.T, data []byte, as uint8) {
		h := []Harness{Auto, ClaudeCode, Pi, Codex, SWEAgent}[as%5]
		n++
		ext := ".jsonl"
		if h == SWEAgent {
			ext = ".traj"
		}
		p := filepath.Join(dir, fmt.Sprintf("f%d-%d%s", os.Getpid(), n, ext))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		im := New(st, Options{As: h})
		res, err := im.ImportFile(ctx, p)
		if err != nil || res == nil {
			return
		}
		if res.Error != "" || res.Status == "failed" {
			return
		}
		lines := res.Harness != string(SWEAgent) // a .traj document is one JSON value
		if res.Offset+res.Pending != int64(len(data)) && lines {
			t.Fatalf("%s: imported %d and %d pending of %d bytes", h, res.Offset, res.Pending, len(data))
		}
		if nl := bytes.Count(data, []byte("\n")); lines && res.Lines > nl {
			t.Fatalf("%s: %d lines counted in a file of %d newlines", h, res.Lines, nl)
		}
		for _, pr := range res.Problems {
			if pr.Path != p || pr.Line < 0 || pr.Line > bytes.Count(data, []byte("\n"))+1 {
				t.Fatalf("%s: a problem naming %s:%d in a file of %d lines: %s", h, pr.Path, pr.Line, bytes.Count(data, []byte("\n")), pr.Msg)
			}
		}
		again, err := im.ImportFile(ctx, p)
		if err != nil {
			t.Fatalf("%s: importing the unchanged file again: %v", h, err)
		}
		if again.NewLines != 0 || len(again.Commits) != 0 {
			t.Fatalf("%s: a second import added %d lines, %d commits", h, again.NewLines, len(again.Commits))
		}
	})
}
