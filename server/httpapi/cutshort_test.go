package httpapi

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// A body cut short (the client announces more bytes than it sends, then
// stops writing) is the client's fault on every route that reads a body:
// 400, never 500.
func TestBodyCutShort(t *testing.T) {
	e := newEnv(t, nil)
	e.open("s1")
	u, err := url.Parse(e.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, ct, body string }{
		{"PUT", "/v1/sessions/s2", "application/json", `{"cwd":"` + e.dir + `","system_prompt":"x"`},
		{"POST", "/v1/sessions/s1/context", "application/json", `{"messages":[{"role":"user","content":"hi"}`},
		{"POST", "/v1/sessions/s1/observe", "application/json", `{"tool_call_id":"c1","tool":"bash"`},
		{"POST", "/v1/sessions/s1/tools/read", "application/json", `{"args":{"path":"x"`},
		{"POST", "/v1/sessions/s3/import", "application/x-ndjson", `{"ctxstore-session-bundle":1`},
		{"POST", "/v1/sessions/s3/import", "application/gzip", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"},
		{"POST", "/v1/import?name=a.jsonl", "application/x-ndjson", `{"type":"user"`},
		{"POST", "/v1/import?name=a.jsonl", "application/gzip", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"},
		{"POST", "/v1/import", "application/json", `{"path":"/x"`},
	} {
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
			c.method, c.path, u.Host, c.ct, len(c.body)+100, c.body)
		conn.(*net.TCPConn).CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			conn.Close()
			continue // the server closed the connection without an answer: no 500 either
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s (%s) cut short: %d, want 400", c.method, c.path, c.ct, resp.StatusCode)
		}
	}
}
