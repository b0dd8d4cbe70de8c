package recorded_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// TestIncrementalAndSearch: a transcript imported, then imported again
// once it grew, has the calls of the whole file stored and its prompts and
// answers in its chat, so full-text search finds a word only the grown
// part holds, in that session.
func TestIncrementalAndSearch(t *testing.T) {
	steps := []ccStep{
		{at: 0, prompt: "start the work", write5m: 2000},
		{at: 10 * time.Second, prompt: "next step", read: 2010, write5m: 50},
		{at: 20 * time.Second, prompt: "more", read: 2060, write5m: 50},
	}
	p := ccFile(t, steps)
	e := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	im := importer.New(e.Store, importer.Options{})
	if _, err := im.ImportFile(ctx, p); err != nil {
		t.Fatal(err)
	}
	full := ccFile(t, append(steps,
		ccStep{at: 30 * time.Second, prompt: "now the zanzibarquux module", read: 2110, write5m: 50},
		ccStep{at: 40 * time.Second, prompt: "and the tests", read: 2160, write5m: 50}))
	b, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := im.ImportFile(ctx, p)
	if err != nil || res.Status != importer.Grew {
		t.Fatalf("second import: %+v, %v", res, err)
	}
	svc := commits.New(e.Store, commits.Options{Registry: formats.Commits()})
	d, err := recorded.Derive(ctx, svc, "s-attr")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := recorded.Page(ctx, e.Store, "s-attr", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Calls) != 5 || len(stored) != 5 {
		t.Fatalf("%d calls derived, %d stored; want 5", len(d.Calls), len(stored))
	}
	for i := range stored {
		if !sameCall(stored[i], d.Calls[i]) {
			t.Errorf("call %d: stored %+v, derived %+v", i+1, stored[i], d.Calls[i])
		}
	}
	if p, err := recorded.Page(ctx, e.Store, "s-attr", 2, 2); err != nil || len(p) != 2 || p[0].N != 2 || p[1].N != 3 {
		t.Errorf("page 2..3: %+v, %v", p, err)
	}
	var turns []string
	if err := session.EachTurn(ctx, e.Store, "s-attr", store.Basis{}, func(n int, tr objects.Turn) error {
		turns = append(turns, tr.UserText())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(turns) != 5 || turns[3] != "now the zanzibarquux module" {
		t.Errorf("chat turns %q", turns)
	}
	hits, err := e.Store.(store.Searcher).Search(ctx, store.SearchQuery{Text: "zanzibarquux"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Session != "s-attr" || hits[0].Kind != "chat" || hits[0].Turn != 3 {
		t.Errorf("search hits %+v", hits)
	}
	st, ok, err := recorded.ReadState(ctx, e.Store, "s-attr", -1)
	if err != nil || !ok || st.Calls != 5 || st.Prompt != "start the work" {
		t.Errorf("state %+v (%v, %v)", st, ok, err)
	}
}

// TestExactRequest: a Claude Code call whose request the transcript
// recorded (api-request, its message blobs, its system-and-tools shape)
// is that request, byte for byte what was recorded, labelled; a changed
// shape is a cache break of the system prompt or tools.
func TestExactRequest(t *testing.T) {
	lines := []string{
		`{"type":"api-request-shape","hash":"sh1","content":{"system":[{"type":"text","text":"You are Claude Code."}],"tools":[{"name":"Bash"}]}}`,
		`{"type":"api-request-blob","hash":"h1","body":{"role":"user","content":"hi"}}`,
		`{"type":"api-request","requestId":"req_1","model":"claude-sonnet-4-5","params":{"max_tokens":32000},"messages":["h1"],"shape":"sh1"}`,
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s-exact","timestamp":"2030-03-01T09:00:00Z","message":{"role":"user","content":"hi"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","requestId":"req_1","sessionId":"s-exact","timestamp":"2030-03-01T09:00:01Z","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hello"}],"usage":{"input_tokens":5,"output_tokens":3,"cache_creation_input_tokens":3000}}}`,
		`{"type":"api-request-shape","hash":"sh2","content":{"system":[{"type":"text","text":"You are Claude Code."}],"tools":[{"name":"Bash"},{"name":"Read"}]}}`,
		`{"type":"api-request-blob","hash":"h2","body":{"role":"assistant","content":[{"type":"text","text":"hello"}]}}`,
		`{"type":"api-request-blob","hash":"h3","body":{"role":"user","content":"read it"}}`,
		`{"type":"api-request","requestId":"req_2","model":"claude-sonnet-4-5","params":{"max_tokens":32000},"messages":["h1","h2","h3"],"shape":"sh2"}`,
		`{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s-exact","timestamp":"2030-03-01T09:00:10Z","message":{"role":"user","content":"read it"}}`,
		`{"type":"assistant","uuid":"a2","parentUuid":"u2","requestId":"req_2","sessionId":"s-exact","timestamp":"2030-03-01T09:00:11Z","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":5,"output_tokens":3,"cache_creation_input_tokens":3100}}}`,
	}
	p := filepath.Join(t.TempDir(), "exact.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	svc, sids := importFiles(t, p)
	d, err := recorded.Derive(context.Background(), svc, sids[0][0])
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Calls) != 2 {
		t.Fatalf("%d calls", len(d.Calls))
	}
	r, err := d.Request(2)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Exact || r.Call.RequestID != "req_2" || !json.Valid(r.Body) || len(r.Body) != r.Call.Bytes {
		t.Fatalf("request %+v: %s", r.Call, r.Body)
	}
	var body struct {
		Model     string            `json:"model"`
		MaxTokens int               `json:"max_tokens"`
		System    []json.RawMessage `json:"system"`
		Tools     []json.RawMessage `json:"tools"`
		Messages  []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || body.Model != "claude-sonnet-4-5" || body.MaxTokens != 32000 ||
		len(body.System) != 1 || len(body.Tools) != 2 || len(body.Messages) != 3 || string(body.Messages[2]) != `{"role":"user","content":"read it"}` {
		t.Errorf("body %s (%v)", r.Body, err)
	}
	var kinds []string
	for _, sp := range r.Spans {
		kinds = append(kinds, sp.Kind)
	}
	if strings.Join(kinds, ",") != "system,tools,user,assistant,user" {
		t.Errorf("spans %v", kinds)
	}
	if c := d.Calls[1]; c.Cause != recorded.CauseShape || c.Shape != "sh2" {
		t.Errorf("call 2: cause %s (%s), shape %q", c.Cause, c.Detail, c.Shape)
	}
	// Rebuilt from the commits up to each call, the recorded requests
	// are read first (a second pass) and the bodies are the same.
	stored, err := recorded.Page(context.Background(), svc.Store(), sids[0][0], 1, 0)
	if err != nil || len(stored) != 2 {
		t.Fatalf("%d calls stored, %v", len(stored), err)
	}
	streamed := 0
	*recorded.OnPrefix = func() { streamed++ }
	defer func() { *recorded.OnPrefix = nil }()
	checkRequestsOf(t, svc, p, sids[0][0], d, stored)
	if streamed < 4 { // calls 1, 2, 1, 2
		t.Errorf("%d of 4 requests rebuilt a page of commits at a time", streamed)
	}
}
