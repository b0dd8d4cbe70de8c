package recorded_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/harness/recorded/recordedtest"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/session/commits"
)

// importFiles imports paths into a new SQLite store and returns the
// commits service and the sessions of each file (a file may hold several,
// a resumed session's), in order.
func importFiles(t *testing.T, paths ...string) (*commits.Service, [][]string) {
	t.Helper()
	e := storetestenv.New(t, storetestenv.SQLite)
	im := importer.New(e.Store, importer.Options{})
	var sids [][]string
	for _, p := range paths {
		res, err := im.ImportFile(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range res.Problems {
			if strings.Contains(pr.Msg, "recorded calls") {
				t.Errorf("%s: %s", p, pr.Msg)
			}
		}
		if len(res.Sessions) == 0 {
			t.Fatalf("%s: no session imported", p)
		}
		var ss []string
		for _, x := range res.Sessions {
			ss = append(ss, x.Session)
		}
		sids = append(sids, ss)
	}
	return commits.New(e.Store, commits.Options{Registry: formats.Commits()}), sids
}

// TestDatasetCalls: every Claude Code, Pi and SWE-agent dataset session
// gets one call per recorded request (a Claude Code message id with
// usage, a Pi assistant message, a SWE-agent history step), the Claude
// Code calls sending exactly the tokens the file recorded; each call's
// request rebuilds to the size derived for it, as valid JSON; the calls
// stored at import are the calls derived now.
func TestDatasetCalls(t *testing.T) {
	dir := datasets.Dir(t)
	cc, _ := filepath.Glob(filepath.Join(dir, "claude-code/*.jsonl"))
	pi, _ := filepath.Glob(filepath.Join(dir, "pi/*.jsonl"))
	swe, _ := filepath.Glob(filepath.Join(dir, "swe-agent/*.traj"))
	if len(cc) < 6 || len(pi) < 2 || len(swe) < 3 {
		t.Fatalf("datasets: %d Claude Code, %d Pi, %d SWE-agent files", len(cc), len(pi), len(swe))
	}
	swe = swe[:3]
	if testing.Short() {
		// The smaller sessions of each harness; the whole set without
		// -short.
		cc = slices.DeleteFunc(cc, func(f string) bool {
			return !strings.Contains(f, "465eb442") && !strings.Contains(f, "dmux")
		})
		pi, swe = pi[:1], swe[:2]
	}
	files := append(append(append([]string{}, cc...), pi...), swe...)
	svc, sids := importFiles(t, files...)
	ctx := context.Background()
	for i, f := range files {
		var calls []recorded.Call
		for _, sid := range sids[i] {
			d, err := recorded.Derive(ctx, svc, sid)
			if err != nil {
				t.Fatal(err)
			}
			calls = append(calls, d.Calls...)
			checkRequests(t, f, d)
			stored, err := recorded.Page(ctx, svc.Store(), sid, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(stored) != len(d.Calls) {
				t.Fatalf("%s: %d calls stored, %d derived", filepath.Base(f), len(stored), len(d.Calls))
			}
			for k := range stored {
				if a, b := stored[k], d.Calls[k]; !sameCall(a, b) || a.Depth != b.Depth {
					t.Errorf("%s call %d: stored %+v, derived %+v", filepath.Base(f), k+1, a, b)
					break
				}
			}
			checkRequestsOf(t, svc, f, sid, d, stored)
		}
		var want int
		switch {
		case strings.HasSuffix(f, ".traj"):
			want = trajSteps(t, f)
		case strings.Contains(f, "/pi/"):
			want = piMessages(t, f)
		default:
			var sent int64
			want, sent = recordedtest.FileCalls(t, f)
			var got int64
			for _, c := range calls {
				if c.Usage == nil {
					t.Errorf("%s call %d: no usage", filepath.Base(f), c.N)
					continue
				}
				got += c.Usage.Sent()
			}
			if got != sent {
				t.Errorf("%s: calls sent %d tokens, the file records %d", filepath.Base(f), got, sent)
			}
		}
		if len(calls) != want {
			t.Errorf("%s: %d calls, want %d", filepath.Base(f), len(calls), want)
		}
	}
}

// checkRequests rebuilds the first, a middle and the last call of d: each
// body is valid JSON of the size derived for it, and a call that extends
// the previous one begins with its bytes.
func checkRequests(t *testing.T, f string, d *recorded.Derived) {
	t.Helper()
	for _, n := range []int{1, len(d.Calls) / 2, len(d.Calls)} {
		if n < 1 {
			continue
		}
		r, err := d.Request(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Body) != r.Call.Bytes || !json.Valid(r.Body) {
			t.Errorf("%s call %d: a %d-byte body (valid %v), derived as %d", filepath.Base(f), n, len(r.Body), json.Valid(r.Body), r.Call.Bytes)
		}
		if p := r.Call.PrefixBytes; n > 1 && r.Call.Prev == n-1 && r.Call.Cause == recorded.CauseNone {
			prev, _ := d.Request(n - 1)
			if p <= 0 || p > len(prev.Body) || string(r.Body[:p]) != string(prev.Body[:p]) {
				t.Errorf("%s call %d: prefix %d not shared with call %d", filepath.Base(f), n, p, n-1)
			}
		}
	}
}

// sameCall compares the exported fields of two calls (times to the
// millisecond, as stored).
// checkRequestsOf rebuilds calls 1, 10, a middle one and the last of a
// session from the commits up to each (RequestOf): the request is the one
// the whole session's derivation rebuilds, byte for byte, span for span,
// and the call's figures are the stored ones.
func checkRequestsOf(t *testing.T, svc *commits.Service, f, sid string, d *recorded.Derived, stored []recorded.Call) {
	t.Helper()
	ctx := context.Background()
	n := len(stored)
	for _, k := range slices.Compact([]int{1, min(10, n), (n + 1) / 2, n}) {
		if k < 1 {
			continue
		}
		got, err := recorded.RequestOf(ctx, svc, sid, stored[k-1])
		if err != nil {
			t.Errorf("%s call %d: %v", filepath.Base(f), k, err)
			continue
		}
		want, err := d.Request(k)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Body, want.Body) || !reflect.DeepEqual(got.Spans, want.Spans) || got.Exact != want.Exact || got.PrevN != want.PrevN {
			t.Errorf("%s call %d: the request from the commits up to it (%d bytes, %d spans) is not the whole session's (%d bytes, %d spans)",
				filepath.Base(f), k, len(got.Body), len(got.Spans), len(want.Body), len(want.Spans))
		}
		if !reflect.DeepEqual(got.Call, stored[k-1]) {
			t.Errorf("%s call %d: figures %+v, stored %+v", filepath.Base(f), k, got.Call, stored[k-1])
		}
	}
}

func sameCall(a, b recorded.Call) bool {
	a.Time, b.Time = a.Time.Truncate(1e6), b.Time.Truncate(1e6)
	a.GapSeconds, b.GapSeconds = float64(int64(a.GapSeconds*1000))/1000, float64(int64(b.GapSeconds*1000))/1000
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return reflect.DeepEqual(ja, jb)
}

func trajSteps(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		History []struct {
			Role string `json:"role"`
		} `json:"history"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, h := range tr.History {
		if h.Role == "assistant" {
			n++
		}
	}
	return n
}

func piMessages(t *testing.T, path string) int {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var e struct {
			Type    string `json:"type"`
			Message struct {
				Role string `json:"role"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "message" && e.Message.Role == "assistant" {
			n++
		}
	}
	return n
}
