package assemble

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// Layout chooses the order of a context.
type Layout string

// The layouts.
const (
	// LayoutStream is the cache-stable layout (the default).
	LayoutStream Layout = "stream"
	// LayoutLiteral is the spec's literal order: metadata pool block, chat,
	// active-content block.
	LayoutLiteral Layout = "literal"
)

// Options configure an Assembler.
type Options struct {
	// Layout defaults to LayoutStream.
	Layout Layout
	// Tools is the tool list offered to the model, fixed for the session.
	Tools []ToolSpec
	// Policy is the rebase cost model's configuration.
	Policy Policy
	// Tokenizer counts tokens; default BytesTokenizer.
	Tokenizer Tokenizer
	// Now is the clock used for cache expiry; default time.Now.
	Now func() time.Time
	// Paths is how file paths are shown (rendering version 4); a resumed
	// session keeps its first commit's.
	Paths Paths
	// Lean, when not nil, starts the session with a lean head (LeanHead;
	// stream layout only); a resumed session keeps its first commit's.
	Lean *LeanHead
	// Release drops the stream's frozen prefix from memory (issue 18):
	// the items no later call changes, which the context commits hold.
	// An Assembled's messages before its Released mark are then rebuilt
	// from the commits (Assembled.Whole), and an Assembled must be read
	// before the next Call. LayoutStream only; the service turns it on
	// (SetRelease) once a client says which answer it holds.
	Release bool
	// Render is the rendering version of a new session, 1 to
	// RenderVersion; 0 means RenderVersion. Only comparisons and tests of
	// older renderings set it; a resumed session keeps its first commit's.
	Render int
}

// Assembler assembles the contexts of one session. It reads the session's
// state (session.Session) as the tools change it; the harness reports the
// chat through User, Assistant and ToolResult and asks for each call's
// context with Call. Methods are safe for concurrent use but meant to be
// called in the order the events happen.
type Assembler struct {
	mu  sync.Mutex
	s   *session.Session
	st  store.Store
	o   Options
	pol Policy
	tok Tokenizer

	sys    *objects.Object
	sysRef objects.Ref
	head   []byte

	lean     *LeanHead // Options.Lean, or the session's first commit's
	managed  bool      // the head is the managed one (always, without lean)
	needHead bool      // the stream needs the managed head from the next call

	items   []*item // the stream (LayoutStream) or every event (LayoutLiteral)
	offs    []int   // byte offset of each item in the rendering (LayoutStream)
	buf     []byte  // rendered bytes (LayoutStream), from byte bufBase on
	bufBase int     // bytes of the rendering released before buf (Options.Release)

	poolSeen int                 // State.Pool entries already looked at
	listed   map[string]bool     // ids with a metadata line or toolcall_ref
	latest   map[string]*version // latest known version of each id seen
	shown    map[string]int      // id -> index of its live content item
	stale    int                 // stale tokens rendered
	tokens   int                 // tokens of buf
	headTok  int                 // tokens of head
	metaTok  int                 // tokens of the metadata items in buf
	// committedShown is shown as the commits up to the last one record it
	// (nil: unknown, so the next commit records it whole); a commit records
	// only what changed since (shownFields).
	committedShown map[string]int
	// sysRefCall is the call whose commit records sysRef (0: none yet);
	// later commits name that call instead of repeating the reference.
	sysRefCall   int
	committedSys objects.Ref // the reference the commit of sysRefCall records

	calls     int               // calls assembled
	committed int               // len(items) at the last commit
	lastCall  time.Time         // time of the previous call
	renewed   time.Time         // the last renewal of the cache entry after it (Renewed), or zero
	rebaseAt  int               // -1, or the lowest item index rewritten since the last commit
	dropped   []string          // refs of the blocks rebases left out since the last commit (rendering 4)
	snapEnd   int               // items in the session-start snapshot
	pending   map[string]bool   // tool calls of the last assistant message without a result yet
	last      *Commit           // the commit Resume started from, until the next commit
	deferred  map[string]bool   // toolcalls recorded before a Resume whose results are not in the stream yet
	callAt    map[string]int    // tool-call id -> index of the assistant item that made it
	inputs    map[string]*input // collapsible tool inputs by tool-call id
	rv        int               // rendering version (RenderVersion, or the session's first commit's)
	spill     string            // a bare head's spill directory (spillDir), "" otherwise
	told      bool              // the bare head's spillNote is in the stream
	toSpill   []SpillFile       // outputs named by spill file since the last commit (Assembled.Spill)
	paths     Paths             // how paths are shown (Options.Paths, or the session's first commit's)
	mv        int               // metadata line version (objects.MetadataVersion, or the first commit's)
	same      map[string]int64  // shown id -> a later tx found to hold the same version
	prevLen   int               // bytes of the previous call's context
	prevTok   int               // its tokens
	prevBytes []byte            // its bytes (LayoutLiteral; nil after Resume)

	held      map[string]*version      // shown id -> the version the model holds (its block and live patches)
	patches   map[string][]int         // shown id -> item indexes of its live patches
	edits     map[string][]pendingEdit // shown file id -> write/edit calls reported since its last version check
	overflow  map[string]bool          // live ids Overflow offered for deactivation (the window is full)
	overBy    int                      // by how many tokens the context was over when Overflow offered them
	shape     Shape                    // the session's rhythm so far, for the cost model's horizon
	newTurn   bool                     // a user message came since the last call
	previewed map[string]bool          // shown outputs entered as a preview (demand paging)
	previews  int                      // outputs entered as a preview so far
	// prevStableTok is the tokens before the previous call's stable
	// boundary (Policy.Breakpoints stable).
	prevStableTok int

	// The frozen prefix (issue 18): items [0, frozen) are whole messages
	// before the message of the last item that precedes the first item a
	// rebase could rewrite (or an assistant message waiting for a tool
	// result), so no later call changes them or their bytes. Each call's
	// scans start at frozen; frozenMsgs and frozenTok are the messages and
	// the tokens (head included) before it, frozenLast its last item's
	// rendering, and hashed the SHA-256 state of the bytes before it. A
	// call moves frozen to nextFrozen (found by the call before, so that
	// the caller can still read that call's messages) and, with
	// Options.Release, drops those items from memory: they are in the
	// context commits.
	frozen, nextFrozen int
	frozenMsgs         int
	frozenTok          int
	frozenLast         *frag
	gone, goneMsgs     int // the items and messages released (frozen, or less when Release was turned off)
	hashed             hash.Hash
	hashedOff          int // bytes of buf written to hashed
}

