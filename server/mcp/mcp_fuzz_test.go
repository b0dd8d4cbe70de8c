package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
)

// FuzzHTTP posts arbitrary bodies to the MCP server (a client session
// initialized once, over a real, empty store): no panic, no 5xx (a bad
// message is the client's error), and a batch over MaxBatch is refused
// with the JSON-RPC error whatever it holds.
func FuzzHTTP(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_object","arguments":{"id":"x","tx_id":-1}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_session","arguments":{"session":""}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"commit_materialize","arguments":{"session":"s","format":"nope"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"object_history","arguments":{"id":"a","valid_time":"yesterday"}}}`,
		`[{"jsonrpc":"2.0","id":6,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		listBatch(MaxBatch+1, 10),
		`{"jsonrpc":"2.0","id":7,"method":"nope"}`, `[]`, `{`, `"x"`, `{"jsonrpc":"1.0","id":{}}`,
	} {
		f.Add([]byte(s))
	}
	st, err := bitemporal.Open(context.Background(), filepath.Join(f.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	h := Handler(New(Options{Store: st}))
	post := func(body, session string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	w := post(initMsg, "")
	session := w.Header().Get("Mcp-Session-Id")
	if w.Code != 200 || session == "" {
		f.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	f.Fuzz(func(t *testing.T, body []byte) {
		w := post(string(body), session)
		if w.Code >= 500 {
			t.Fatalf("%d for %q: %s", w.Code, body, w.Body)
		}
		var batch []json.RawMessage
		if json.Unmarshal(body, &batch) == nil && len(batch) > MaxBatch {
			if code, _ := rpcError(w.Body.Bytes()); code != -32600 || w.Code != http.StatusBadRequest {
				t.Fatalf("a batch of %d answered %d %.200s", len(batch), w.Code, w.Body)
			}
		}
	})
}

// FuzzBatchLen: batchLen agrees with decoding the array whole, for any
// input that decodes as one.
func FuzzBatchLen(f *testing.F) {
	for _, s := range []string{`[]`, `[1,[2],{"a":3}]`, ` [ "x" ] `, `{}`, `[1,]`, `[1] [2]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n := batchLen(b)
		var batch []json.RawMessage
		if json.Unmarshal(b, &batch) == nil && batch != nil && n != len(batch) {
			t.Fatalf("batchLen(%q) = %d, the array holds %d", b, n, len(batch))
		}
	})
}
