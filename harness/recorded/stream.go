package recorded

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// The streaming derivation. Update reads a session's commits a page of
// depths at a time and derives its calls event by event, keeping of the
// session only what later events can refer to: per lane the request so far
// and its last call (with that call's request), per record of a harness
// that keeps a tree the request up to it (reqList shares what requests
// have in common), the calls of the run without their requests, and the
// turn being answered. What it needs to go on from where it stopped is
// stored (resume), so that the next import derives only the commits it
// added. Where going on could give another answer than deriving the
// session whole (see resumable), it derives it whole, still streaming;
// where streaming could (a record that names a parent the file writes
// later, or a record written twice), it falls back to Derive.

// depthPage is how many depths one read of commits covers.
const depthPage = 1000

// facts are what the derivation assumes of the whole session: whether it
// has a main thread (its sub-agents' records then do not count), whether
// its harness keeps a tree, whether Claude Code recorded its requests.
// They are counted while deriving; a run that assumed otherwise is run
// again.
type facts struct {
	N, WithID, WithParent             int // every event
	MainN, MainWithID, MainWithParent int // the events outside sidechains
	Main, Requests                    bool
}

func (f *facts) count(e events.Event) {
	sc := sidechain(e)
	f.N++
	if e.ID != "" {
		f.WithID++
		if e.ParentID != "" {
			f.WithParent++
		}
	}
	if !sc {
		f.MainN++
		if e.ID != "" {
			f.MainWithID++
			if e.ParentID != "" {
				f.MainWithParent++
			}
		}
		if assistantEvent(e) {
			f.Main = true
		}
	}
	if e.Type == events.Output && e.Subtype == "api-request" {
		f.Requests = true
	}
}

// parented is Derive's rule: most events have ids, and most of those a
// parent (counted over the events kept).
func (f facts) parented() bool {
	if f.Main {
		return f.MainWithID > f.MainN/2 && f.MainWithParent > f.MainWithID/2
	}
	return f.WithID > f.N/2 && f.WithParent > f.WithID/2
}

func sidechain(e events.Event) bool {
	sc, _ := e.Metadata["sidechain"].(bool)
	return sc
}

func compaction(e events.Event) bool {
	return e.Type == events.System && (e.Subtype == events.SubtypeCompactionSummary || e.Subtype == events.SubtypeCompactBoundary)
}

// errWhole stops a run that goes on from a stored state: the session is
// derived whole instead. errLegacy stops a streaming run: Derive is used.
var (
	errWhole  = errors.New("derived whole")
	errLegacy = errors.New("derived in memory")
)

func whole(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errWhole, fmt.Sprintf(format, args...))
}

// dcall is a call being derived.
type dcall struct {
	Call
	req   reqList // its request, while a later call of its lane needs it
	msgs  []string
	ends  []int // an exact request's digests and their ends
	comp  int   // the lane's compactions before the call
	link  link
	pcall *Call // the previous call of its lane
}

// digests gives the call's request's digests and their ends.
func (c *dcall) digests() ([]string, []int) {
	if c.Exact {
		return c.msgs, c.ends
	}
	return c.req.digests()
}

// linkTo computes what attribution needs of c against p, the previous
// call of its lane.
func (c *dcall) linkTo(p *dcall) link {
	l := link{compacted: c.comp != p.comp}
	if !c.Exact && !p.Exact {
		l.shared, l.prevMsgs = shared(c.req, p.req), p.req.count()
		if l.shared > 0 {
			l.prefixBytes = c.req.endAt(l.shared - 1)
		}
		l.systemChanged = c.req.sys != nil && p.req.count() > 0 && (p.req.sys == nil || p.req.sys.digest() != c.req.sys.digest())
		return l
	}
	cm, ce := c.digests()
	pm, _ := p.digests()
	l.shared, l.prevMsgs, l.systemChanged = sharedSlices(cm, pm), len(pm), systemChanged(cm, pm)
	if l.shared > 0 {
		l.prefixBytes = ce[l.shared-1]
	}
	return l
}

// laneState is one conversation's state: its events' request since its
// last compaction (a harness without a tree sends that), its
// compactions, its last call and whether the lane's last cache write was
// a 1-hour one as of the calls before the run.
type laneState struct {
	list reqList
	comp int
	last *dcall
	hour bool
}

