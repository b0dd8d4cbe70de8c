package inspect

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
)

// TestRecordedTotals: a recorded session summarized from the totals its
// state stores (no call read) has the figures of the summary from its
// calls: calls, tokens, cache share, last call, cost per model, the
// breaks by cause and what they lost; an unpriced model's cost, and a
// trajectory's without usage, unknown.
func TestRecordedTotals(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	odd := filepath.Join(t.TempDir(), "odd.jsonl")
	lines := []string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"sess-odd","timestamp":"2030-01-02T10:00:00Z","message":{"role":"user","content":"hi"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"sess-odd","timestamp":"2030-01-02T10:00:05Z","message":{"id":"m1","role":"assistant","model":"claude-mystery-9","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":60}}}`,
	}
	if err := os.WriteFile(odd, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	swe := filepath.Join(datasets.Dir(t), "swe-agent/ctf-forensics__flash__105e7840.traj") // no model, no usage
	files := []string{filepath.Join(datasets.Dir(t), "claude-code/templar__35fb9f94__ee2ab929.jsonl"), odd, swe}
	im := importer.New(se.Store, importer.Options{})
	var sids []string
	for _, f := range files {
		res, err := im.ImportFile(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		sids = append(sids, res.Sessions[0].Session)
	}
	in := New(se.Store, Options{Formats: formats.Commits()})
	for _, sid := range sids {
		c, err := in.chain(ctx, sid, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, ok, err := recorded.ReadState(ctx, se.Store, sid, c.Commits)
		if err != nil || !ok || st.Totals == nil {
			t.Fatalf("%s: state %+v (%v, %v)", sid, st, ok, err)
		}
		rc, err := recorded.Page(ctx, se.Store, sid, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		a, b := Session{ID: sid}, Session{ID: sid}
		in.summaryFromTotals(&a, st)
		in.summaryFromCalls(&b, st.Title, st.Prompt, rc)
		if math.Abs(a.CostUSD-b.CostUSD) > 1e-9 || math.Abs(a.Cost-b.Cost) > 1e-6 {
			t.Errorf("%s: cost %v from the totals, %v from the calls", sid, a.CostUSD, b.CostUSD)
		}
		a.CostUSD, a.Cost = b.CostUSD, b.Cost
		for i := range a.Lost {
			if i < len(b.Lost) && math.Abs(a.Lost[i].LostUSD-b.Lost[i].LostUSD) < 1e-9 {
				a.Lost[i].LostUSD, a.Lost[i].LostCost = b.Lost[i].LostUSD, b.Lost[i].LostCost
			}
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: from the totals\n%+v\nfrom the calls\n%+v", sid, a, b)
		}
		cc := sid != "sess-odd" && !strings.HasPrefix(sid, "ctf-")
		if cc && len(b.Lost) != 2 { // an expiry and a compaction
			t.Errorf("%s: breaks %+v", sid, b.Lost)
		}
		if b.Calls == 0 || cc == b.CostUnknown {
			t.Errorf("%s: %d calls, cost unknown %v", sid, b.Calls, b.CostUnknown)
		}
	}
}
