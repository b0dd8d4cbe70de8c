package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/context/runtime"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// ManagementTools are the context-management tools ctxstore offers the
// model besides the harness's own (whose definitions are part of the
// calibrated overhead): their definitions are rendered in the head of the
// ctxstore strategies' contexts and counted in their context tokens, not in
// their history. They are the live service's (tools.Management, defined
// once).
var ManagementTools = managementTools()

func managementTools() []assemble.ToolSpec {
	var out []assemble.ToolSpec
	for _, d := range tools.Management() {
		out = append(out, assemble.ToolSpec{Name: d.Name, Description: d.Description, Parameters: d.Parameters})
	}
	return out
}

// Ctxstore replays the session through the real ctxstore code: a store
// (Env.Store, or one Env.OpenStore opens in the strategy's directory) and
// a new session opened by context/runtime, as the service opens one: its
// tools, its assembler with the layout, and its ingester (with
// ingest.Mirror, so the files the session touched exist with the contents
// its tool calls showed). Each call ingests what is new in
// the log and assembles the next context (Ingester.Context); the bytes are
// assemble.Assembled.Bytes. The assembler's clock is the call's time, so
// its cost model sees the session's real idle gaps, and its window is the
// model's window less the calibrated overhead, in the tokenizer's units.
type Ctxstore struct {
	// Layout is assemble.LayoutStream or assemble.LayoutLiteral.
	Layout assemble.Layout
	// Policy is the assembler's cost model; zero fields are defaults, and
	// CacheTTL and Window come from the replay when zero.
	Policy assemble.Policy
	// Label overrides the name.
	Label string
	// LeanHead starts every session with a lean head (assemble.LeanHead):
	// the guide and the management tools offered from the first call
	// whose context has something to manage, as the service does for a
	// harness that asks for it (OpenRequest.LeanHead). Otherwise they are
	// offered from the first call, as the service does by default. The
	// literal layout's head is always fixed.
	LeanHead bool
	// BareHead keeps that lean head for the whole session
	// (assemble.LeanHead.Bare): the guide and the management tools are
	// never offered; one note at the first collapse, and each preview,
	// name the spill files for the harness's own read, in
	// bareSpillRoot/<session id> as the service names them by default
	// (its user's cache directory). Implies LeanHead.
	BareHead bool
	// Render is the rendering version of the sessions (assemble.Options.Render;
	// 0 is the current one).
	Render int

	env     *Env
	st      store.Store
	closeSt func() error
	tools   *tools.Tools
	in      *ingest.Ingester
	asm     *assemble.Assembler
	now     time.Time
	headLen int
	reasons map[string]int
	probs   int
	first   string
	skipped map[string]int
	resets  int
	last    *assemble.Assembled
	comp    composition
	callIDs map[string]bool
	// suffix, on a store the caller shares (Env.Store), is appended to
	// every tool call id: a store holds each toolcall id once, for the
	// session that recorded it, and the strategies replay the
	// same calls. msgs are the session's messages so renamed.
	suffix string
	msgs   []conversation.Message
	// sent is the log the previous call gave the ingester.
	sent []conversation.Message
}

// lean is the strategy's lean head: nil for a fixed one.
func (c *Ctxstore) lean() *assemble.LeanHead {
	if !(c.LeanHead || c.BareHead) || c.Layout == assemble.LayoutLiteral {
		return nil
	}
	lh := &assemble.LeanHead{Guide: tools.Guide}
	for _, t := range ManagementTools {
		lh.Withheld = append(lh.Withheld, t.Name)
	}
	if c.BareHead {
		lh.Bare, lh.Spill = true, tools.SpillDir(bareSpillRoot, c.env.Session.ID)
	}
	return lh
}

// cwd is the session's working directory as the replay gives it to the
// ingester: the recorded one, or /replay when it is not absolute.
func (c *Ctxstore) cwd() string {
	if cwd := c.env.Session.Cwd; cwd != "" && filepath.IsAbs(cwd) {
		return cwd
	}
	return "/replay"
}

