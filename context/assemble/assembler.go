package assemble

import (
	"context"
	"crypto/sha256"
	"fmt"
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
	// LayoutLiteral is the plain order: metadata pool block, chat,
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
	// Paths is how file paths are shown (from rendering version 4); a resumed
	// session keeps its first commit's.
	Paths Paths
	// Lean, when not nil, starts the session with a lean head (LeanHead;
	// stream layout only); a resumed session keeps its first commit's.
	Lean *LeanHead
	// Release drops the stream's frozen prefix from memory (the items no
	// later call changes, which the context commits hold), so that a long
	// session's memory follows its live part. An Assembled's messages before its Released mark are then rebuilt
	// from the commits (Assembled.Whole), and an Assembled must be read
	// before the next Call. LayoutStream only; the service turns it on
	// (SetRelease) once a client says which answer it holds.
	Release bool
	// Render is the rendering version of a new session, 1 to
	// RenderUserFirst; 0 means RenderVersion. Comparisons and tests of
	// older renderings set it, and a harness that sends the turn's user
	// message itself asks for RenderUserFirst; a resumed session keeps its
	// first commit's.
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

	headState    // the system prompt and whether a lean head switched
	stream       // the items and their rendering
	frozenPrefix // the part of the stream no later call changes
	holdings     // what the model holds of each object
	toolCalls    // tool calls waiting for results, and their inputs
	paging       // previews, the window's overflow, spill files
	rhythm       // the calls so far: count, clock, shape
	recorder     // what the next context commit records
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
	sty, err := newStyle(o.Layout, o.Render, objects.MetadataVersion, o.Paths, o.Lean)
	if err != nil {
		return nil, fmt.Errorf("assemble: %w", err)
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
	return &Assembler{s: s, st: s.Store(), o: o, pol: o.Policy.withDefaults(),
		headState:    headState{lean: o.Lean, managed: o.Lean == nil},
		stream:       stream{style: sty, tok: o.Tokenizer},
		frozenPrefix: frozenPrefix{hashed: sha256.New()},
		holdings:     newHoldings(),
		toolCalls:    toolCalls{callAt: map[string]int{}, inputs: map[string]*input{}},
		paging:       paging{previewed: map[string]bool{}},
		recorder:     recorder{rebaseAt: -1},
	}, nil
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
	head, err := renderHead(sys, tools)
	if err != nil {
		return fmt.Errorf("assemble: tools: %w", err)
	}
	a.frozenTok = a.begin(head)
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
	a.rhythm.renew(t)
}

// renew records a renewal of the cache entry at t (Renewed).
func (r *rhythm) renew(t time.Time) {
	if t.After(r.lastCall) && t.After(r.renewed) {
		r.renewed = t
	}
}

// since is when the session's cache entry was last sent before a call at
// now: the previous call, or a renewal after it (Renewed).
func (r *rhythm) since(now time.Time) time.Time {
	if r.renewed.After(r.lastCall) && !r.renewed.After(now) {
		return r.renewed
	}
	return r.lastCall
}

// User appends a user message to the stream (a new turn's prompt). The
// tools' BeginTurn is the harness's to call.
func (a *Assembler) User(ctx context.Context, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.style.rules.userFirst() { // else the next sync shows it after the message
		if err := a.sync(ctx, false); err != nil {
			return err
		}
	}
	a.push(&item{kind: kUser, text: text})
	a.rhythm.userTurn()
	return nil
}

// userTurn counts a user message: a new turn begins, and the turn before
// it, if it made calls, ends.
func (r *rhythm) userTurn() {
	if r.shape.Current > 0 {
		r.shape.Turns++
		r.shape.TurnCalls += r.shape.Current
		r.shape.Current = 0
	}
	r.newTurn = true
}

// Note appends a context note, a one-line user-side text such as
// "[context] …", to the stream, its prefix as the session's rendering
// writes ctxstore's lines (rendering.note).
func (a *Assembler) Note(ctx context.Context, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.push(&item{kind: kNote, text: a.style.r.note(text)})
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
// holding the call's line (its status and size, as the session's rendering
// writes it) or, in a rendering with live outputs, the output itself while
// the toolcall is active. Then whatever the call changed follows in the
// stream: metadata entries for the objects it discovered, notes for what
// collapsed, and content blocks for what it activated (its own output when
// the toolcall is active, the file of a read). When the last assistant
// message made several calls, these follow the last of their results, since
// providers require a message's tool results to come together.
func (a *Assembler) ToolResult(ctx context.Context, r tools.Result) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.toolResult(ctx, r, nil)
}

// ToolResultSent is ToolResult for a result the harness has already sent
// the model itself, its output's text as sent (OpenClaw sends the turn's
// tool results after the context it is given). In a rendering that keeps
// what was sent (rendering 6, userfirst.go; stream layout), a result whose
// form as sent differs from ctxstore's renders as sent, so the turn's
// bytes come back unchanged, until a rebase that rewrites it gives it
// ctxstore's form; what it holds beyond that form counts as stale, for the
// cost model to weigh. What the call changed (a read's metadata line and
// content block, say) is then shown by the next sync, at the call, not
// between the result and the turn's next message, which the harness sent
// right after it. In any other rendering sent is ignored.
func (a *Assembler) ToolResultSent(ctx context.Context, r tools.Result, sent string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.toolResult(ctx, r, &sent)
}

// toolResult appends a tool result (ToolResult), rendered as sent when
// sent is not nil and the session's rules keep it.
func (a *Assembler) toolResult(ctx context.Context, r tools.Result, sent *string) error {
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
		if r.Change != "" && a.style.rules.namesWrites() {
			// The files a write or edit pools need no metadata line: the
			// call's path names them, and activate and read take a path.
			for _, f := range r.Files {
				if !a.listed[f] {
					a.listed[f] = true
					it.named = append(it.named, f)
				}
			}
		}
		if r.Change != "" && len(r.Files) == 1 && a.style.rules.namesWrites() {
			if _, ok := a.shown[r.Files[0]]; ok {
				a.edits[r.Files[0]] = append(a.edits[r.Files[0]], pendingEdit{call: r.ID, change: r.Change})
			}
		}
	}
	// A live output is rendered in its own tool result, not as a content
	// block after the results.
	if a.style.rules.inlineOutputs() && r.Object.Content != nil && a.s.IsActive(r.ID) {
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
				a.paging.spillOut(a.style.spill, it)
			}
		}
	}
	a.wholeOnActivate(r.Object)
	keep := sent != nil && a.o.Layout == LayoutStream && a.style.rules.keepsSent()
	if keep {
		it.style = a.style
		it.render()
		if b := it.f.blocks; len(b) != 1 || b[0].Type != BlockText || b[0].Text != *sent {
			it.sent, it.text, it.f = true, *sent, nil
		}
	}
	a.push(it)
	delete(a.pending, r.ID)
	if len(a.pending) > 0 {
		return nil // providers want all results of a message together
	}
	if keep {
		// The harness sent the turn's next messages right after this
		// result: what the call changed is shown by the next sync, at the
		// call, after the turn's messages.
		return nil
	}
	return a.sync(ctx, false)
}

// SetRelease turns Options.Release on or off from the next call on
// (what was released stays in the commits only).
func (a *Assembler) SetRelease(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.o.Release = on
}