type version struct {
	obj *objects.Object
	ref objects.Ref
}

// New returns the Assembler of session s. It takes the session-start
// snapshot at once: the system prompt, then a metadata entry for every
// object in the pool and a content block for every active one. It reads the
// store but writes nothing; the first Call writes the first commit.
func New(ctx context.Context, s *session.Session, o Options) (*Assembler, error) {
	a, err := newAssembler(o, s)
	if err != nil {
		return nil, err
	}
	if err := a.setSystem(ctx, nil, objects.DynamicRef(s.Info().SystemPromptID)); err != nil {
		return nil, err
	}
	if err := a.sync(ctx, true); err != nil { // the snapshot lists everything
		return nil, err
	}
	a.snapEnd = len(a.items)
	return a, nil
}

// newAssembler checks and completes o and returns an empty Assembler.
func newAssembler(o Options, s *session.Session) (*Assembler, error) {
	if o.Layout == "" {
		o.Layout = LayoutStream
	}
	if o.Layout != LayoutStream && o.Layout != LayoutLiteral {
		return nil, fmt.Errorf("assemble: unknown layout %q", o.Layout)
	}
	if o.Layout != LayoutStream {
		o.Lean = nil
	}
	if o.Render == 0 {
		o.Render = RenderVersion
	}
	if o.Render < 1 || o.Render > RenderVersion {
		return nil, fmt.Errorf("assemble: unknown rendering version %d", o.Render)
	}
	if o.Tokenizer == nil {
		o.Tokenizer = BytesTokenizer{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Tools != nil {
		var ts []ToolSpec
		v, err := toJSONValue(o.Tools)
		if err == nil {
			err = fromJSONValue(v, &ts)
		}
		if err != nil {
			return nil, fmt.Errorf("assemble: tools: %w", err)
		}
		o.Tools = ts // as a commit stores them, so rebuilds render the same
	}
	return &Assembler{s: s, st: s.Store(), o: o, pol: o.Policy.withDefaults(), tok: o.Tokenizer,
		listed: map[string]bool{}, latest: map[string]*version{}, shown: map[string]int{}, rebaseAt: -1,
		callAt: map[string]int{}, inputs: map[string]*input{}, rv: o.Render, mv: objects.MetadataVersion, paths: o.Paths, same: map[string]int64{},
		held: map[string]*version{}, patches: map[string][]int{}, edits: map[string][]pendingEdit{}, previewed: map[string]bool{},
		lean: o.Lean, managed: o.Lean == nil, spill: spillDir(o.Lean), hashed: sha256.New()}, nil
}

// setSystem resolves the system prompt (through r when resuming) and
// renders the fixed head: system prompt and tool list.
func (a *Assembler) setSystem(ctx context.Context, r *resolver, ref objects.Ref) error {
	var err error
	if r != nil {
		a.sys, err = r.get(ref)
		a.sysRef = ref
	} else {
		var tx int64
		if a.sys, tx, err = expand.Resolve(ctx, a.st, ref); err == nil {
			a.sysRef = objects.StaticRef(a.sys, tx)
		}
	}
	if err != nil {
		return fmt.Errorf("assemble: system prompt: %w", err)
	}
	sys, tools := a.headText()
	if a.head, err = renderHead(sys, tools); err != nil {
		return fmt.Errorf("assemble: tools: %w", err)
	}
	a.buf = append([]byte(nil), a.head...)
	a.tokens = a.tok.Count(string(a.head))
	a.headTok, a.frozenTok = a.tokens, a.tokens
	return nil
}

// Renewed tells the assembler that the harness renewed the session's
// prompt-cache entry at t without a call of its own: a warm request that
// sent the previous call's request again (Pi's cache warming; docs/pi.md).
// The next call's idle time (Assembled.Idle, the cost model's Inputs.Idle,
// whether its turn started warm or cold) counts from the latest renewal
// after the previous call instead of from that call. A renewal not after
// the previous call, or later than the next call, changes nothing.
func (a *Assembler) Renewed(t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.After(a.lastCall) && t.After(a.renewed) {
		a.renewed = t
	}
}

// since is when the session's cache entry was last sent before a call at
// now: the previous call, or a renewal after it (Renewed).
func (a *Assembler) since(now time.Time) time.Time {
	if a.renewed.After(a.lastCall) && !a.renewed.After(now) {
		return a.renewed
	}
	return a.lastCall
}

// User appends a user message to the stream (a new turn's prompt). The
// tools' BeginTurn is the harness's to call.
func (a *Assembler) User(ctx context.Context, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.sync(ctx, false); err != nil {
		return err
	}
	a.push(&item{kind: kUser, text: text})
	if a.shape.Current > 0 {
		a.shape.Turns++
		a.shape.TurnCalls += a.shape.Current
		a.shape.Current = 0
	}
	a.newTurn = true
	return nil
}

// Note appends a context note, a one-line user-side text such as
// "[context] …", to the stream. From rendering version 3 a "[context] "
// prefix is written "[ctxstore] ", as every line ctxstore writes.
func (a *Assembler) Note(ctx context.Context, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rv >= 3 {
		if rest, ok := strings.CutPrefix(text, "[context] "); ok {
			text = ctxPrefix + rest
		}
	}
	a.push(&item{kind: kNote, text: text})
	return nil
}

// Assistant appends an assistant message: its text and the tool calls it
// made (provider ids, names, structured arguments).
func (a *Assembler) Assistant(ctx context.Context, text string, calls []ToolCall) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	cs := make([]ToolCall, len(calls))
	for i, c := range calls {
		args, err := normalizeArgs(c.Args)
		if err != nil {
			return fmt.Errorf("assemble: tool call %s: %w", c.ID, err)
		}
		cs[i] = ToolCall{ID: c.ID, Name: c.Name, Args: args}
	}
	a.pending = map[string]bool{}
	for _, c := range cs {
		a.pending[c.ID] = true
		a.callAt[c.ID] = len(a.items)
	}
	a.push(&item{kind: kAssistant, text: text, calls: cs})
	return nil
}

// ToolResult appends the result of a tool call as recorded by the tools
// (tools.Record, RecordResult or a wrapped tool): a tool-result message
// holding only the toolcall's metadata line (toolcall_ref id=… tool=…
// status=…), never its output. Then whatever the call changed follows in the
// stream: metadata entries for the objects it discovered, notes for what
// collapsed, and content blocks for what it activated (its own output when
// the toolcall is active, the file of a read). When the last assistant
// message made several calls, these follow the last of their results, since
// providers require a message's tool results to come together.
func (a *Assembler) ToolResult(ctx context.Context, r tools.Result) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.Object == nil || r.Object.Kind() != objects.KindToolcall || !r.Ref.Static {
		return fmt.Errorf("assemble: tool result %q is not a recorded toolcall", r.ID)
	}
	v := &version{obj: r.Object, ref: r.Ref} // not cached in latest: a listed toolcall is never resolved again
	a.listed[r.ID] = true
	delete(a.deferred, r.ID)
	it := &item{kind: kToolRef, ref: r.Ref, obj: r.Object}
	if a.o.Layout == LayoutStream {
		target := v // the toolcall, whose arguments stay in the store
		if len(r.Files) == 1 {
			if o, tx, err := expand.Resolve(ctx, a.st, objects.DynamicRef(r.Files[0])); err == nil {
				target = &version{obj: o, ref: objects.StaticRef(o, tx)} // the file version the call produced
			}
		}
		if a.noteInput(r.ID, target) {
			it.input = &target.ref
		}
		if r.Change != "" && a.rv >= 3 {
			// The files a write or edit pools need no metadata line: the
			// call's path names them, and activate and read take a path.
			for _, f := range r.Files {
				if !a.listed[f] {
					a.listed[f] = true
					it.named = append(it.named, f)
				}
			}
		}
		if r.Change != "" && len(r.Files) == 1 && a.rv >= 3 {
			if _, ok := a.shown[r.Files[0]]; ok {
				a.edits[r.Files[0]] = append(a.edits[r.Files[0]], pendingEdit{call: r.ID, change: r.Change})
			}
		}
	}
	// Rendering 3: a live output is rendered in its own tool result, not
	// as a content block after the results.
	if a.o.Layout == LayoutStream && a.rv >= 3 && r.Object.Content != nil && a.s.IsActive(r.ID) {
		if _, ok := a.shown[r.ID]; !ok {
			it.out = true
			a.shown[r.ID] = len(a.items)
			a.held[r.ID] = v
			// A lean head that will switch offers no activate yet: an
			// output enters whole. A bare head's preview names its spill
			// file instead.
			if pt := a.previewTokens(); !a.switches() && pt > 0 && len(*r.Object.Content) > 4*pt && a.tok.Count(*r.Object.Content) > pt {
				it.preview = true
				a.previewed[r.ID] = true
				a.previews++
				a.shape.Previews++
				a.spillOut(it)
			}
		}
	}
	a.wholeOnActivate(r.Object)
	a.push(it)
	delete(a.pending, r.ID)
	if len(a.pending) > 0 {
		return nil // providers want all results of a message together
	}
	return a.sync(ctx, false)
}