// prompt is the session's system prompt object: the guide, in a fixed
// head (a lean head adds it once managed).
func (c *Ctxstore) prompt() string {
	if c.lean() == nil {
		return tools.Guide
	}
	return ""
}

// callID is a tool call id as this run records it.
func (c *Ctxstore) callID(id string) string { return id + c.suffix }

// bareSpillRoot stands for the service's default spill root (serve
// --spill-dir: ctxstore/spill in the user's cache directory) on the
// recorded machine, whose home the transcript does not give: the bare
// head's note names it once per session, so only its length matters.
const bareSpillRoot = "/home/user/.cache/ctxstore/spill"

// Name returns "ctxstore_stream" or "ctxstore_literal".
func (c *Ctxstore) Name() string {
	if c.Label != "" {
		return c.Label
	}
	l := c.Layout
	if l == "" {
		l = assemble.LayoutStream
	}
	return "ctxstore_" + string(l)
}

// Begin creates the store, the session and its ingester.
func (c *Ctxstore) Begin(ctx context.Context, env *Env) error {
	c.env, c.reasons, c.skipped, c.probs, c.first, c.resets, c.headLen, c.last = env, map[string]int{}, map[string]int{}, 0, "", 0, -1, nil
	c.comp, c.callIDs = composition{}, map[string]bool{}
	c.suffix, c.msgs, c.sent = "", nil, nil
	if env.Store != nil {
		sum := sha256.Sum256([]byte(env.SessionID))
		c.suffix = "-" + hex.EncodeToString(sum[:4])
		c.msgs = make([]conversation.Message, len(env.Session.Messages))
		for i, m := range env.Session.Messages {
			if m.ToolCallID != "" {
				m.ToolCallID = c.callID(m.ToolCallID)
			}
			if len(m.ToolCalls) > 0 {
				m.ToolCalls = slices.Clone(m.ToolCalls)
				for k := range m.ToolCalls {
					m.ToolCalls[k].ID = c.callID(m.ToolCalls[k].ID)
				}
			}
			c.msgs[i] = m
		}
	}
	for _, m := range env.Session.Messages {
		for _, tc := range m.ToolCalls {
			c.callIDs[c.callID(tc.ID)] = true
		}
	}
	c.st, c.closeSt = env.Store, func() error { return nil }
	if c.st == nil {
		if env.OpenStore == nil {
			return fmt.Errorf("%s: no store: give Options.Store or Options.OpenStore", c.Name())
		}
		st, err := env.OpenStore(ctx, env.Dir)
		if err != nil {
			return fmt.Errorf("%s: opening the store: %w", c.Name(), err)
		}
		c.st, c.closeSt = st, st.Close
	}
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "replay-" + env.SessionID})
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name(), err)
	}
	pol := c.Policy
	if pol.CacheTTL == 0 {
		pol.CacheTTL = env.TTL
	}
	if pol.HeadTTL == 0 {
		pol.HeadTTL = env.HeadTTL
		if pol.HeadTTL <= pol.CacheTTL {
			pol.HeadTTL = -1 // the head lives the TTL
		}
	}
	if pol.Breakpoints == "" {
		// Where the harness asks the provider to cache decides what a
		// rebase rewrites: Claude Code only at the end of each request (an
		// MCP server cannot move it), ctxstore's Pi extension at the end of
		// the stable messages (docs/replay.md).
		switch env.Session.Format {
		case transcript.FormatClaudeCode:
			pol.Breakpoints = assemble.BreakpointsEnd
		case transcript.FormatPi:
			pol.Breakpoints = assemble.BreakpointsStable
		}
	}
	if pol.Window == 0 {
		cal := env.Calibration
		pol.Window = int(float64(env.Window-cal.Overhead) / cal.Scale)
	}
	if pol.HeadOverhead == 0 {
		pol.HeadOverhead = int(float64(env.Calibration.Overhead) / env.Calibration.Scale)
	}
	c.now = time.Time{}
	cwd := c.cwd()
	rt, err := runtime.Open(ctx, c.st, env.SessionID, runtime.Options{
		Mode: runtime.CreateOnly,
		// The calibrated overhead is the harness's own system prompt and
		// tools; the guide the service appends and the management tools
		// are ctxstore's head, counted here (LeanHead: only from the first
		// call with something to manage).
		Create:  session.CreateOptions{Harness: string(env.Session.Format), SystemPrompt: c.prompt()},
		Indexer: files.NewIndexer(c.st, res, 0),
		Assemble: assemble.Options{
			Layout: c.Layout, Tools: ManagementTools, Policy: pol, Tokenizer: env.Counter.Tokenizer(),
			Lean: c.lean(), Render: c.Render,
			Now: func() time.Time { return c.now },
		},
		Ingest: ingest.Options{Cwd: cwd, Files: ingest.Mirror(filepath.Join(env.Dir, "files"))},
	})
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name(), err)
	}
	c.tools, c.in, c.asm = rt.Tools, rt.Ingester, rt.Assembler
	return nil
}

