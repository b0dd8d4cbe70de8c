package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// TestRecordedCallAsWhole: a recorded call's view, rebuilt from its stored
// record and the commits up to it, is the view the whole session's
// derivation gives (the request byte for byte, its blocks, the call's
// figures, times to the millisecond the store keeps), for calls 1, 10, a
// middle one and the last of the dataset's Claude Code sessions (their
// sub-agent lanes too) and of inspecttest.Recorded sessions; and it is
// rebuilt without deriving the session (a call past what the commits up
// to it hold would fail the view).
func TestRecordedCallAsWhole(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	files, _ := filepath.Glob(filepath.Join(datasets.Dir(t), "claude-code/*.jsonl"))
	if len(files) < 6 {
		t.Fatalf("%d Claude Code dataset files", len(files))
	}
	if testing.Short() {
		files = slices.DeleteFunc(files, func(f string) bool {
			return !strings.Contains(f, "465eb442") && !strings.Contains(f, "dmux")
		})
	}
	im := importer.New(se.Store, importer.Options{})
	var sids []string
	for _, f := range files {
		res, err := im.ImportFile(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range res.Sessions {
			sids = append(sids, s.Session)
		}
	}
	inspecttest.Recorded(t, se.Store, "rec-1", 300, 1, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	inspecttest.Recorded(t, se.Store, "rec-5", 300, 5, time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	sids = append(sids, "rec-1", "rec-5")
	in := New(se.Store, Options{Formats: formats.Commits()})
	svc := commits.New(se.Store, commits.Options{Registry: formats.Commits()})
	checked := 0
	for _, sid := range sids {
		d, err := recorded.Derive(ctx, svc, sid)
		if err != nil {
			t.Fatal(err)
		}
		n := len(d.Calls)
		for _, k := range slices.Compact([]int{1, min(10, n), (n + 1) / 2, n}) {
			if k < 1 {
				continue
			}
			stored, err := recorded.Page(ctx, se.Store, sid, k, 1)
			if err != nil || len(stored) != 1 {
				t.Fatalf("%s call %d: %d stored, %v", sid, k, len(stored), err)
			}
			if _, err := recorded.RequestOf(ctx, svc, sid, stored[0]); err != nil {
				t.Errorf("%s call %d is not rebuilt from the commits up to it: %v", sid, k, err)
			}
			got, err := in.Call(ctx, sid, k)
			if err != nil {
				t.Fatal(err)
			}
			r, err := d.Request(k)
			if err != nil {
				t.Fatal(err)
			}
			want := in.requestView(sid, r)
			if string(got.Raw) != string(want.Raw) {
				t.Errorf("%s call %d: %d bytes, the whole session's %d", sid, k, len(got.Raw), len(want.Raw))
			}
			if a, b := viewJSON(t, got), viewJSON(t, want); a != b {
				t.Errorf("%s call %d:\n got %.600s\nwant %.600s", sid, k, a, b)
			}
			checked++
		}
	}
	if checked < 10 {
		t.Errorf("%d calls checked", checked)
	}
	// A call stored without its commit's depth (by an import before
	// calls recorded it) is not rebuilt from a part of the session; its
	// view is still the whole derivation's.
	doc, err := se.Store.Entity(ctx, recorded.CallID("rec-5", 10), store.Basis{})
	if err != nil {
		t.Fatal(err)
	}
	delete(doc, "depth")
	if _, err := store.SubmitWait(ctx, se.Store, []store.Op{store.Put(doc)}); err != nil {
		t.Fatal(err)
	}
	stored, err := recorded.Page(ctx, se.Store, "rec-5", 10, 1)
	if err != nil || len(stored) != 1 || stored[0].Depth != -1 {
		t.Fatalf("call 10 stored without its depth: %+v, %v", stored, err)
	}
	if _, err := recorded.RequestOf(ctx, svc, "rec-5", stored[0]); !errors.Is(err, recorded.ErrNotBounded) {
		t.Errorf("call 10 without its depth: %v, want ErrNotBounded", err)
	}
	d, err := recorded.Derive(ctx, svc, "rec-5")
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Request(10)
	if err != nil {
		t.Fatal(err)
	}
	got, err := in.Call(ctx, "rec-5", 10)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := viewJSON(t, got), viewJSON(t, in.requestView("rec-5", r)); a != b {
		t.Errorf("call 10 without its depth:\n got %.600s\nwant %.600s", a, b)
	}
}

// viewJSON is a view as JSON with its times to the millisecond (what a
// stored call keeps).
func viewJSON(t *testing.T, v *CallView) string {
	t.Helper()
	c := *v
	c.Call.Time = c.Call.Time.Truncate(time.Millisecond)
	ms := func(s float64) float64 { return float64(int64(s*1000)) / 1000 }
	c.Call.GapSeconds, c.Call.IdleSeconds = ms(c.Call.GapSeconds), ms(c.Call.IdleSeconds)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