// push renders it and appends it to the stream.
func (a *Assembler) push(it *item) {
	if it.f == nil {
		it.rv, it.mv, it.paths, it.spill = a.rv, a.mv, a.paths, a.spill
		it.render()
	}
	var prev *frag
	if n := len(a.items); n > 0 {
		prev = a.items[n-1].f
	}
	if it.f.silent {
		// Its role depends on what precedes it, which a rebase changes;
		// calls assembled before keep the fragment they had.
		f := *it.f
		it.f = &f
		it.f.follow(prev)
	}
	start := a.bufBase + len(a.buf)
	a.buf = appendFrag(a.buf, prev, it.f)
	it.tokens = a.tok.Count(string(a.buf[start-a.bufBase:]))
	if it.out {
		it.outTok = a.tok.Count(it.f.blocks[0].Text + "\n")
	}
	a.tokens += it.tokens
	if it.kind.isMeta() {
		a.metaTok += it.tokens
	}
	a.offs = append(a.offs, start)
	a.items = append(a.items, it)
	if !it.staleable() {
		// Rendered, and never rendered again: a rebase keeps it as it is.
		// The object (a tool's output, say) stays in the store, not in
		// the stream, so the stream holds what the context shows and
		// nothing more (issue 18).
		it.obj = nil
	}
}

