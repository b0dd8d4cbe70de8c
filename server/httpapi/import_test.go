package httpapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

const importLines = `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s-http","timestamp":"2025-01-01T00:00:00Z","message":{"role":"user","content":"hello"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s-http","timestamp":"2025-01-01T00:00:01Z","message":{"id":"m1","role":"assistant","model":"claude","content":[{"type":"text","text":"hi"}]}}
`

// TestImportRoute imports a transcript under the server's roots (then
// again after it grew: only the new line), refuses a path outside them,
// and imports an uploaded file; every exchange checked against
// docs/openapi.yaml.
func TestImportRoute(t *testing.T) {
	root := t.TempDir()
	e := newEnv(t, func(o *Options) { o.Roots = []string{root} })
	p := filepath.Join(root, "s.jsonl")
	lines := strings.SplitAfter(importLines, "\n")
	os.WriteFile(p, []byte(lines[0]), 0o644)
	var r1, r2 importer.Result
	e.ok("POST", "/v1/import", ImportBody{Path: p}, &r1)
	if r1.Imported != 1 || r1.Files[0].Harness != "claude-code" || len(r1.Files[0].Commits) != 1 {
		t.Fatalf("first import %+v", r1)
	}
	os.WriteFile(p, []byte(importLines), 0o644)
	e.ok("POST", "/v1/import", ImportBody{Path: p}, &r2)
	if r2.Grew != 1 || r2.Files[0].NewLines != 1 || len(r2.Files[0].Commits) != 1 {
		t.Fatalf("second import %+v", r2)
	}
	var m MaterializeResponse
	e.ok("POST", "/v1/commits/"+r2.Files[0].Tip+"/materialize", MaterializeBody{Stop: "root"}, &m)
	if m.Content == nil || *m.Content != importLines {
		t.Fatalf("materialized %v", m.Content)
	}
	outside := e.file("x.jsonl", importLines)
	e.fails(http.StatusForbidden, CodeForbidden, "POST", "/v1/import", ImportBody{Path: outside})
	e.fails(http.StatusBadRequest, CodeBadRequest, "POST", "/v1/import", ImportBody{Path: "relative.jsonl"})

	// An upload.
	req, _ := http.NewRequest("POST", e.ts.URL+"/v1/import?name=up.jsonl&as=claude-code", strings.NewReader(importLines))
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := e.spec.Check(req, []byte(importLines), resp.StatusCode, resp.Header, b); err != nil {
		t.Errorf("OpenAPI: %v", err)
	}
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"imported":1`)) {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}

	// Without roots, the server's roots are the directory it was started
	// in: a path elsewhere is refused.
	e2 := newEnv(t, func(o *Options) { o.Roots = nil })
	e2.fails(http.StatusForbidden, CodeForbidden, "POST", "/v1/import", ImportBody{Path: p})
}

// A folder import under the roots never follows a symbolic link out of
// them: the linked file fails (naming the roots), the rest is imported,
// and the outside file's content reaches no commit.
func TestImportFolderSymlinkOutOfRoots(t *testing.T) {
	root := t.TempDir()
	e := newEnv(t, func(o *Options) { o.Roots = []string{root} })
	outside := filepath.Join(outsideDir(t), "secret.jsonl")
	secret := strings.ReplaceAll(importLines, "hello", "the outside secret")
	writeTestFile(t, outside, strings.ReplaceAll(secret, "s-http", "s-out"))
	dir := filepath.Join(root, "projects")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "a.jsonl"), importLines)
	if err := os.Symlink(outside, filepath.Join(dir, "b.jsonl")); err != nil {
		t.Fatal(err)
	}
	var r importer.Result
	e.ok("POST", "/v1/import", ImportBody{Path: dir}, &r)
	if r.Imported != 1 || len(r.Files) != 2 {
		t.Fatalf("folder import: %+v", r)
	}
	for _, f := range r.Files {
		switch filepath.Base(f.Path) {
		case "a.jsonl":
			if f.Status != importer.Imported {
				t.Errorf("a.jsonl: %+v", f)
			}
		case "b.jsonl":
			if f.Status != importer.Failed || !strings.Contains(f.Error, "outside") {
				t.Errorf("the link out of the roots: %+v", f)
			}
		}
	}
	e.fails(http.StatusForbidden, CodeForbidden, "POST", "/v1/import", ImportBody{Path: filepath.Join(dir, "b.jsonl")})
	log, err := e.st.TxLog(context.Background(), -1, 100000)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(log); bytes.Contains(b, []byte("outside secret")) {
		t.Fatal("the outside file's content is in the store")
	}
}

// An uploaded file's answer, its problems and its errors name it by its
// name, never by the server's temporary path.
func TestImportUploadHidesTempPath(t *testing.T) {
	e := newEnv(t, nil)
	for _, c := range []struct{ query, body string }{
		{"?name=up.jsonl&as=claude-code", importLines + "{not json\n"},
		{"?name=run.traj&as=swe-agent", "{\"trajectory\": 7"},
		{"?name=x.jsonl&as=pi", "\x00\x01 not a session\n"},
	} {
		req, _ := http.NewRequest("POST", e.ts.URL+"/v1/import"+c.query, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(b, []byte("ctxstore-upload")) || bytes.Contains(b, []byte(os.TempDir()+"/")) {
			t.Errorf("upload %s: the answer shows the server's path: %d %s", c.query, resp.StatusCode, b)
		}
		if resp.StatusCode == 500 {
			t.Errorf("upload %s: %d %s", c.query, resp.StatusCode, b)
		}
	}
}

// An upload of more lines than MaxImportLines is refused (413 naming the
// count and the limit), gzip or not, before anything is written; one at
// the limit is imported.
func TestImportUploadLineBudget(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxImportLines = 2 })
	upload := func(body []byte, ct string) (int, string) {
		req, _ := http.NewRequest("POST", e.ts.URL+"/v1/import?name=up.jsonl&as=claude-code", bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	three := importLines + strings.Replace(strings.SplitAfter(importLines, "\n")[0], `"u1"`, `"u0"`, 1)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(three))
	zw.Close()
	for _, c := range []struct {
		body []byte
		ct   string
	}{{[]byte(three), "application/x-ndjson"}, {gz.Bytes(), "application/gzip"}} {
		code, body := upload(c.body, c.ct)
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "holds 3 lines, over the limit of 2") {
			t.Fatalf("%s upload of 3 lines: %d %s", c.ct, code, body)
		}
	}
	docs, err := e.st.Query(context.Background(), store.Query{Where: []store.Pred{store.Where("type", commits.DocCommit)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 0 {
		t.Fatalf("a refused upload wrote %d commits", len(docs))
	}
	if code, body := upload([]byte(importLines), "application/x-ndjson"); code != 200 {
		t.Fatalf("upload of 2 lines: %d %s", code, body)
	}
}
