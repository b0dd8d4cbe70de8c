package recorded

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/gob"
	"errors"
	"fmt"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// ResumeType is a session's "recorded-resume:{session}": what Update
// needs to go on deriving its calls from the commits it has not read
// (docs/inspector.md, "Recorded sessions").
const ResumeType = "recorded_resume"

// ResumeID is the id of a session's resume document.
func ResumeID(sid string) string { return "recorded-resume:" + sid }

// batch bounds the documents one transaction writes.
const batch = 500

// keepRecords is how many of the last records a resume keeps the request
// up to (a record written later names one of them as its parent, or the
// session is derived whole).
const keepRecords = 32

// Updated says what Update did.
type Updated struct {
	Session string
	// Commits is the session's commit count; Calls its calls; Derived
	// the calls this update derived (and stored).
	Commits, Calls, Derived int
	// Whole: the session was derived from its first commit (the first
	// import, or going on could have given another answer: Why says
	// what); InMemory: by Derive (its records could not be read in one
	// pass).
	Whole, InMemory bool
	Why             string
}

// Update derives session sid's calls and turns from the commits the last
// Update did not read, going on from the state it stored (the requests
// so far, each lane's last call, the turn being answered), and stores the
// calls it derived, the chat turns from the last one on, and the state.
// The answer is the one deriving the whole session gives (Derive); where
// going on could differ from it (a derivation of another version, a chain
// that does not extend the one read, a record whose parent the state does
// not keep, an event that changes a call stored before, a session that
// turns out to have a main thread or a tree after all), the session is
// derived whole, a page of commits at a time.
func Update(ctx context.Context, svc *commits.Service, sid string) (*Updated, error) {
	u, err := update(ctx, svc, sid)
	if err == nil && onUpdate != nil {
		onUpdate(u)
	}
	return u, err
}

// onUpdate, when set (by tests), is told what each Update did.
var onUpdate func(*Updated)

func update(ctx context.Context, svc *commits.Service, sid string) (*Updated, error) {
	st := svc.Store()
	old, err := st.Entity(ctx, StateID(sid), store.Basis{})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	r, err := loadResume(ctx, st, sid)
	if err != nil {
		return nil, err
	}
	oldCalls, why := 0, ""
	if old != nil {
		oldCalls = asInt(old["calls"])
	}
	if r != nil && r.Legacy {
		return updateInMemory(ctx, svc, sid, oldCalls)
	}
	if r != nil && !r.Facts.Requests && old != nil && asInt(old["version"]) == Version && asInt(old["commits"]) == r.All &&
		asInt(old["calls"]) == r.Calls && asInt(old["turns"]) == r.Turns {
		d, err := r.deriver(ctx, svc, sid)
		if err == nil {
			err = d.run()
		}
		if err == nil {
			d.finish()
			if d.seen.parented() != d.assume.parented() || d.seen.Main != d.assume.Main || d.seen.Requests {
				err = whole("the session's facts changed")
			}
		}
		switch {
		case err == nil:
			t := newTotals()
			if s, _, err := ReadState(ctx, st, sid, -1); err == nil && s.Totals != nil {
				t = s.Totals
			}
			return d.store(ctx, t, oldCalls, false)
		case !errors.Is(err, errWhole) && !errors.Is(err, errLegacy):
			return nil, err
		}
		why = err.Error()
	}
	assume, err := peekFacts(ctx, svc, sid)
	if err != nil {
		return nil, err
	}
	if r != nil {
		assume = r.Facts
	}
	for try := 0; ; try++ {
		d := newDeriver(ctx, svc, sid)
		d.assume = assume
		err := d.run()
		if errors.Is(err, errLegacy) {
			return updateInMemory(ctx, svc, sid, oldCalls)
		}
		if err != nil {
			return nil, err
		}
		d.finish()
		if d.seen.parented() == d.assume.parented() && d.seen.Main == d.assume.Main && d.seen.Requests == d.assume.Requests {
			u, err := d.store(ctx, newTotals(), oldCalls, true)
			if u != nil {
				u.Why = why
			}
			return u, err
		}
		if try > 0 {
			return nil, fmt.Errorf("session %s: recorded calls: the session's facts changed while it was read", sid)
		}
		assume = d.seen
	}
}