// staleable reports whether it can go stale, and a rebase then rewrite it
// from its object: a content block, a patch, and a tool result whose
// output is rendered in it. Metadata lines, collapsed references and the
// other tool results never change.
func (it *item) staleable() bool {
	switch it.kind {
	case kMeta, kStub:
		return false
	case kToolRef:
		return it.out
	}
	return true
}

// resolve returns the latest version of id, from the cache or the store.
func (a *Assembler) resolve(ctx context.Context, id string) (*version, error) {
	if v, ok := a.latest[id]; ok {
		return v, nil
	}
	o, tx, err := expand.Resolve(ctx, a.st, objects.DynamicRef(id))
	if err != nil {
		return nil, err
	}
	v := &version{obj: o, ref: objects.StaticRef(o, tx)}
	a.latest[id] = v
	return v, nil
}

// rendered reports whether id is rendered as an object at all (the
// session's own objects are the chat and system prompt themselves).
func rendered(id string) bool {
	_, _, own := objects.SessionIDOf(id)
	return !own
}

// sync brings the stream up to date with the session state: metadata
// entries for new pool entries, a note for deactivated content, content
// blocks for newly active objects; with checkVersions, a new content block
// for every active object that has a newer version in the store.
func (a *Assembler) sync(ctx context.Context, checkVersions bool) error {
	// The pool's new entries and the active set, not a copy of the whole
	// state (which grows with the session).
	pool, poolLen := a.s.PoolSince(a.poolSeen)
	if a.poolSeen > poolLen {
		a.poolSeen = 0 // the pool never shrinks; be safe if it did
	}
	activeIDs := a.s.Active()
	heldBack := false
	for _, id := range pool {
		if a.deferred[id] {
			continue // its ToolResult will list it; sync looks again then
		}
		if !rendered(id) || a.listed[id] {
			continue
		}
		v, err := a.resolve(ctx, id)
		if err != nil {
			return fmt.Errorf("assemble: pool entry: %w", err)
		}
		if a.awaitsResult(v, checkVersions) {
			heldBack = true
			continue
		}
		a.listed[id] = true
		delete(a.latest, id) // listed: the pool loop never resolves it again
		if v.obj.Kind() != objects.KindFile {
			a.needsHead() // only activate loads it (read takes files)
		}
		a.push(&item{kind: kMeta, ref: v.ref, obj: v.obj})
	}
	if len(a.deferred) == 0 && !heldBack {
		a.poolSeen = poolLen
	}

	active := make(map[string]bool, len(activeIDs))
	for _, id := range activeIDs {
		active[id] = true
	}
	var gone, changed, window []string
	for _, id := range a.shownIDs() {
		if !active[id] {
			if a.rv >= 3 && a.overflow[id] {
				window = append(window, id)
			} else if a.rv < 3 || a.items[a.shown[id]].obj.Kind() != objects.KindToolcall {
				gone = append(gone, id) // rendering 3: outputs collapsing need no note
			}
			a.unshow(id, true)
		}
	}
	if checkVersions {
		if err := a.checkVersions(ctx, &changed); err != nil {
			return err
		}
	}
	if len(window) > 0 {
		a.needsHead()
		for i := range window {
			window[i] = objects.DisplayID(window[i])
		}
		load := "activate(id) brings one back"
		if a.spill != "" {
			load = "reading a file, or an output's " + spillPattern(a.spill, "<call id>") + ", brings one back"
		}
		a.push(&item{kind: kNote, text: fmt.Sprintf("%sdeactivated to fit the context window (it was %d tokens over its limit): %s; %s, at the cost of others",
			ctxPrefix, a.overBy, strings.Join(window, ", "), load)})
	}
	if a.rv >= 2 {
		for i := range gone {
			gone[i] = objects.DisplayID(gone[i])
		}
		for i := range changed {
			changed[i] = objects.DisplayID(changed[i])
		}
	}
	deactivated, changedNote := "[context] deactivated, now metadata only (ignore their content above): ",
		"[context] changed since shown (new version follows): "
	if a.rv >= 2 {
		deactivated, changedNote = "[context] inactive now: ", "[context] changed, new version below: "
	}
	if a.rv >= 3 {
		deactivated, changedNote = ctxPrefix+"inactive now: ", changedPrefix
	}
	if len(gone) > 0 {
		sort.Strings(gone)
		a.push(&item{kind: kNote, text: deactivated + strings.Join(gone, ", ")})
	}
	if len(changed) > 0 {
		sort.Strings(changed)
		a.push(&item{kind: kNote, text: changedNote + strings.Join(changed, ", ")})
	}
	for _, id := range activeIDs {
		if !rendered(id) {
			continue
		}
		if _, ok := a.shown[id]; ok || a.deferred[id] {
			continue
		}
		delete(a.latest, id) // show the version that is current now, not a cached one
		v, err := a.resolve(ctx, id)
		if err != nil {
			return fmt.Errorf("assemble: active object: %w", err)
		}
		if a.awaitsResult(v, checkVersions) {
			continue
		}
		a.shown[id] = len(a.items)
		a.held[id] = v
		delete(a.edits, id)
		a.push(&item{kind: kContent, ref: v.ref, obj: v.obj})
	}
	return nil
}