// Step ingests the log up to the call and assembles the call's context.
func (c *Ctxstore) Step(ctx context.Context, in *CallInput) (*Step, error) {
	c.now = in.Time
	if !in.Renewed.IsZero() {
		c.asm.Renewed(in.Renewed)
	}
	msgs := in.Messages
	if c.msgs != nil && len(msgs) <= len(c.msgs) {
		msgs = c.msgs[:len(msgs):len(msgs)]
	}
	// The calls' logs are prefixes of one slice of the session's
	// messages: a log that begins where the previous one did holds it
	// unchanged, and the ingester checks only what follows (ContextSince),
	// not the whole log again at each call.
	same := 0
	if len(c.sent) > 0 && len(msgs) >= len(c.sent) && &msgs[0] == &c.sent[0] {
		same = len(c.sent)
	}
	a, rep, err := c.in.ContextSince(ctx, msgs, same, nil)
	c.sent = msgs
	if err != nil {
		return nil, fmt.Errorf("%s: call %d: %w", c.Name(), in.N, err)
	}
	c.last = a
	c.comp.addAssembled(c.env.Counter, a, c.callIDs)
	c.probs += len(rep.Problems)
	if c.first == "" && len(rep.Problems) > 0 {
		c.first = fmt.Sprintf("call %d: %s", in.N, rep.Problems[0])
	}
	for k, v := range rep.Skipped {
		c.skipped[k] += v
	}
	if rep.Reset {
		c.resets++
	}
	if c.headLen < 0 || a.HeadChanged {
		c.headLen = headLength(a.Bytes)
	}
	st := &Step{Bytes: a.Bytes, HeadLen: c.headLen}
	if c.env.Placement == PlacementPi {
		// ctxstore's Pi extension places the breakpoints, and asks for the
		// head lifetime the call names (Assembled.HeadTTL: the run's,
		// Env.HeadTTL, once the session has paused) on the head's.
		st.Breakpoints = piBreakpoints(a.Bytes, c.headLen, a.Stable)
		st.HeadTTL = a.HeadTTL
	}
	// A call after the cache expired rebases: stale content is not
	// written again (what a warm request would save).
	st.Stale = a.StaleTokens
	if a.Rebased {
		c.reasons[a.Reason]++
		st.Reason = "rebase: " + a.Reason
	}
	state := c.tools.Session().State()
	active := make(map[string]bool, len(state.Active))
	for _, id := range state.Active {
		active[id] = true
	}
	pool := make(map[string]bool, len(state.Pool))
	for _, id := range state.Pool {
		pool[id] = true
	}
	shows := func(id string) []string { return c.shows(ctx, c.callID(id)) }
	st.Hidden = func(id string) bool {
		for _, o := range shows(id) {
			// An output entered as a preview is not whole in the context:
			// asking for it again is a fault of demand paging.
			if _, part := c.asm.Previews(o); active[o] && !part {
				return false
			}
		}
		return true
	}
	st.Reachable = func(id string) bool {
		for _, o := range shows(id) {
			if pool[o] && c.resolves(ctx, o) {
				return true
			}
		}
		return false
	}
	return st, nil
}

