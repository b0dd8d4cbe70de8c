package tests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/objects/markdown"
	"github.com/ctxstore/ctxstore/server/httpapi"
	"github.com/ctxstore/ctxstore/sync/sessionbundle"
	"github.com/ctxstore/ctxstore/sync/sessionbundle/sessionbundletest"
)

// The malformed-input suite (docs/security.md): every input
// path is fed the catalogue of damage below, and each must answer with a
// clear error (naming the file, line, byte, field or message) and leave
// the store exactly as it was (its version log export, hashed, unchanged).

// damage is one way of breaking a good input.
type damage struct {
	name string
	fn   func(good []byte) []byte
}

// catalogue returns the damage applied to a good JSON input (one document,
// one JSON Lines file, or one request body).
func catalogue() []damage {
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	return []damage{
		{"truncated", func(b []byte) []byte { return b[:len(b)*2/3] }},
		{"truncated by one byte", func(b []byte) []byte { return bytes.TrimRight(b, "\n")[:len(bytes.TrimRight(b, "\n"))-1] }},
		{"bit flip", func(b []byte) []byte {
			c := bytes.Clone(b)
			if i := bytes.IndexByte(c, '"'); i >= 0 {
				c[i] ^= 0x04 // '"' becomes '&'
			} else if len(c) > 0 {
				c[0] ^= 0x80
			}
			return c
		}},
		{"two objects on a line", func(b []byte) []byte {
			l := bytes.TrimRight(b, "\n")
			if i := bytes.IndexByte(l, '\n'); i >= 0 {
				l = l[:i]
			}
			return append(append(bytes.Clone(l), l...), '\n')
		}},
		{"invalid UTF-8", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"`), []byte("\"\xff\xfe"), 2)
		}},
		{"NUL byte", func(b []byte) []byte { return bytes.Replace(b, []byte(`:`), []byte(":\x00"), 1) }},
		{"deep nesting", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`{`), []byte(`{"deep":`+deep+`,`), 1)
		}},
		{"wrong type at the top", func([]byte) []byte { return []byte("[1,2,3]\n") }},
		{"empty", func([]byte) []byte { return nil }},
		{"garbage", func([]byte) []byte { return []byte("\x1b[2J\x1b[31mnot json at all\n") }},
	}
}

// storeDigest hashes the version log export of the store at db.
func storeDigest(c *cli, db string) string {
	c.t.Helper()
	r := c.run("", "--store", db, "export")
	if r.code != 0 {
		c.t.Fatalf("export of %s: %d %s", db, r.code, r.stderr)
	}
	// The export names no time of its own, so the same store gives the
	// same bytes.
	sum := sha256.Sum256([]byte(r.stdout))
	return hex.EncodeToString(sum[:])
}

// refused runs ctxstore, which must fail with a clear error on stderr and
// leave db's digest as before.
func refused(t *testing.T, c *cli, db, before, what string, stdin string, args ...string) {
	t.Helper()
	r := c.run(stdin, args...)
	if r.code == 0 {
		t.Errorf("%s: accepted (stdout %.200s)", what, r.stdout)
	}
	if r.code != 0 && (!strings.HasPrefix(r.stderr, "ctxstore: ") || len(r.stderr) < 20 || strings.Contains(r.stderr, "panic")) {
		t.Errorf("%s: unclear error %q", what, r.stderr)
	}
	if strings.Contains(r.stderr, "\x1b") {
		t.Errorf("%s: a raw terminal escape on stderr", what)
	}
	if got := storeDigest(c, db); got != before {
		t.Errorf("%s: the store changed", what)
	}
}

func TestMalformedDocuments(t *testing.T) {
	c := newCLI(t)
	db := c.path("m.db")
	c.ok("", "--store", db, "put", c.write("seed.json", `{"xt/id":"seed","n":1}`))
	before := storeDigest(c, db)
	good := []byte(`{"xt/id":"m1","n":1,"s":"text","tags":["a","b"]}` + "\n")
	goodLines := []byte(`{"xt/id":"l1","n":1}` + "\n" + `{"xt/id":"l2","n":2}` + "\n")
	for _, d := range catalogue() {
		refused(t, c, db, before, "put: "+d.name, string(d.fn(good)), "--store", db, "put")
		refused(t, c, db, before, "put --lines: "+d.name, string(d.fn(goodLines)), "--store", db, "put", "--lines")
	}
	for name, doc := range map[string]string{
		"duplicate xt/id":        `{"xt/id":"a","xt/id":"b"}`,
		"duplicate key":          `{"xt/id":"a","n":1,"n":2}`,
		"id not a string":        `{"xt/id":5}`,
		"no id":                  `{"n":1}`,
		"empty id":               `{"xt/id":""}`,
		"reserved id":            `{"xt/id":"ctxstore:sync-cursor:x","n":1}`,
		"integer beyond 2^53":    `{"xt/id":"f","n":18446744073709551616}`,
		"poison float":           `{"xt/id":"f","n":1.2345678901234567e19}`,
		"rounded silently":       `{"xt/id":"f","n":9007199254740993}`,
		"non-finite":             `{"xt/id":"f","n":1e400}`,
		"invalid UTF-8 in a key": "{\"xt/id\":\"f\",\"\xff\":1}",
	} {
		refused(t, c, db, before, "put: "+name, doc, "--store", db, "put")
	}
	// A huge value inside the limits goes in; the store is then what it
	// says (a sanity check that the suite can tell acceptance).
	big := fmt.Sprintf(`{"xt/id":"big","s":%q}`, strings.Repeat("x", 1<<20))
	c.ok(big, "--store", db, "put")
	if storeDigest(c, db) == before {
		t.Fatal("an accepted put did not change the digest")
	}
}