// changedPrefix opens the note that names the objects shown again in full
// because they changed (rendering 3 on).
const changedPrefix = ctxPrefix + "changed, new version below: "

// patchCost is what the view of shown object id costs beyond its block
// with patch p added: its live patches and, once the session has rebased,
// the edit inputs tied to it. When that passes the block's own size, a new
// full block is cheaper to keep (the old one and its deltas collapse at
// the next rebase). An input tied to the view would otherwise collapse
// only at a rebase, so its saving counts only in a session that rebases;
// one that has not (a short one, so far) pays only what it sends.
func (a *Assembler) patchCost(id string, p *item) int {
	n := a.tok.Count(p.text)
	for _, i := range a.patches[id] {
		n += a.items[i].tokens
	}
	if a.shape.Rebases == 0 {
		return n
	}
	for _, in := range a.inputs {
		if in.holder == id {
			n += in.saved
		}
	}
	for _, c := range p.calls {
		if in, ok := a.inputs[c.ID]; ok && in.holder != id {
			n += in.saved
		}
	}
	return n
}

// awaitsResult reports whether v is a toolcall the stream has not listed
// yet, outside a call (final is false): a harness that reports calls
// before its log (the service's observe route) would otherwise have the
// call's output shown before the call is. Its tool result will list it and
// show its output in it (rendering 3); at the next call, whatever is still
// unlisted is shown.
func (a *Assembler) awaitsResult(v *version, final bool) bool {
	return a.rv >= 3 && !final && a.o.Layout == LayoutStream && !a.listed[v.ref.ID] && v.obj.Kind() == objects.KindToolcall
}