// record is a record of a harness that keeps a tree, while its events
// are read.
type record struct {
	id, parent string
	blocks     []*block
	compact    bool // it holds a compaction: the path stops at it
	referenced bool // a call was sent with it as its parent
}

// oldCall is what a run knows of a call stored before it.
type oldCall struct {
	N        int
	HasUsage bool
	Model    string
}

// deriver derives a session's calls from its events in order.
type deriver struct {
	ctx     context.Context
	svc     *commits.Service
	sid     string
	resumed bool // going on from a stored state

	assume facts // what the run assumes
	seen   facts // what it counted (with the state's, when resumed)
	reqs   *requests

	lanes     map[string]*laneState
	records   map[string]reqList // record id -> the request up to it
	recent    []string           // the last records closed, oldest first
	cur       *record
	missing   map[string]bool   // parents asked for before any record had their id
	sideRoot  map[string]string // sidechain record id -> its chain's first record
	sideUp    map[string]string // sidechain record id -> its parent
	sideAsked map[string]bool

	base    int // calls stored before the run
	calls   []*dcall
	byMsg   map[string]*dcall
	oldMsg  map[string]*oldCall // message id -> its call stored before the run (nil: none)
	prevNew *dcall
	prevOld *oldCall

	turnBase int // turns stored before the run that the run does not rewrite
	turns    []Turn
	title    string
	prompt   string

	// The commits read: the last depth, their count, the tip, the last
	// commit and the last one whose events count.
	depth    int64
	at       int64 // the depth of the commit being derived
	all      int
	tip      string
	lastID   string
	lastUsed string
	branches int // branch views at depths up to depth
	known    map[string]bool
	legacy   bool   // derived by Derive
	shape    *shape // Derive's shape of the session (legacy)

	// A run that rebuilds one call's request (RequestOf): the commits
	// read end at depth limit (-1: none), the shape is the whole
	// session's, the requests keep their blocks, and of the calls only
	// the wanted one is kept (with its request); the others are counted.
	read map[string][]byte // the contents of the commits being derived, by hash

	limit  int64
	fixed  *shape
	want   int
	wanted *dcall
	made   int    // the calls made by a run that wants one
	other  *dcall // the calls not wanted
}

func newDeriver(ctx context.Context, svc *commits.Service, sid string) *deriver {
	return &deriver{ctx: ctx, svc: svc, sid: sid, lanes: map[string]*laneState{}, records: map[string]reqList{},
		missing: map[string]bool{}, byMsg: map[string]*dcall{}, oldMsg: map[string]*oldCall{}, depth: -1, known: map[string]bool{}, limit: -1}
}

// empty is an empty request (keeping its blocks when one call's is
// rebuilt).
func (d *deriver) empty() reqList {
	if d.want > 0 {
		return keptList()
	}
	return reqList{}
}

// parented tells whether the session's harness keeps a tree.
func (d *deriver) parented() bool {
	if d.fixed != nil {
		return d.fixed.Parented
	}
	return d.assume.parented()
}

func (d *deriver) lane(name string) *laneState {
	ls := d.lanes[name]
	if ls == nil {
		ls = &laneState{list: d.empty()}
		d.lanes[name] = ls
	}
	return ls
}

// run reads the session's commits deeper than d.depth and derives their
// events.
func (d *deriver) run() error {
	if d.assume.Requests && !d.resumed {
		if err := d.readRequests(); err != nil {
			return err
		}
	}
	return d.pages(d.depth, d.page)
}

// pages calls fn with the session's commits deeper than after, a page of
// depths at a time: from 64 depths, doubling to depthPage (an update
// that brings a few commits asks for few depths). A page that ends
// before its last depth is looked past once (a session's commits may
// continue deeper, after commits of another session).
func (d *deriver) pages(after int64, fn func([]*commits.Commit) error) error {
	if d.limit >= 0 {
		return d.pagesTo(after, fn)
	}
	from, ok, err := d.svc.NextDepth(d.ctx, d.sid, after)
	if err != nil || !ok {
		return err
	}
	for size := int64(64); ; size = min(2*size, depthPage) {
		cs, err := d.svc.ListDepths(d.ctx, d.sid, from, from+size)
		if err != nil {
			return err
		}
		if len(cs) > 0 {
			if err := fn(cs); err != nil {
				return err
			}
		}
		if len(cs) > 0 && cs[len(cs)-1].Depth == from+size-1 {
			from += size
			continue
		}
		next, ok, err := d.svc.NextDepth(d.ctx, d.sid, from+size-1)
		if err != nil || !ok {
			return err
		}
		from = next
	}
}

