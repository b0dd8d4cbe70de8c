package mcp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/session/commits"
)

// TestRecordedCalls: the call tools answer for an imported session as for
// a served one: one call per recorded request with its usage and cache
// cause, a call's detail, and its request as the harness sent it.
func TestRecordedCalls(t *testing.T) {
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	file := filepath.Join(datasets.Dir(t), "claude-code", "attio-mcp-server__465eb442__8664c04e.jsonl")
	res, err := importer.New(st, importer.Options{}).Import(ctx, file)
	if err != nil || len(res.Files) != 1 || len(res.Files[0].Sessions) != 1 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	sid := res.Files[0].Sessions[0].Session
	c := StoreCalls{Store: st}
	list, err := c.List(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 30 { // the file's message ids with usage (explain/inspect's fileCalls)
		t.Fatalf("%d calls, want 30", len(list))
	}
	for _, x := range list {
		if !x.Recorded || x.Usage == nil || x.Model == "" || x.Cause == "" || x.Tokens <= 0 {
			t.Fatalf("call %+v", x)
		}
	}
	d, err := c.Show(ctx, sid, 2)
	if err != nil || d.N != 2 || d.Layout != "recorded" || d.Usage == nil || d.Usage.CacheRead == 0 {
		t.Fatalf("show 2: %+v, %v", d, err)
	}
	m, err := c.Materialize(ctx, sid, 0)
	if err != nil || m.N != 30 || !json.Valid(m.Request) || m.Bytes != len(m.Request) {
		t.Fatalf("materialize the last: n %d, %d bytes, %v", m.N, m.Bytes, err)
	}
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(m.Request, &body); err != nil || len(body.Messages) < 30 {
		t.Errorf("the last request holds %d messages (%v)", len(body.Messages), err)
	}
	// Every call's request is the one deriving the whole session gives,
	// rebuilt from the commits up to the call (its depth is stored).
	dv, err := recorded.Derive(ctx, commits.New(st, commits.Options{Registry: formats.Commits()}), sid)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 30; n++ {
		r, ok, err := c.recorded(ctx, sid, n)
		if err != nil || !ok || r.Depth < 0 {
			t.Fatalf("call %d: stored depth %d, %v", n, r.Depth, err)
		}
		m, err := c.Materialize(ctx, sid, n)
		if err != nil {
			t.Fatal(err)
		}
		want, err := dv.Request(n)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Request) != string(want.Body) {
			t.Fatalf("call %d's request differs from the whole derivation's", n)
		}
	}
	s := StoreSessions{Store: st}
	all, err := s.List(ctx)
	if err != nil || len(all) != 1 || all[0].Calls != 30 {
		t.Errorf("sessions %+v, %v", all, err)
	}
}