// peekFacts counts the facts of the first page of a session's commits:
// what a first derivation assumes (a wrong guess costs a second pass).
func peekFacts(ctx context.Context, svc *commits.Service, sid string) (facts, error) {
	var f facts
	first, ok, err := svc.NextDepth(ctx, sid, -1)
	if err != nil || !ok {
		return f, err
	}
	cs, err := svc.ListDepths(ctx, sid, first, first+50)
	if err != nil {
		return f, err
	}
	for _, c := range cs {
		fm, ok := svc.Registry().Lookup(c.Format)
		if c.Session != sid || !used(c) || !ok || fm.Decode == nil {
			continue
		}
		b, err := svc.Content(ctx, c)
		if err != nil {
			return f, err
		}
		evs, err := fm.Decode(b)
		if err != nil {
			continue
		}
		for _, e := range evs {
			f.count(e)
		}
	}
	f.Main = f.Main || f.MainN > 0
	return f, nil
}

// store writes what a run derived: its calls (and, derived whole, the
// deletion of calls the session no longer has), its turns from the first
// it may have changed, the state with its totals (t: the totals of the
// calls before the run) and the resume.
func (d *deriver) store(ctx context.Context, t *Totals, oldCalls int, whole bool) (*Updated, error) {
	st := d.svc.Store()
	var ops []store.Op
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		_, err := store.SubmitWait(ctx, st, ops)
		ops = nil
		if err != nil {
			return fmt.Errorf("session %s: storing recorded calls: %w", d.sid, err)
		}
		return nil
	}
	for _, c := range d.calls {
		t.add(c.Call)
		ops = append(ops, store.Put(callDoc(d.sid, c.Call)))
		if len(ops) >= batch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	calls := d.base + len(d.calls)
	for n := calls + 1; n <= oldCalls; n++ {
		ops = append(ops, store.Delete(CallID(d.sid, n)))
		if len(ops) >= batch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if err := putTurns(ctx, st, d.sid, d.turnBase, d.turns); err != nil {
		return nil, err
	}
	turns := d.turnBase + len(d.turns)
	res, err := d.resume(calls, turns).doc(d.sid)
	if err != nil {
		return nil, err
	}
	state := stateDoc(d.sid, d.all, d.tip, calls, turns, d.title, d.prompt, t)
	sh := d.shape
	if sh == nil {
		sh = &shape{Main: d.seen.Main, Parented: d.seen.parented()}
	}
	state["main"], state["parented"] = sh.Main, sh.Parented
	if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(state), store.Put(res)}); err != nil {
		return nil, fmt.Errorf("session %s: storing recorded calls: %w", d.sid, err)
	}
	return &Updated{Session: d.sid, Commits: d.all, Calls: calls, Derived: len(d.calls), Whole: whole}, nil
}

func stateDoc(sid string, commits int, tip string, calls, turns int, title, prompt string, t *Totals) store.Doc {
	return store.Doc{store.IDKey: StateID(sid), "type": StateType, "session_id": sid, "version": int64(Version),
		"commits": int64(commits), "tip": tip, "calls": int64(calls), "turns": int64(turns),
		"title": title, "prompt": clip(prompt, 400), "totals": t.doc()}
}

// putTurns writes turns as the session's chat turns from index from on.
func putTurns(ctx context.Context, st store.Store, sid string, from int, ts []Turn) error {
	for len(ts) > 0 {
		k := min(len(ts), batch)
		turns := make([]objects.Turn, 0, k)
		for _, t := range ts[:k] {
			var as []map[string]any
			for _, a := range t.Assistant {
				as = append(as, map[string]any{"type": "text", "text": a})
			}
			turns = append(turns, objects.Turn{User: t.User, Assistant: as})
		}
		if err := session.PutRecordedChat(ctx, st, sid, from, turns); err != nil {
			return err
		}
		from += k
		ts = ts[k:]
	}
	return nil
}

// updateInMemory derives the session with Derive and stores it whole,
// marking its resume so that later updates do the same.
func updateInMemory(ctx context.Context, svc *commits.Service, sid string, oldCalls int) (*Updated, error) {
	dd, err := Derive(ctx, svc, sid)
	if err != nil {
		return nil, err
	}
	d := newDeriver(ctx, svc, sid)
	for i := range dd.Calls {
		d.calls = append(d.calls, &dcall{Call: dd.Calls[i]})
	}
	d.turns, d.title, d.prompt, d.all, d.tip = dd.Turns, dd.Title, dd.Prompt, dd.Commits, dd.Tip
	d.legacy, d.shape = true, &shape{Main: dd.main, Parented: dd.parented}
	u, err := d.store(ctx, newTotals(), oldCalls, true)
	if u != nil {
		u.InMemory = true
	}
	return u, err
}