func TestMalformedVersionLogs(t *testing.T) {
	c := newCLI(t)
	src, dst := c.path("src.db"), c.path("dst.db")
	c.ok("", "--store", src, "put", "--lines", c.write("d.jsonl", `{"xt/id":"a","n":1}`+"\n"+`{"xt/id":"b","s":"x"}`+"\n"))
	c.ok("", "--store", src, "put", c.write("e.json", `{"xt/id":"a","n":2}`))
	good := []byte(c.ok("", "--store", src, "export"))
	c.ok("", "--store", dst, "put", c.write("seed.json", `{"xt/id":"seed","n":1}`))
	before := storeDigest(c, dst)
	for _, d := range catalogue() {
		bad := d.fn(good)
		refused(t, c, dst, before, "import FILE: "+d.name, "", "--store", dst, "import", c.write("bad.log", string(bad)))
		refused(t, c, dst, before, "import -: "+d.name, string(bad), "--store", dst, "import", "-")
	}
	// Damage in the last transaction: nothing before it is applied either.
	lines := strings.SplitAfter(string(good), "\n")
	last := len(lines) - 3 // the last tx line (before the end line and "")
	cut := strings.Join(lines[:last], "") + strings.Replace(lines[last], `"a"`, `"z"`, 1) + strings.Join(lines[last+1:], "")
	refused(t, c, dst, before, "import: a changed last transaction", "", "--store", dst, "import", c.write("late.log", cut))
}