// pagesTo is pages for a run that reads the commits up to depth d.limit
// (depthPages).
func (d *deriver) pagesTo(after int64, fn func([]*commits.Commit) error) error {
	return depthPages(d.ctx, d.svc, d.sid, after+1, d.limit, fn)
}

// depthPages hands fn session sid's commits at depths from..last, a page
// of depthPage depths at a time; the next depth the session has is asked
// for only after an empty page (a chain that begins deeper, or goes on
// deeper after another session's commits): asked from the start, that
// query reads every commit of the session deeper than it.
func depthPages(ctx context.Context, svc *commits.Service, sid string, from, last int64, fn func([]*commits.Commit) error) error {
	for from <= last {
		to := min(from+depthPage, last+1)
		cs, err := svc.ListDepths(ctx, sid, from, to)
		if err != nil {
			return err
		}
		if len(cs) > 0 {
			if err := fn(cs); err != nil {
				return err
			}
			from = to
			continue
		}
		next, ok, err := svc.NextDepth(ctx, sid, to-1)
		if err != nil || !ok {
			return err
		}
		from = next
	}
	return nil
}

// readRequests reads the recorded requests of every Claude Code commit
// (Derive's readRequests, a commit at a time).
func (d *deriver) readRequests() error {
	d.reqs = newRequests()
	err := d.pages(-1, func(cs []*commits.Commit) error {
		for _, c := range cs {
			if c.Session != d.sid || !used(c) || c.Format != commits.FormatClaudeCode {
				continue
			}
			b, err := d.svc.Content(d.ctx, c)
			if err != nil {
				return fmt.Errorf("session %s: %w", d.sid, err)
			}
			d.reqs.read(b)
		}
		return nil
	})
	if err != nil {
		return err
	}
	d.reqs.prune()
	return nil
}

// used tells whether a commit's events count (commitsOf's rule).
func used(c *commits.Commit) bool {
	return !(c.SnapshotOf != "" || (c.Type == commits.Snapshot && c.Parent != "") || c.Type == commits.Compaction ||
		slices.Contains(c.Tags, BranchTag))
}

// loaded is a commit read and decoded, its events not derived yet.
type loaded struct {
	c   *commits.Commit
	evs []events.Event
}

// load counts commit c among the session's and decodes its events (none:
// its events do not count).
func (d *deriver) load(c *commits.Commit) ([]events.Event, int, error) {
	if c.Session != d.sid {
		return nil, 0, nil
	}
	d.all++
	d.tip = c.ID
	d.depth = max(d.depth, c.Depth)
	if slices.Contains(c.Tags, BranchTag) {
		d.branches++
	}
	defer func() {
		d.lastID = c.ID
		if d.resumed { // the commits a resumed run read name the parents of the next
			d.known[c.ID] = true
		}
	}()
	if !used(c) {
		return nil, 0, nil
	}
	if d.resumed && c.Parent != "" && c.Parent != d.lastID && c.Parent != d.lastUsed && !d.known[c.Parent] {
		// Parented in another session (a file's sessions follow each
		// other), it goes on; in this one, it begins a chain the last
		// update did not read.
		p, err := d.svc.Show(d.ctx, c.Parent, store.Basis{})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, 0, err
		}
		if err != nil || p.Session == d.sid {
			return nil, 0, whole("commit %s does not extend the commits read before", c.ID)
		}
	}
	if d.resumed && c.Parent == "" {
		return nil, 0, whole("commit %s begins another chain", c.ID)
	}
	d.lastUsed = c.ID
	f, ok := d.svc.Registry().Lookup(c.Format)
	if !ok || f.Decode == nil {
		return nil, 0, nil
	}
	b, ok := d.read[c.Content]
	if !ok {
		var err error
		if b, err = d.svc.Content(d.ctx, c); err != nil {
			return nil, 0, fmt.Errorf("session %s: %w", d.sid, err)
		}
	}
	evs, err := f.Decode(b)
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: commit %s (%s): %w", d.sid, c.ID, c.Format, err)
	}
	return evs, len(b), nil
}

