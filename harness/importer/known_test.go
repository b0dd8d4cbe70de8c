package importer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
)

// TestDatasetsNoDamage: every Claude Code and Pi dataset file, and a
// Claude Code session with the record types of 2.1.330 and later and a Pi
// session with a context edit, import with no damaged line reported: a
// record type is damage only when its line is not a JSON record.
func TestDatasetsNoDamage(t *testing.T) {
	files := datasetFiles(t)
	cc := strings.Join([]string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s1","timestamp":"2026-12-01T10:00:00Z","message":{"role":"user","content":"hello"}}`,
		`{"type":"api-request-shape","hash":"sha256:shape1","uuid":"x1","sessionId":"s1","timestamp":"2026-12-01T10:00:01Z","body":{"system":[],"tools":[]}}`,
		`{"type":"api-request-blob","hash":"sha256:m1","uuid":"x2","sessionId":"s1","timestamp":"2026-12-01T10:00:01Z","body":{"role":"user","content":"hello"}}`,
		`{"type":"api-request","requestId":"req_1","model":"claude-sonnet-4-5","betas":["b1"],"messages":["sha256:m1"],"shape":"sha256:shape1","uuid":"x3","sessionId":"s1","timestamp":"2026-12-01T10:00:01Z"}`,
		`{"type":"atis-latch","sessionId":"s1","timestamp":"2026-12-01T10:00:01Z"}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","requestId":"req_1","timestamp":"2026-12-01T10:00:02Z","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"output_tokens":2,"cache_read_input_tokens":0,"cache_creation_input_tokens":100,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":100}},"diagnostics":{"cache_miss_reason":"new_session"}}}`,
		`{"type":"cost-state","sessionId":"s1","timestamp":"2026-12-01T10:00:02Z","costUSD":0.01}`,
		`{"type":"tools-used","sessionId":"s1","timestamp":"2026-12-01T10:00:02Z","tools":[]}`,
		`{"type":"ai-title","sessionId":"s1","aiTitle":"Saying hello"}`,
	}, "\n") + "\n"
	pi := strings.Join([]string{
		`{"type":"session","version":3,"id":"p1","timestamp":"2026-12-01T10:00:00Z","cwd":"/w"}`,
		`{"type":"message","id":"e1","parentId":null,"timestamp":"2026-12-01T10:00:01Z","message":{"role":"user","content":"hi","timestamp":1}}`,
		`{"type":"message","id":"e2","parentId":"e1","timestamp":"2026-12-01T10:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"cut off"}],"stopReason":"length","timestamp":2}}`,
		`{"type":"context_edit","id":"e3","parentId":"e2","timestamp":"2026-12-01T10:00:03Z","targetId":"e2","replacement":null}`,
	}, "\n") + "\n"
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		dir := t.TempDir()
		paths := make([]string, 0, len(files)+2)
		for _, src := range files {
			paths = append(paths, copyTo(t, src, dir))
		}
		for name, body := range map[string]string{"new-records.jsonl": cc, "pi-edit.jsonl": pi} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, p)
		}
		im := importer.New(e.Store, importer.Options{})
		for _, p := range paths {
			res, err := im.ImportFile(ctx, p)
			if err != nil {
				t.Fatalf("%s: %v", filepath.Base(p), err)
			}
			if len(res.Problems) > 0 {
				t.Errorf("%s: %d damaged lines reported: %v", filepath.Base(p), len(res.Problems), res.Problems)
			}
			for _, s := range res.Sessions {
				if len(s.Unknown) > 0 {
					t.Errorf("%s: record types unknown: %v", filepath.Base(p), s.Unknown)
				}
			}
		}
	})
}