// shows returns the objects that hold a tool call's output: the files a
// read loaded (its toolcall's file_refs), else the toolcall itself.
func (c *Ctxstore) shows(ctx context.Context, id string) []string {
	o, _, err := expand.Resolve(ctx, c.st, objects.DynamicRef(id))
	if err != nil || o.Kind() != objects.KindToolcall {
		return []string{id}
	}
	if ingest.DefaultTools[strings.ToLower(o.Toolcall.Tool)] == ingest.KindRead && len(o.Toolcall.FileRefs) > 0 {
		return o.Toolcall.FileRefs
	}
	return []string{id}
}

func (c *Ctxstore) resolves(ctx context.Context, id string) bool {
	_, _, err := expand.Resolve(ctx, c.st, objects.DynamicRef(id))
	return err == nil
}

// End checks that every tool call of the session is reachable (its object
// resolves and is in the pool) and closes the store.
func (c *Ctxstore) End(ctx context.Context) ([]string, error) {
	defer func() {
		c.tools, c.in, c.last, c.asm = nil, nil, nil, nil
	}()
	var notes []string
	if len(c.reasons) > 0 {
		var rs []string
		for r, n := range c.reasons {
			rs = append(rs, fmt.Sprintf("%s %d", r, n))
		}
		sort.Strings(rs)
		notes = append(notes, "rebases by reason: "+strings.Join(rs, ", "))
	}
	if c.tools != nil {
		state := c.tools.Session().State()
		pool := map[string]bool{}
		for _, id := range state.Pool {
			pool[id] = true
		}
		missing, calls := 0, 0
		for _, tc := range state.Toolcalls {
			calls++
			if !pool[tc.ID] || !c.resolves(ctx, tc.ID) {
				missing++
			}
		}
		notes = append(notes, fmt.Sprintf("reachability: %d of %d recorded tool calls are in the pool and resolve in the store", calls-missing, calls))
		if c.last != nil {
			notes = append(notes, fmt.Sprintf("last context: %d pool objects, %d active", len(state.Pool), len(state.Active)))
		}
	}
	if c.asm != nil {
		if n, _ := c.asm.Previews(""); n > 0 {
			notes = append(notes, fmt.Sprintf("demand paging: %d outputs entered as a preview (their start and end); a later call asking for one again counts in reneeded", n))
		}
	}
	if note := c.comp.note(); note != "" {
		notes = append(notes, note)
	}
	if c.probs > 0 {
		notes = append(notes, fmt.Sprintf("ingestion reported %d problems; the first at %s", c.probs, c.first))
	}
	if len(c.skipped) > 0 {
		notes = append(notes, fmt.Sprintf("ingestion skipped %v", c.skipped))
	}
	if c.resets > 0 {
		notes = append(notes, fmt.Sprintf("ingestion: the log was replaced %d times (should not happen in a replay)", c.resets))
	}
	err := c.closeSt()
	c.st = nil
	return notes, err
}

// piBreakpoints places the breakpoints as ctxstore's Pi extension does
// (integrations/pi, placeBreakpoints): the system prompt and tools, the end
// of the first stable messages (Assembled.Stable) when there are any, and
// the end of the context. Offsets into b (Step.Breakpoints).
func piBreakpoints(b []byte, headLen, stable int) []int {
	out := []int{headLen}
	if stable > 0 {
		k := 0
		for i := max(headLen-1, 0); i < len(b); {
			j := bytes.Index(b[i:], []byte("\n<<"))
			if j < 0 {
				break
			}
			p := i + j + 1
			if role, starts := blockRole(b[p:]); starts && role != 0 {
				if k == stable {
					out = append(out, p)
					break
				}
				k++
			}
			i = p
		}
	}
	return append(out, len(b))
}

// headLength returns the length of the head of an assembled context: the
// system prompt, then "<<tools>>" and one line per tool, up to the first
// line starting with "<<" after it.
func headLength(b []byte) int {
	i := bytes.Index(b, []byte("\n<<tools>>\n"))
	if i < 0 {
		return 0
	}
	p := i + len("\n<<tools>>\n")
	for p < len(b) && !bytes.HasPrefix(b[p:], []byte("<<")) {
		j := bytes.IndexByte(b[p:], '\n')
		if j < 0 {
			return len(b)
		}
		p += j + 1
	}
	return p
}
