package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

const initMsg = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// listBatch is a batch of n tools/list requests, ids from first.
func listBatch(n, first int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, first+i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// rpcError decodes a JSON-RPC error answer; code 0 when b is not one.
func rpcError(b []byte) (code int, msg string) {
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(b, &e)
	return e.Error.Code, e.Error.Message
}

// TestBatchCapHTTP: over streamable HTTP a batch of more than MaxBatch
// messages is answered with one JSON-RPC error and not run, while a batch
// within the cap is served.
func TestBatchCapHTTP(t *testing.T) {
	srv := httptest.NewServer(Handler(New(Options{})))
	defer srv.Close()
	post := func(body, session string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, body := post(initMsg, "")
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || session == "" {
		t.Fatalf("initialize: %d %q", resp.StatusCode, body)
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)

	start := time.Now()
	resp, body = post(listBatch(MaxBatch+1, 1), session)
	if code, msg := rpcError([]byte(body)); resp.StatusCode != http.StatusBadRequest || code != -32600 || !strings.Contains(msg, "batch") {
		t.Fatalf("a batch of %d: %d %q", MaxBatch+1, resp.StatusCode, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the refused batch took %v", d)
	}
	resp, body = post(listBatch(3, 1000), session)
	if resp.StatusCode != 200 || strings.Count(body, `{"jsonrpc":"2.0","id":100`) != 3 {
		t.Fatalf("a batch of 3: %d %.300q", resp.StatusCode, body)
	}
}

// TestBatchCapIO: over stdio a batch of more than MaxBatch messages is
// answered with one JSON-RPC error, and the messages after it are served.
func TestBatchCapIO(t *testing.T) {
	in := strings.Join([]string{
		initMsg,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		listBatch(MaxBatch+1, 1),
		`{"jsonrpc":"2.0","id":9999,"method":"tools/list"}`,
	}, "\n") + "\n"
	pr, pw := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	go func() { inW.Write([]byte(in)) }() // stdin stays open until the test ends
	defer inW.Close()
	go func() { RunIO(ctx, New(Options{}), inR, pw); pw.Close() }()
	sc := bufio.NewScanner(pr)
	sc.Buffer(nil, 16<<20)
	var refused, answered bool
	for !(refused && answered) && sc.Scan() {
		line := sc.Bytes()
		if code, msg := rpcError(line); code == -32600 && strings.Contains(msg, "batch") {
			refused = true
		}
		if strings.HasPrefix(string(line), "[") {
			t.Fatalf("the oversized batch ran: %.200s", line)
		}
		if strings.Contains(string(line), `"id":9999`) && strings.Contains(string(line), `"tools"`) {
			answered = true
		}
	}
	if !refused || !answered {
		t.Fatalf("refused %v, the next message answered %v (%v)", refused, answered, sc.Err())
	}
}

// TestBatchLen counts a batch's messages without decoding them and tells
// a batch from a single message.
func TestBatchLen(t *testing.T) {
	for in, want := range map[string]int{
		`[]`: 0, ` [1, {"a":[2,3]}, "x"]`: 3, `{"jsonrpc":"2.0"}`: -1, `[1,`: -1, ``: -1, `[[],[]]`: 2,
	} {
		if got := batchLen([]byte(in)); got != want {
			t.Errorf("batchLen(%q) = %d, want %d", in, got, want)
		}
	}
}

// The limits table of docs/security.md states the batch cap the code has.
func TestBatchCapDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("a JSON-RPC batch of at most %d messages (`mcp.MaxBatch`)", MaxBatch)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "| MCP server") {
			if !strings.Contains(l, want) {
				t.Fatalf("docs/security.md's MCP row does not say %q: %s", want, l)
			}
			return
		}
	}
	t.Fatal("docs/security.md's limits table has no MCP server row")
}
