package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzRequestBodies: any body sent to a route that reads one is answered
// with a JSON status below 500 (a 500 is a bug), never a panic.
func FuzzRequestBodies(f *testing.F) {
	e := newEnv(f, func(o *Options) { o.MaxBody = 1 << 16 })
	e.file("a.txt", "a\n")
	e.open("s1")
	h := e.srv.Handler()
	paths := []string{"/v1/sessions/s1/context", "/v1/sessions/s1/tools/read", "/v1/sessions/s1/tools/activate",
		"/v1/sessions/s1/observe", "/v1/query", "/v1/sessions/s2"}
	for i, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`, `{"args":{"path":"a.txt"}}`, `{"args":{"id":"x"}}`,
		`{"tool_call_id":"c1","tool":"ls","args":{},"output":"a.txt"}`, `{"where":[{"field":"type","value":"x"}]}`,
		`{"cwd":"/"}`, `{"log":[{"role":"assistant","tool_calls":[{"id":"c","name":"bash","args":{"n":1e400}}]}]}`,
	} {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := paths[int(route)%len(paths)]
		method := "POST"
		if path == "/v1/sessions/s2" {
			method = "PUT"
		}
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s %q: %d %s", method, path, body, w.Code, w.Body.Bytes())
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: Content-Type %q", path, ct)
		}
	})
}