// resumeState is a resume document's content.
type resumeState struct {
	Version               int
	Legacy                bool // Derive derives the session
	Facts                 facts
	Depth                 int64
	All, Branches         int
	Tip, LastID, LastUsed string
	Calls, Turns          int
	LastTurn              *Turn
	Title, Prompt         string
	Lanes                 []laneRec
	Records               []recRec
	Missing               []string
	PrevOld               *oldCall
	Nodes                 []nodeRec
	Sys                   []sysRec
}

// resumeVersion is the version of resumeState: another is not read.
const resumeVersion = 1

type listRef struct{ Sys, Last int } // 1-based indexes into Sys and Nodes (0: none)

type laneRec struct {
	Name string
	List listRef
	Comp int
	Hour bool
	Last *lastRec
}

type lastRec struct {
	Call Call
	Msgs []string
	Ends []int
	Req  listRef
	Comp int
}

type recRec struct {
	ID   string
	List listRef
}

type nodeRec struct {
	Prev, N   int
	Role      string
	H         []byte
	Dig       string
	Size, Rel int
}

type sysRec struct {
	H     []byte
	Bytes int
	Dig   string
}

// resume captures what the next update goes on from.
func (d *deriver) resume(calls, turns int) *resumeState {
	r := &resumeState{Version: resumeVersion, Legacy: d.legacy, Facts: d.seen, Depth: d.depth, All: d.all, Branches: d.branches,
		Tip: d.tip, LastID: d.lastID, LastUsed: d.lastUsed, Calls: calls, Turns: turns, Title: d.title, Prompt: clip(d.prompt, 400)}
	if d.legacy {
		return r
	}
	if len(d.turns) > 0 {
		t := d.turns[len(d.turns)-1]
		r.LastTurn = &t
	}
	switch {
	case d.prevNew != nil:
		r.PrevOld = &oldCall{N: d.prevNew.N, HasUsage: d.prevNew.Usage != nil, Model: d.prevNew.Model}
	case d.prevOld != nil:
		r.PrevOld = d.prevOld
	}
	for id := range d.missing {
		r.Missing = append(r.Missing, id)
	}
	e := &encoder{r: r, nodes: map[*msgNode]int{}, sys: map[*sysPart]int{}}
	for name, ls := range d.lanes {
		lr := laneRec{Name: name, List: e.list(ls.list), Comp: ls.comp, Hour: ls.hour}
		if c := ls.last; c != nil {
			lr.Last = &lastRec{Call: c.Call, Msgs: c.msgs, Ends: c.ends, Req: e.list(c.req), Comp: c.comp}
		}
		r.Lanes = append(r.Lanes, lr)
	}
	start := max(0, len(d.recent)-keepRecords)
	for _, id := range d.recent[start:] {
		if l, ok := d.records[id]; ok {
			r.Records = append(r.Records, recRec{ID: id, List: e.list(l)})
		}
	}
	return r
}

type encoder struct {
	r     *resumeState
	nodes map[*msgNode]int
	sys   map[*sysPart]int
}

func (e *encoder) list(l reqList) listRef {
	var ref listRef
	if l.sys != nil {
		if k, ok := e.sys[l.sys]; ok {
			ref.Sys = k
		} else {
			e.r.Sys = append(e.r.Sys, sysRec{H: l.sys.h, Bytes: l.sys.bytes, Dig: l.sys.digest()})
			ref.Sys = len(e.r.Sys)
			e.sys[l.sys] = ref.Sys
		}
	}
	if l.last != nil {
		// The nodes not written yet, newest first, then written oldest
		// first so that each names an earlier one.
		var todo []*msgNode
		for m := l.last; m != nil; m = m.prev {
			if _, ok := e.nodes[m]; ok {
				break
			}
			todo = append(todo, m)
		}
		for i := len(todo) - 1; i >= 0; i-- {
			m := todo[i]
			nr := nodeRec{N: m.n, Role: m.role, Dig: m.digest(), Size: m.size, Rel: m.rel}
			if m.prev != nil {
				nr.Prev = e.nodes[m.prev]
			}
			e.r.Nodes = append(e.r.Nodes, nr)
			e.nodes[m] = len(e.r.Nodes)
		}
		ref.Last = e.nodes[l.last]
		// Only a list's last message grows: its running hash is kept.
		e.r.Nodes[ref.Last-1].H = l.last.h
	}
	return ref
}