// page derives a page of commits, decoded a group at a time (at most
// groupBytes of content): a resumed run looks the group's message ids up
// among the stored calls in one query.
func (d *deriver) page(cs []*commits.Commit) error {
	for lo := 0; lo < len(cs); {
		// The contents of the next commits, read together: at most
		// prefetchContents of them, prefetchBytes in all.
		hi, n := lo, int64(0)
		var need []*commits.Commit
		for hi < len(cs) && len(need) < prefetchContents && n < prefetchBytes {
			c := cs[hi]
			hi++
			if f, ok := d.svc.Registry().Lookup(c.Format); ok && f.Decode != nil && c.Session == d.sid && used(c) {
				need = append(need, c)
				n += c.ContentBytes
			}
		}
		got, err := d.svc.Contents(d.ctx, need)
		if err != nil {
			return fmt.Errorf("session %s: %w", d.sid, err)
		}
		d.read = got
		err = d.derivePage(cs[lo:hi])
		d.read = nil
		if err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// The contents a page reads together.
const (
	prefetchContents = 256
	prefetchBytes    = 4 << 20
)

// derivePage derives commits cs, their contents read (d.read).
func (d *deriver) derivePage(cs []*commits.Commit) error {
	var group []loaded
	size := 0
	flush := func() error {
		if d.resumed {
			if err := d.lookup(group); err != nil {
				return err
			}
		}
		for _, l := range group {
			if err := d.derive(l.c, l.evs); err != nil {
				return err
			}
		}
		group, size = group[:0], 0
		return nil
	}
	for _, c := range cs {
		evs, n, err := d.load(c)
		if err != nil {
			return err
		}
		if len(evs) > 0 {
			group = append(group, loaded{c, evs})
			size += n
		}
		if size >= groupBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// groupBytes bounds the content a page decodes before deriving it.
const groupBytes = 16 << 20

// lookup reads the stored calls of the message ids of a group's answers
// that the run has not seen (a call stored before is answered again).
func (d *deriver) lookup(group []loaded) error {
	var ids []any
	for _, l := range group {
		for _, e := range l.evs {
			if e.MessageID == "" || !assistantEvent(e) || d.byMsg[e.MessageID] != nil {
				continue
			}
			if _, ok := d.oldMsg[e.MessageID]; ok {
				continue
			}
			d.oldMsg[e.MessageID] = nil
			ids = append(ids, e.MessageID)
		}
	}
	for len(ids) > 0 {
		k := min(len(ids), 500)
		docs, err := d.svc.Store().Query(d.ctx, store.Query{Where: []store.Pred{store.Where("type", CallType), store.Where("session_id", d.sid),
			{Field: "message_id", Op: store.In, Values: ids[:k]}}})
		if err != nil {
			return fmt.Errorf("session %s: reading recorded calls: %w", d.sid, err)
		}
		for _, doc := range docs {
			c, err := callFromDoc(doc)
			if err != nil {
				return err
			}
			d.oldMsg[c.MessageID] = &oldCall{N: c.N, HasUsage: c.Usage != nil, Model: c.Model}
		}
		ids = ids[k:]
	}
	return nil
}

// derive derives a commit's events.
func (d *deriver) derive(c *commits.Commit, evs []events.Event) error {
	d.at = c.Depth
	for _, e := range evs {
		if e.Time.IsZero() {
			e.Time = c.Created
		}
		d.seen.count(e)
		if d.resumed && (d.seen.Requests || d.seen.Main != d.assume.Main) {
			return whole("the session has recorded requests, or a main thread after all")
		}
		if d.assume.Main && sidechain(e) {
			continue
		}
		if err := d.event(e); err != nil {
			return err
		}
	}
	return nil
}

// event derives one event the session keeps: the call it begins or
// belongs to, the turn it adds to, then the request it joins.
func (d *deriver) event(e events.Event) error {
	parented := d.parented()
	name, err := d.laneOf(e)
	if err != nil {
		return err
	}
	ls := d.lane(name)
	if parented && e.ID != "" && (d.cur == nil || e.ID != d.cur.id) {
		if err := d.open(e); err != nil {
			return err
		}
	}
	if assistantEvent(e) {
		if err := d.assistant(e, name, ls, parented); err != nil {
			return err
		}
	} else if e.Type != events.Output {
		d.prevNew, d.prevOld = nil, nil
	}
	if d.want == 0 {
		d.turn(e)
	}
	b := renderBlock(e)
	if compaction(e) {
		ls.comp++
		ls.list = d.empty()
	}
	ls.list = ls.list.add(b)
	if parented && e.ID != "" {
		if d.cur.referenced {
			return errLegacy // a call was sent with the record before all of it was read
		}
		d.cur.blocks = append(d.cur.blocks, b)
		if compaction(e) {
			d.cur.compact = true
		}
	}
	return nil
}

// laneOf is Derived.lanes for one event.
func (d *deriver) laneOf(e events.Event) (string, error) {
	if !sidechain(e) {
		return "", nil
	}
	if a, _ := e.Metadata["agent_id"].(string); a != "" {
		return "agent-" + a, nil
	}
	if e.ID == "" {
		return "side", nil
	}
	if d.resumed {
		return "", whole("an inline sidechain without an agent id")
	}
	if d.sideRoot == nil {
		d.sideRoot, d.sideUp, d.sideAsked = map[string]string{}, map[string]string{}, map[string]bool{}
	}
	if r, ok := d.sideRoot[e.ID]; ok {
		if d.sideUp[e.ID] != e.ParentID {
			return "", errLegacy
		}
		return "side-" + short(r), nil
	}
	if d.sideAsked[e.ID] {
		return "", errLegacy // a record named as a parent before it was written
	}
	r := e.ID
	if p := e.ParentID; p != "" {
		if pr, ok := d.sideRoot[p]; ok {
			r = pr
		} else {
			d.sideAsked[p] = true
		}
	}
	d.sideRoot[e.ID], d.sideUp[e.ID] = r, e.ParentID
	return "side-" + short(r), nil
}

// open closes the record being read and begins e's.
func (d *deriver) open(e events.Event) error {
	d.close()
	if _, dup := d.records[e.ID]; dup || d.missing[e.ID] {
		return errLegacy // a record written twice, or named as a parent before it was written
	}
	if d.resumed && e.ParentID != "" && !d.knows(e.ParentID) {
		return whole("record %s names a parent whose request is not kept (%s)", e.ID, e.ParentID)
	}
	d.cur = &record{id: e.ID, parent: e.ParentID}
	return nil
}

// close stores the request up to the record being read.
func (d *deriver) close() {
	r := d.cur
	if r == nil {
		return
	}
	d.cur = nil
	d.records[r.id] = d.pathOf(r)
	d.recent = append(d.recent, r.id)
	if len(d.recent) > 2*keepRecords {
		d.recent = append(d.recent[:0], d.recent[len(d.recent)-keepRecords:]...)
	}
}

// pathOf is the request up to record r: its parent's, unless r holds a
// compaction, then its own blocks.
func (d *deriver) pathOf(r *record) reqList {
	l := d.empty()
	if !r.compact {
		l = d.parentList(r.parent)
	}
	for _, b := range r.blocks {
		l = l.add(b)
	}
	return l
}

// parentList is the request up to record id (none: empty).
func (d *deriver) parentList(id string) reqList {
	if id == "" {
		return d.empty()
	}
	if d.cur != nil && d.cur.id == id {
		d.cur.referenced = true
		return d.pathOf(d.cur)
	}
	if l, ok := d.records[id]; ok {
		return l
	}
	d.missing[id] = true
	return d.empty()
}

// assistant is Derived.derive's step for an event of a model's answer.
func (d *deriver) assistant(e events.Event, name string, ls *laneState, parented bool) error {
	if e.Model == "<synthetic>" {
		return nil
	}
	var c *dcall
	switch {
	case e.MessageID != "":
		c = d.byMsg[e.MessageID]
		if c == nil && d.resumed {
			if old, ok := d.stored(e.MessageID); ok {
				return d.touch(old, e)
			}
		}
	case d.prevNew != nil && e.Usage == nil:
		c = d.prevNew
	case d.prevOld != nil && e.Usage == nil:
		return d.touch(*d.prevOld, e)
	}
	if c == nil && d.want > 0 && d.made+1 != d.want {
		// Another call than the one wanted: numbered, its request not
		// measured, nothing of it kept.
		d.made++
		if d.other == nil {
			d.other = &dcall{}
		}
		c = d.other
		if e.MessageID != "" {
			d.byMsg[e.MessageID] = c
		}
	}
	if c == nil {
		nc := &dcall{Call: Call{N: d.base + len(d.calls) + d.made + 1, Lane: name, MessageID: e.MessageID, Model: e.Model, Time: e.Time,
			PrefixMessages: -1, PrefixBytes: -1, Depth: d.at}, comp: ls.comp}
		if e.MessageID != "" {
			d.byMsg[e.MessageID] = nc
		}
		if d.reqs != nil {
			nc.RequestID = d.reqs.reqOf[e.MessageID]
		}
		list := ls.list
		if parented && e.ParentID != "" {
			if d.resumed && !d.knows(e.ParentID) {
				return whole("a call of record %s names a parent whose request is not kept", e.ID)
			}
			list = d.parentList(e.ParentID)
		}
		nc.req, nc.Messages = list, list.count()
		_, _, nc.Bytes = list.layout()
		if d.reqs != nil && nc.RequestID != "" {
			if q := d.reqs.requests[nc.RequestID]; q != nil {
				body, spans := exactBody(q, d.reqs.blobs, nc.Model)
				nc.Exact, nc.Shape, nc.Bytes = true, q.Shape, len(body)
				nc.req = reqList{}
				nc.msgs, nc.ends = recordedDigests(q, spans)
				if q.Model != "" && nc.Model == "" {
					nc.Model = q.Model
				}
			}
		}
		if d.want > 0 {
			d.made++
			d.wanted = nc
		} else {
			if p := ls.last; p != nil {
				nc.Prev, nc.pcall, nc.link = p.N, &p.Call, nc.linkTo(p)
				p.req, p.msgs, p.ends = reqList{}, nil, nil // no later call compares with it
			}
			ls.last = nc
			d.calls = append(d.calls, nc)
		}
		c = nc
	}
	d.prevNew, d.prevOld = c, nil
	if c.Usage == nil && e.Usage != nil {
		u := *e.Usage
		c.Usage = &u
		if s, _ := e.Metadata["cache_miss_reason"].(string); s != "" {
			c.MissReason = s
		}
	}
	if c.Model == "" {
		c.Model = e.Model
	}
	return nil
}

// knows tells whether a resumed run has the request up to record id.
func (d *deriver) knows(id string) bool {
	_, ok := d.records[id]
	return ok || (d.cur != nil && d.cur.id == id)
}

// touch is an event of a call stored before the run: if it changes the
// call, the session is derived whole.
func (d *deriver) touch(old oldCall, e events.Event) error {
	if (!old.HasUsage && e.Usage != nil) || (old.Model == "" && e.Model != "") {
		return whole("an event changes call %d, stored before", old.N)
	}
	d.prevNew, d.prevOld = nil, &old
	return nil
}

// stored is the call stored before the run of message id (lookup read
// it).
func (d *deriver) stored(id string) (oldCall, bool) {
	if c := d.oldMsg[id]; c != nil {
		return *c, true
	}
	return oldCall{}, false
}

// turn is Derived.turns for one event.
func (d *deriver) turn(e events.Event) {
	if e.Type == events.System && e.Subtype == "title" && strings.TrimSpace(e.Text) != "" {
		d.title = strings.TrimSpace(e.Text)
	}
	prompt := e.Type == events.Prompt && (e.Source == "user" || e.Source == "agent")
	if prompt && d.prompt == "" {
		d.prompt = strings.TrimSpace(e.Text)
	}
	switch {
	case prompt && strings.TrimSpace(e.Text) != "":
		d.turns = append(d.turns, Turn{User: e.Text})
	case e.Type == events.Response && len(d.turns) > 0 && strings.TrimSpace(e.Text) != "":
		t := &d.turns[len(d.turns)-1]
		t.Assistant = append(t.Assistant, e.Text)
	}
}

// finish closes the last record and attributes the run's calls, in
// order: a call's attribution reads its previous call's final usage.
func (d *deriver) finish() {
	d.close()
	hour := map[string]bool{}
	for name, ls := range d.lanes {
		hour[name] = ls.hour
	}
	for _, c := range d.calls {
		l := c.link
		l.hour = hour[c.Lane]
		attributeWith(&c.Call, c.pcall, l)
		if u := c.Usage; u != nil && u.CacheWrite != 0 {
			hour[c.Lane] = u.CacheWrite1h > 0
		}
	}
	for name, ls := range d.lanes {
		ls.hour = hour[name]
	}
}