// wholeOnActivate: when o is an activate call naming an output shown as a
// preview, or under a bare head a whole read of that output's spill file,
// the preview goes stale, so that the next sync shows the output whole (a
// content block), as any activated object.
func (a *Assembler) wholeOnActivate(o *objects.Object) {
	if o.Kind() != objects.KindToolcall || o.Toolcall.Status != objects.StatusOK {
		return
	}
	var ref string
	switch strings.ToLower(o.Toolcall.Tool) {
	case "activate":
		ref, _ = o.Toolcall.Args["id"].(string)
	case "read":
		ref = a.spillRead(o.Toolcall.Args)
	}
	if ref == "" {
		return
	}
	for id := range a.previewed {
		if id == ref || len(ref) >= 8 && strings.HasPrefix(id, ref) {
			if i, ok := a.shown[id]; ok {
				a.markStale(i)
				delete(a.shown, id)
				delete(a.held, id)
			}
			delete(a.previewed, id)
			a.fault(id)
			return
		}
	}
}

// maxFaultRate is the share of previews the model may read back whole
// before previews get larger (issue 17 item 3: under 5%).
const maxFaultRate = 0.05

// fault counts preview id read back whole (once per output): an activate
// naming it or a whole read of its spill file (wholeOnActivate). The same
// command run again is not counted here: live, it is as often a new run
// after the model changed the code (the paging report counts re-runs with
// no write or edit between, as the replay does). While the
// session's previews are read back more often than maxFaultRate, each
// such read doubles the size from which outputs enter as a preview
// (previewTokens): the model has shown it needs outputs of that size, so
// only larger ones are cut; at most 10 doublings.
func (a *Assembler) fault(id string) {
	if slices.Contains(a.shape.Faulted, id) {
		return
	}
	a.shape.Faulted = append(slices.Clip(a.shape.Faulted), id)
	if float64(len(a.shape.Faulted)) > maxFaultRate*float64(a.shape.Previews) && a.shape.PreviewDoublings < 10 {
		a.shape.PreviewDoublings++
	}
}

// previewTokens is the size from which a live output enters as a preview
// in this session: Policy.PreviewTokens, doubled at each fault that came
// while the fault rate was over maxFaultRate.
func (a *Assembler) previewTokens() int {
	if a.pol.PreviewTokens <= 0 {
		return a.pol.PreviewTokens
	}
	return a.pol.PreviewTokens << a.shape.PreviewDoublings
}