func (r *resumeState) doc(sid string) (store.Doc, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(r); err != nil {
		return nil, fmt.Errorf("session %s: recorded calls' resume: %w", sid, err)
	}
	return store.Doc{store.IDKey: ResumeID(sid), "type": ResumeType, "session_id": sid,
		"state": base64.StdEncoding.EncodeToString(buf.Bytes())}, nil
}

// loadResume reads a session's resume (nil: none, or one this version
// cannot read).
func loadResume(ctx context.Context, st store.Store, sid string) (*resumeState, error) {
	doc, err := st.Entity(ctx, ResumeID(sid), store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(asString(doc["state"]))
	if err != nil {
		return nil, nil
	}
	var r resumeState
	if gob.NewDecoder(bytes.NewReader(b)).Decode(&r) != nil || r.Version != resumeVersion {
		return nil, nil
	}
	return &r, nil
}

// deriver rebuilds the deriver a resume was taken from.
func (r *resumeState) deriver(ctx context.Context, svc *commits.Service, sid string) (*deriver, error) {
	d := newDeriver(ctx, svc, sid)
	d.resumed, d.assume, d.seen = true, r.Facts, r.Facts
	d.depth, d.all, d.branches, d.tip, d.lastID, d.lastUsed = r.Depth, r.All, r.Branches, r.Tip, r.LastID, r.LastUsed
	d.base, d.turnBase, d.title, d.prompt = r.Calls, r.Turns, r.Title, r.Prompt
	if r.LastTurn != nil && r.Turns > 0 {
		d.turns, d.turnBase = []Turn{*r.LastTurn}, r.Turns-1
	}
	d.prevOld = r.PrevOld
	for _, id := range r.Missing {
		d.missing[id] = true
	}
	nodes := make([]*msgNode, len(r.Nodes))
	for i, nr := range r.Nodes {
		if nr.Prev < 0 || nr.Prev > i || (nr.H != nil && !validHash(nr.H)) {
			return nil, whole("a damaged resume")
		}
		m := &msgNode{n: nr.N, role: nr.Role, h: nr.H, dig: nr.Dig, size: nr.Size, rel: nr.Rel}
		if nr.Prev > 0 {
			m.prev = nodes[nr.Prev-1]
		}
		nodes[i] = m
	}
	sys := make([]*sysPart, len(r.Sys))
	for i, sr := range r.Sys {
		if sr.H != nil && !validHash(sr.H) {
			return nil, whole("a damaged resume")
		}
		sys[i] = &sysPart{h: sr.H, bytes: sr.Bytes, dig: sr.Dig}
	}
	list := func(ref listRef) (reqList, error) {
		var l reqList
		if ref.Sys < 0 || ref.Sys > len(sys) || ref.Last < 0 || ref.Last > len(nodes) {
			return l, whole("a damaged resume")
		}
		if ref.Sys > 0 {
			l.sys = sys[ref.Sys-1]
		}
		if ref.Last > 0 {
			l.last = nodes[ref.Last-1]
		}
		return l, nil
	}
	for _, lr := range r.Lanes {
		l, err := list(lr.List)
		if err != nil {
			return nil, err
		}
		ls := &laneState{list: l, comp: lr.Comp, hour: lr.Hour}
		if lc := lr.Last; lc != nil {
			req, err := list(lc.Req)
			if err != nil {
				return nil, err
			}
			ls.last = &dcall{Call: lc.Call, msgs: lc.Msgs, ends: lc.Ends, req: req, comp: lc.Comp}
		}
		d.lanes[lr.Name] = ls
	}
	for _, rr := range r.Records {
		l, err := list(rr.List)
		if err != nil {
			return nil, err
		}
		d.records[rr.ID] = l
		d.recent = append(d.recent, rr.ID)
	}
	// Branch views written since at depths already read count as commits.
	n, err := branchesUpTo(ctx, svc.Store(), sid, r.Depth)
	if err != nil {
		return nil, err
	}
	d.all += n - r.Branches
	d.branches = n
	return d, nil
}

// branchesUpTo counts session sid's branch views at depths up to depth.
func branchesUpTo(ctx context.Context, st store.Store, sid string, depth int64) (int, error) {
	docs, err := st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", commits.DocCommit), store.Where("session", sid),
		store.Where("tags", BranchTag), {Field: "depth", Op: store.Lte, Value: depth}}, Find: []string{"depth"}})
	return len(docs), err
}