// bundle makes a small session bundle in a scratch store.
func bundle(t *testing.T) []byte {
	t.Helper()
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "b.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := sessionbundletest.New(t, st, "mal", "")
	s.Turns(2)
	var b bytes.Buffer
	if _, err := sessionbundle.Export(ctx, st, "mal", &b, sessionbundle.ExportOptions{TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestMalformedBundles(t *testing.T) {
	c := newCLI(t)
	dst := c.path("dst.db")
	c.ok("", "--store", dst, "put", c.write("seed.json", `{"xt/id":"seed","n":1}`))
	before := storeDigest(c, dst)
	good := bundle(t)
	for _, d := range catalogue() {
		bad := d.fn(good)
		refused(t, c, dst, before, "session import: "+d.name, "", "--store", dst, "session", "import", c.write("bad.bundle", string(bad)))
	}
	// A foreign entity: the bundle names another session's head.
	hostile := bytes.Replace(good, []byte(`"session:mal"`), []byte(`"session:victim"`), -1)
	refused(t, c, dst, before, "session import: another session's head", "", "--store", dst, "session", "import", c.write("hostile.bundle", string(hostile)))
}

func TestMalformedTranscripts(t *testing.T) {
	c := newCLI(t)
	good := ccLine("u1", "", "hello") + ccLine("u2", "u1", "again")
	for _, d := range catalogue() {
		bad := d.fn([]byte(good))
		p := c.write("t.jsonl", string(bad))
		r := c.run("", "replay", "--json", "--tokenizer", "bytes", "--strategies", "naive", p)
		if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "\x1b") {
			t.Errorf("replay %s: %q", d.name, r.stderr)
		}
		// Either the damaged lines are listed with file and line and the
		// rest replayed, or the file is refused with a clear error.
		if r.code == 0 && len(bad) > 0 && !bytes.Equal(bad, []byte(good)) && !strings.Contains(r.stderr, p+":") && !strings.Contains(r.stderr, "0 messages") {
			t.Errorf("replay %s: exit 0 and no damaged line listed:\n%s", d.name, r.stderr)
		}
		if r.code != 0 && !strings.HasPrefix(r.stderr, "ctxstore: ") {
			t.Errorf("replay %s: exit %d, unclear error %q", d.name, r.code, r.stderr)
		}
	}
}

// ccLine is one Claude Code user record.
func ccLine(uuid, parent, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"sessionId":"s1","type":"user","message":{"role":"user","content":%q},"uuid":%q,"timestamp":"2025-01-01T00:00:00Z"}`+"\n", p, text, uuid)
}

// TestMalformedHTTPBodies: every route with a body answers 4xx with a JSON
// error, never 500 or 200, and the store is unchanged.
func TestMalformedHTTPBodies(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "h.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-mal"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Options{Store: st, Resolver: res, MaxBody: 1 << 20, Roots: []string{os.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer func() { ts.Close(); srv.Close() }()
	send := func(method, path, ct string, body []byte) (int, httpapi.ErrorBody) {
		req, _ := http.NewRequest(method, ts.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var eb httpapi.ErrorBody
		_ = json.Unmarshal(b, &eb)
		return resp.StatusCode, eb
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	open, _ := json.Marshal(httpapi.OpenRequest{Cwd: dir, SystemPrompt: "p"})
	if st, eb := send("PUT", "/v1/sessions/s1", "application/json", open); st != 200 {
		t.Fatalf("open: %d %+v", st, eb)
	}
	digest := func() string {
		s, err := st.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(s.LatestSubmitted)
	}
	before := digest()
	routes := []struct {
		method, path, ct string
		good             []byte
	}{
		{"PUT", "/v1/sessions/s2", "application/json", open},
		{"POST", "/v1/sessions/s1/context", "application/json", []byte(`{"messages":[{"role":"user","content":"hi","timestamp":1}]}`)},
		{"POST", "/v1/sessions/s1/tools/read", "application/json", []byte(`{"args":{"path":"a.txt"}}`)},
		{"POST", "/v1/sessions/s1/observe", "application/json", []byte(`{"tool_call_id":"c1","tool":"bash","args":{"command":"ls"},"output":"a.txt"}`)},
		{"POST", "/v1/query", "application/json", []byte(`{"where":[{"field":"type","value":"note"}]}`)},
		{"POST", "/v1/sessions/mal/import", "application/x-ndjson", bundle(t)},
	}
	for _, rt := range routes {
		for _, d := range catalogue() {
			bad := d.fn(rt.good)
			code, eb := send(rt.method, rt.path, rt.ct, bad)
			if code < 400 || code >= 500 || eb.Code == "" || eb.Message == "" {
				t.Errorf("%s %s, %s: %d %+v", rt.method, rt.path, d.name, code, eb)
			}
		}
		code, eb := send(rt.method, rt.path, rt.ct, bytes.Repeat([]byte(" "), 2<<20))
		if code != 413 {
			t.Errorf("%s %s, over the body limit: %d %+v", rt.method, rt.path, code, eb)
		}
	}
	// Hostile ids.
	for _, p := range []string{"/v1/sessions/..%2F..%2Fetc/context", "/v1/sessions/%1b%5b31m/context", "/v1/sessions/" + strings.Repeat("x", 200)} {
		if code, eb := send("PUT", p, "application/json", open); code < 400 || code >= 500 {
			t.Errorf("PUT %s: %d %+v", p, code, eb)
		}
	}
	for _, id := range []string{"has space", "a#b", strings.Repeat("x", 600), "chat:other", "session:other"} {
		body, _ := json.Marshal(map[string]any{"tool_call_id": id, "tool": "bash", "args": map[string]any{}})
		if code, eb := send("POST", "/v1/sessions/s1/observe", "application/json", body); code < 400 || code >= 500 {
			t.Errorf("observe with tool call id %.30q: %d %+v", id, code, eb)
		}
	}
	if digest() != before {
		t.Error("a refused request changed the store")
	}
}

// TestMalformedMarkdown: the notes parser takes any bytes without
// panicking; damage gives a note (Markdown has no syntax errors) or a
// clear error for broken frontmatter.
func TestMalformedMarkdown(t *testing.T) {
	good := []byte("---\ntitle: Plan\ntags: [a, b]\naliases: [p]\n---\n# Plan\n\nSee [[Other]] and #tag.\n")
	for _, d := range catalogue() {
		n, err := markdown.Parse(d.fn(good))
		if err == nil && n == nil {
			t.Errorf("%s: no note and no error", d.name)
		}
		if err != nil && len(err.Error()) < 10 {
			t.Errorf("%s: unclear error %q", d.name, err)
		}
	}
	for name, src := range map[string]string{
		"unclosed frontmatter":  "---\ntitle: x\n# body\n",
		"frontmatter not a map": "---\n- a\n- b\n---\nbody\n",
		"deep frontmatter":      "---\nx: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n---\n",
		"NUL and invalid UTF-8": "---\ntitle: \x00\xff\n---\n\x00\xfe",
	} {
		n, err := markdown.Parse([]byte(src))
		if err == nil && n == nil {
			t.Errorf("%s: no note and no error", name)
		}
	}
}