// spillRead returns the call id whose spill file a read call's arguments
// name whole: no offset or limit, or lines that cover the whole output
// (tools.Covers, as the read itself decides); "" for any other read.
func (a *Assembler) spillRead(args map[string]any) string {
	p, _ := args["path"].(string)
	if a.spill == "" || p == "" || filepath.Dir(p) != filepath.Clean(a.spill) {
		return ""
	}
	id, _ := tools.SpillCallID(filepath.Base(p))
	offset, limit := tools.IntArg(args, "offset"), tools.IntArg(args, "limit")
	if offset == 0 && limit == 0 {
		return id
	}
	if h := a.held[id]; h != nil && h.obj.Content != nil && tools.Covers(*h.obj.Content, offset, limit) {
		return id
	}
	return "" // a part: the preview stays
}

// SetRelease turns Options.Release on or off from the next call on
// (what was released stays in the commits only).
func (a *Assembler) SetRelease(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.o.Release = on
}

// Previews returns how many outputs entered as a preview, and whether id
// is one still shown so (its output not whole in the context).
func (a *Assembler) Previews(id string) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.previews, a.previewed[id]
}

// shownIDs returns the ids with a live content block, sorted, so that what
// is appended for them comes in a deterministic order.
func (a *Assembler) shownIDs() []string {
	ids := make([]string, 0, len(a.shown))
	for id := range a.shown {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// unshow makes id's content block and patches stale, and the inputs
// collapsing with it (its own, when inactive, and those tied to its view).
func (a *Assembler) unshow(id string, inactive bool) {
	a.markStale(a.shown[id])
	for _, p := range a.patches[id] {
		a.markStale(p)
	}
	delete(a.shown, id)
	delete(a.patches, id)
	delete(a.held, id)
	delete(a.edits, id)
	delete(a.previewed, id) // a preview read back once no longer shown is a collapsed output's
	if inactive {
		a.staleInput(id)
	}
	for call, in := range a.inputs {
		if in.holder == id {
			a.staleInput(call)
		}
	}
}

// checkVersions looks up the latest transaction of every shown object; a
// newer version makes the shown block stale, and sync shows the new one.
func (a *Assembler) checkVersions(ctx context.Context, changed *[]string) error {
	for _, id := range a.shownIDs() {
		i := a.shown[id]
		held := a.held[id]
		heldRef := a.items[i].ref
		if held != nil {
			heldRef = held.ref
		}
		et, err := a.st.EntityTx(ctx, id, store.Basis{})
		if err != nil {
			return fmt.Errorf("assemble: checking %s: %w", id, err)
		}
		if et.TxID == heldRef.Tx || a.same[id] == et.TxID {
			continue
		}
		// Another transaction can hold the same version: a session imported
		// into another store keeps its references' source tx ids. The
		// hashes decide, once per transaction.
		cur, tx, err := expand.Resolve(ctx, a.st, objects.DynamicRef(id))
		if err == nil && heldRef.Verify(cur) == nil {
			a.same[id] = et.TxID
			continue
		}
		if err == nil && a.rv >= 3 && a.o.Layout == LayoutStream {
			v := &version{obj: cur, ref: objects.StaticRef(cur, tx)}
			// Shown again, the new version costs its block and its
			// name in the note that announces it (the note's opening
			// with the first such object).
			name := changedPrefix + objects.DisplayID(id)
			if len(*changed) > 0 {
				name = ", " + objects.DisplayID(id)
			}
			again := a.items[i].tokens + a.tok.Count(name)
			if p := a.patchFor(id, held, v); p != nil && a.patchCost(id, p) <= again {
				for _, c := range p.calls {
					if in, ok := a.inputs[c.ID]; ok {
						in.holder = id // the edit's text is part of the file's view now
					}
				}
				a.patches[id] = append(a.patches[id], len(a.items))
				a.push(p)
				a.held[id], a.latest[id] = v, v
				delete(a.edits, id)
				continue
			}
		}
		delete(a.latest, id)
		a.unshow(id, false) // the new version follows in full
		*changed = append(*changed, id)
	}
	return nil
}

func (a *Assembler) markStale(i int) {
	if !a.items[i].stale {
		a.items[i].stale = true
		a.stale += a.items[i].liveTokens()
	}
}

// liveTokens is what an item's live content costs: the output of a tool
// result that renders it, else the whole item.
func (it *item) liveTokens() int {
	if it.kind == kToolRef {
		return it.outTok
	}
	return it.tokens
}
