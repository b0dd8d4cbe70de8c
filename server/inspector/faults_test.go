package inspector_test

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/tokens"
	"github.com/ctxstore/ctxstore/eval/replay"
	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/harness/transcript/transcripttest"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/server/inspector"
	"github.com/ctxstore/ctxstore/store"
)

// TestRecordedCallFaults: a recorded call's faults page shows what
// eval/replay's fault rule finds for that call under ctxstore's default
// strategy, replaying the same transcript directly: the count, each
// listed string, its hidden source's tool call and the call that first
// sent that output; a call without fault says 0.
func TestRecordedCallFaults(t *testing.T) {
	path := filepath.Join(datasets.Dir(t), inspecttest.Small)
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	res, err := importer.New(se.Store, importer.Options{}).ImportFile(ctx, path)
	if err != nil || len(res.Sessions) != 1 {
		t.Fatalf("import: %v %+v", err, res)
	}
	sid := res.Sessions[0].Session

	// The oracle: the replay itself.
	s, err := transcripttest.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(ctx, s, replay.Options{Strategies: []replay.Strategy{&replay.Ctxstore{Layout: "stream"}},
		Counter: replay.NewCounter(tokens.Default()), Dir: t.TempDir(), FaultList: -1,
		OpenStore: func(ctx context.Context, dir string) (store.Store, error) {
			return bitemporal.Open(ctx, filepath.Join(dir, "store.db"), bitemporal.Options{})
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Strategy != inspector.FaultStrategy {
		t.Fatalf("oracle results %+v", rep.Results)
	}
	recorded, err := inspect.New(se.Store, inspect.Options{Formats: formats.Commits()}).Calls(ctx, sid, inspect.Page{From: 1})
	if err != nil {
		t.Fatal(err)
	}
	callOf := map[string]int{}
	for _, c := range recorded {
		callOf[c.MessageID] = c.N
	}

	h, err := inspector.New(inspector.Options{Store: se.Store, Prefix: "/inspect"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	site := &site{url: ts.URL}

	var withFault, without int
	for _, c := range rep.Results[0].Calls {
		n := callOf[s.Messages[c.Message].ID]
		if n == 0 {
			continue
		}
		if c.Faults > 0 && withFault == 0 {
			withFault = n
			code, _, body := get(t, site, "", "/inspect/s/"+sid+"/c/"+strconv.Itoa(n)+"/faults")
			if code != http.StatusOK || !strings.Contains(body, `<strong id="fault-count">`+strconv.Itoa(c.Faults)+`</strong>`) {
				t.Fatalf("call %d: want %d faults:\n%s", n, c.Faults, body)
			}
			if got := strings.Count(body, `class="fault-row"`); got != c.Faults || len(c.FaultStrings) != c.Faults {
				t.Errorf("call %d: %d faults listed, the replay counts %d and names %d", n, got, c.Faults, len(c.FaultStrings))
			}
			for _, f := range c.FaultStrings {
				src := s.Messages[f.Source]
				if src.ToolCallID == "" {
					t.Fatalf("call %d: fault %q has no tool call as its source", n, f.String)
				}
				if !strings.Contains(body, `<code class="fault-string">`+html.EscapeString(f.String)+`</code>`) ||
					!strings.Contains(body, `<span class="fault-source">`+src.ToolCallID+`</span>`) ||
					!strings.Contains(body, "<mark>"+html.EscapeString(f.String)+"</mark>") {
					t.Errorf("call %d: fault %q from %s (%s) not shown:\n%s", n, f.String, src.ToolCallID, f.Tool, body)
				}
			}
			if !strings.Contains(body, `class="fault-shown" href="/inspect/s/`+sid+`/c/`) {
				t.Errorf("call %d: the source is not linked to the call that sent it:\n%s", n, body)
			}
		}
		if c.Faults == 0 && c.Checked > 0 && without == 0 {
			without = n
			if code, _, body := get(t, site, "", "/inspect/s/"+sid+"/c/"+strconv.Itoa(n)+"/faults"); code != http.StatusOK ||
				!strings.Contains(body, `<strong id="fault-count">0</strong>`) || strings.Contains(body, `class="fault-row"`) {
				t.Errorf("call %d: want no fault:\n%s", n, body)
			}
		}
	}
	if withFault == 0 || without == 0 {
		t.Fatalf("the session has no recorded call with a fault (%d) or none without (%d) under %s", withFault, without, inspector.FaultStrategy)
	}
	// The call page links its faults.
	if _, _, body := get(t, site, "", "/inspect/s/"+sid+"/c/"+strconv.Itoa(withFault)); !strings.Contains(body, `id="faults-link" href="/inspect/s/`+sid+`/c/`+strconv.Itoa(withFault)+`/faults"`) {
		t.Errorf("the call page does not link its faults")
	}
	if code, _, _ := get(t, site, "", "/inspect/s/"+sid+"/c/9999/faults"); code != http.StatusNotFound {
		t.Errorf("a call past the session's: %d", code)
	}
}

// A call of a session ctxstore served, and of a recorded session stored as
// events (a SWE-agent trajectory: no transcript to replay), have a faults
// page that says why it has none.
func TestFaultsPageWithoutReplay(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	live := inspecttest.NewLive(t, se.Store, "served-session")
	live.Turn("Fix the failing test in main.go")
	live.Call(0)
	res, err := importer.New(se.Store, importer.Options{}).ImportFile(ctx,
		filepath.Join(datasets.Dir(t), "swe-agent", "test__swe-agent__test-repo-i1__4da99171.traj"))
	if err != nil || len(res.Sessions) != 1 {
		t.Fatalf("import: %v %+v", err, res)
	}
	h, err := inspector.New(inspector.Options{Store: se.Store, Prefix: "/inspect"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	site := &site{url: ts.URL}
	code, _, body := get(t, site, "", "/inspect/s/served-session/c/1/faults")
	if code != http.StatusOK || !strings.Contains(body, `id="faults-none">Faults are computed for recorded sessions`) {
		t.Errorf("a served session's call: %d\n%s", code, body)
	}
	code, _, body = get(t, site, "", "/inspect/s/"+res.Sessions[0].Session+"/c/1/faults")
	if code != http.StatusOK || !strings.Contains(body, "there is no transcript to replay") {
		t.Errorf("a trajectory's call: %d\n%s", code, body)
	}
}
