package httpapi

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBodyBudget: while one large body holds the server's body budget,
// other large bodies (declared, streamed without a length, or a small
// gzip upload that decompresses large) are answered 503 with Retry-After
// before they grow the server, small requests still pass, and once the
// large one has ended a large body passes again.
func TestBodyBudget(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.BodyBudget = 4 << 20 })
	url := e.ts.URL
	send := func(path, ctype string, body io.Reader, length int64) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodPost, url+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = length
		req.Header.Set("Content-Type", ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	large := int64(4 << 20) // counts 3 MiB (the first MiB is free)
	// A holds 3 MiB: declared 4 MiB, 3.5 MiB sent, the rest held back.
	pr, pw := io.Pipe()
	defer pw.Close() // a failing test must not leave the request waiting
	done := make(chan *http.Response, 1)
	go func() {
		resp, _ := send("/v1/query", "application/json", pr, large)
		done <- resp
	}()
	if _, err := pw.Write(bytes.Repeat([]byte(" "), 7<<19)); err != nil {
		t.Fatal(err)
	}
	busy := func(what string, resp *http.Response, body string) {
		t.Helper()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, CodeUnavailable) {
			t.Fatalf("%s: %d, Retry-After %q, %s", what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	start := time.Now()
	resp, body := send("/v1/query", "application/json", bytes.NewReader(bytes.Repeat([]byte(" "), int(large))), large)
	busy("a second declared large body", resp, body)
	resp, body = send("/v1/query", "application/json", io.MultiReader(bytes.NewReader(bytes.Repeat([]byte(" "), 6<<20))), -1)
	busy("a large body without a length", resp, body)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte("\n"), 16<<20))
	zw.Close()
	if gz.Len() > 1<<20 {
		t.Fatalf("the gzip body is %d bytes, not small", gz.Len())
	}
	resp, body = send("/v1/import?name=x.jsonl", "application/gzip", bytes.NewReader(gz.Bytes()), int64(gz.Len()))
	busy("a small gzip body decompressing large", resp, body)
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the refusals took %v", d)
	}
	// Small requests pass (the query is bad: 400, not 503).
	resp, body = send("/v1/query", "application/json", strings.NewReader(`{"nope":`), -1)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a small request while the budget is held: %d %s", resp.StatusCode, body)
	}
	// A ends; a large body passes the budget again.
	pw.Write(bytes.Repeat([]byte(" "), int(large)-7<<19))
	pw.Close()
	if resp := <-done; resp == nil || resp.StatusCode == http.StatusServiceUnavailable {
		t.Fatalf("the first large body: %v", resp)
	}
	resp, body = send("/v1/query", "application/json", bytes.NewReader(bytes.Repeat([]byte(" "), int(large))), large)
	if resp.StatusCode == http.StatusServiceUnavailable {
		t.Fatalf("a large body after the budget was released: %d %s", resp.StatusCode, body)
	}
	if e.srv.bodies.used != 0 {
		t.Fatalf("%d bytes of the budget still held", e.srv.bodies.used)
	}
}

// TestBodyBudgetAlone: a request alone passes whatever its size within
// its own limits: the budget bounds concurrency, not one body.
func TestBodyBudgetAlone(t *testing.T) {
	b := &bodyBudget{max: 2 << 20}
	l := b.lease()
	if !l.need(64 << 20) {
		t.Fatal("a lone request refused")
	}
	l2 := b.lease()
	if l2.need(2<<20) || !l2.refused || l2.held != 0 {
		t.Fatalf("a second large request given the budget: held %d", l2.held)
	}
	if !b.lease().need(smallBody) {
		t.Fatal("a small request refused")
	}
	l.release()
	l2.release()
	if b.used != 0 {
		t.Fatalf("%d bytes held after release", b.used)
	}
}
