package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// A mounted face (the web inspector) is behind the API's browser guard:
// without tokens a rebound Host is refused, a foreign Origin and a
// cross-site fetch too, and a form body is accepted.
func TestMountGuard(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.Mount("/face/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("face")) }))
	try := func(method, host string, hd map[string]string, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, e.ts.URL+"/face/x", strings.NewReader(body))
		if host != "" {
			req.Host = host
		}
		for k, v := range hd {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if c := try("GET", "", nil, ""); c != 200 {
		t.Fatalf("plain GET: %d", c)
	}
	for name, c := range map[string]int{
		"rebound host":   try("GET", "evil.example:7411", nil, ""),
		"foreign origin": try("GET", "", map[string]string{"Origin": "http://evil.example"}, ""),
		"cross-site":     try("GET", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, ""),
		"text body":      try("POST", "", map[string]string{"Content-Type": "text/plain"}, "token=x"),
	} {
		if c != 403 && c != 415 {
			t.Errorf("%s: %d, want a refusal", name, c)
		}
	}
	if c := try("POST", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "token=x"); c != 200 {
		t.Fatalf("form POST: %d", c)
	}
}
