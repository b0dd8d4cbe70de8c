package inspector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tokens"
	"github.com/ctxstore/ctxstore/eval/replay"
	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// FaultStrategy is the strategy a recorded call's faults are computed
// under: ctxstore's default (its stream layout, as `ctxstore replay`
// names it).
var FaultStrategy = (&replay.Ctxstore{Layout: assemble.LayoutStream}).Name()

// faultCacheSize is how many sessions' fault replays the handler keeps.
const faultCacheSize = 8

// faultReplay is a recorded session's transcript replayed under
// FaultStrategy: its messages and the strategy's calls.
type faultReplay struct {
	commits int
	msgs    []conversation.Message
	calls   []replay.Call
}

// faultCache keeps the last sessions' fault replays, each valid while the
// session's commit count is the same; one replay runs at a time (it
// assembles every call of the session).
type faultCache struct {
	mu    sync.Mutex
	order []string
	by    map[string]*faultReplay
}

// faultsOf replays recorded session sid's transcript under FaultStrategy
// (eval/replay's fault rule), or returns the kept replay.
func (h *Handler) faultsOf(ctx context.Context, sid string) (*faultReplay, error) {
	svc := commits.New(h.o.Store, commits.Options{Registry: formats.Commits()})
	_, data, n, err := recorded.Transcript(ctx, svc, sid)
	if err != nil {
		return nil, err
	}
	c := &h.faultCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.by[sid]; r != nil && r.commits == n {
		return r, nil
	}
	s, err := transcript.Reader{Formats: formats.Registry()}.Read(bytes.NewReader(data), transcript.FormatAuto)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ctxstore-faults-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rep, err := replay.Run(ctx, s, replay.Options{
		Strategies: []replay.Strategy{&replay.Ctxstore{Layout: assemble.LayoutStream}},
		Counter:    replay.NewCounter(tokens.Default()),
		Dir:        dir,
		// Every fault of a call, not the replay table's three examples.
		FaultList: -1,
		OpenStore: func(ctx context.Context, dir string) (store.Store, error) {
			return bitemporal.Open(ctx, filepath.Join(dir, "store.db"), bitemporal.Options{})
		},
	})
	if err != nil {
		return nil, fmt.Errorf("session %s: replaying its transcript for its faults: %w", sid, err)
	}
	r := &faultReplay{commits: n, msgs: s.Messages}
	for _, res := range rep.Results {
		if res.Strategy == FaultStrategy {
			r.calls = res.Calls
		}
	}
	if c.by == nil {
		c.by = map[string]*faultReplay{}
	}
	if _, ok := c.by[sid]; !ok {
		c.order = append(c.order, sid)
		if len(c.order) > faultCacheSize {
			delete(c.by, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.by[sid] = r
	return r, nil
}

// callOf finds the replayed call answering recorded call rc: the one whose
// response is the message rc names (its provider message id), else the
// first whose response was written at rc's time.
func (r *faultReplay) callOf(rc inspect.Call) (replay.Call, bool) {
	if rc.MessageID != "" {
		for _, c := range r.calls {
			if r.msgs[c.Message].ID == rc.MessageID {
				return c, true
			}
		}
	}
	for _, c := range r.calls {
		if t := r.msgs[c.Message].Time; !t.IsZero() && t.Equal(rc.Time) {
			return c, true
		}
	}
	return replay.Call{}, false
}

// faultsBody is the faults page's data.
type faultsBody struct {
	SID      string
	N        int
	Strategy string
	// Recorded: the session is a recorded one (else the page says why it
	// has no faults to show); Found: its call was matched to a replayed
	// call (a sub-agent's call is not replayed).
	Recorded, Found bool
	// NoTranscript: the session was not imported as its harness's lines
	// (a SWE-agent trajectory is stored as events), so there is nothing
	// to replay.
	NoTranscript bool
	// Checked, Faults and PageIns are the call's counts under Strategy;
	// Shown lists every fault of the call (the replay runs with
	// FaultList -1).
	Checked, Faults, PageIns int
	Shown                    []faultView
}

// faultView is one fault: the string the response wrote and the hidden
// tool output that held it.
type faultView struct {
	String string
	// ToolCallID is the source's tool call (the id ctxstore gives its
	// output object); Tool its tool, Input what it was called with.
	ToolCallID, Tool, Input string
	// Before, Match and After are the output around the string.
	Before, Match, After string
	// ShownAt is the first recorded call whose request held the output in
	// full (0: not found), where the page links.
	ShownAt int
}

// faults: the faults of recorded call n under FaultStrategy, computed
// on demand by replaying the session's transcript (docs/inspector.md,
// "Faults of a recorded call").
func (h *Handler) faults(q *req) (string, pageData, error) {
	sid := q.r.PathValue("sid")
	n, err := intArg("call", q.r.PathValue("n"), 0)
	if err != nil {
		return "", pageData{}, err
	}
	cs, err := q.in.Calls(q.ctx, sid, inspect.Page{From: n, Limit: 1})
	if err != nil {
		return "", pageData{}, err
	}
	if len(cs) != 1 {
		return "", pageData{}, fmt.Errorf("session %s call %d: %w", sid, n, store.ErrNotFound)
	}
	b := faultsBody{SID: sid, N: n, Strategy: FaultStrategy, Recorded: cs[0].Recorded}
	crumbs := append(h.sessionCrumbs(sid), crumb{fmt.Sprintf("Call %d", n), fmt.Sprintf("%s/s/%s/c/%d", h.o.Prefix, url.PathEscape(sid), n)})
	pd := pageData{Title: fmt.Sprintf("Faults of call %d", n), Crumbs: crumbs, Body: &b}
	if !b.Recorded {
		return "faults.html", pd, nil
	}
	r, err := h.faultsOf(q.ctx, sid)
	if errors.Is(err, recorded.ErrNoTranscript) {
		b.NoTranscript = true
		return "faults.html", pd, nil
	} else if err != nil {
		return "", pageData{}, err
	}
	c, ok := r.callOf(cs[0])
	if !ok {
		return "faults.html", pd, nil
	}
	b.Found, b.Checked, b.Faults, b.PageIns = true, c.Checked, c.Faults, c.PageIns
	if len(c.FaultStrings) == 0 {
		return "faults.html", pd, nil
	}
	shownAt, err := h.shownAt(q, sid, r, c.FaultStrings)
	if err != nil {
		return "", pageData{}, err
	}
	for _, f := range c.FaultStrings {
		b.Shown = append(b.Shown, r.view(f, shownAt[f.Source]))
	}
	return "faults.html", pd, nil
}

// shownAt maps each fault's source message to the first recorded call
// whose request held it: the call answered by the first replayed response
// after it.
func (h *Handler) shownAt(q *req, sid string, r *faultReplay, fs []replay.Fault) (map[int]int, error) {
	want := map[string][]int{} // response message id -> sources
	for _, f := range fs {
		i := sort.Search(len(r.calls), func(i int) bool { return r.calls[i].Message > f.Source })
		if i < len(r.calls) {
			id := r.msgs[r.calls[i].Message].ID
			want[id] = append(want[id], f.Source)
		}
	}
	out := map[int]int{}
	all, err := q.in.Calls(q.ctx, sid, inspect.Page{From: 1})
	if err != nil {
		return nil, err
	}
	for _, rc := range all {
		for _, src := range want[rc.MessageID] {
			if out[src] == 0 && rc.MessageID != "" {
				out[src] = rc.N
			}
		}
	}
	return out, nil
}

// excerptBytes is how much of a source output the page shows on each side
// of the string, in bytes (cut at rune boundaries).
const excerptBytes = 160

// view describes fault f: its source's tool call and the output around
// the string.
func (r *faultReplay) view(f replay.Fault, shownAt int) faultView {
	m := r.msgs[f.Source]
	v := faultView{String: f.String, ToolCallID: m.ToolCallID, Tool: f.Tool, ShownAt: shownAt}
	for _, x := range r.msgs[:f.Source] {
		for _, tc := range x.ToolCalls {
			if tc.ID == m.ToolCallID {
				v.Input = argsLine(tc.Args)
			}
		}
	}
	out := m.Output
	if i := strings.Index(out, f.String); i >= 0 {
		lo, hi := max(0, i-excerptBytes), min(len(out), i+len(f.String)+excerptBytes)
		v.Before, v.Match, v.After = strings.ToValidUTF8(out[lo:i], ""), f.String, strings.ToValidUTF8(out[i+len(f.String):hi], "")
		if lo > 0 {
			v.Before = "…" + v.Before
		}
		if hi < len(out) {
			v.After += "…"
		}
	} else {
		v.Before = strings.ToValidUTF8(out[:min(len(out), 2*excerptBytes)], "")
	}
	return v
}

// argsLine is a tool call's arguments on one line, cut to 200 bytes.
func argsLine(args map[string]any) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, args[k]))
	}
	s := strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}
