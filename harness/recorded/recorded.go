// Package recorded derives the model calls of a recorded session (a
// transcript imported or captured as context commits: Claude Code, Pi,
// SWE-agent) from its commits' events: one call per model request, with
// the usage the harness recorded, the request rebuilt as the harness sent
// it (or, where Claude Code recorded it in api-request records, as
// recorded), and why the prompt cache broke against the previous request
// of the same conversation (docs/inspector.md, "Recorded sessions").
//
// What is derived is stored once per import (Update, called by
// harness/importer after each file), so that the inspector's pages read
// documents instead of decoding the transcript: a document per call
// ("recorded_call") and one per session ("recorded_calls") saying which
// commits it was derived from. The session's prompts and answers are
// written as its chat (session.PutRecordedChat), so full-text search and
// query_session find them. Update derives only the commits the last
// Update did not read, going on from the state it stored (a resume
// document), a page of commits at a time (stream.go, update.go). Calls
// gives the stored calls, or derives them in memory (Derive) when the
// store holds none or stale ones (a store imported into before calls were
// derived); Request rebuilds one call's bytes.
//
// Calls are numbered from 1 in the order the harness made them. A Claude
// Code call is one API response (message id); sub-agent (sidechain)
// conversations are lanes of their own, each with its own previous call.
// A Pi call is one assistant message, a SWE-agent call one history step.
package recorded

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// BranchTag marks commits that repeat lines of their session's file chain
// (an import's sub-agent and abandoned-branch views): read once, through
// the file chain (explain/stats agrees).
const BranchTag = "branch"

// Version is the version of the derivation: stored calls of another
// version are derived again.
const Version = 2

// The causes of a recorded cache break (Call.Cause).
const (
	CauseNone     = "none"
	CauseFirst    = "first"
	CauseExpired  = "expired"
	CauseSystem   = "system_prompt"
	CauseTools    = "tools"
	CauseShape    = "system_or_tools" // the system-and-tools shape hash changed
	CauseChanged  = "message_changed"
	CauseCompact  = "compaction"
	CauseModel    = "model_switch"
	CauseUncached = "uncached" // the call neither read nor wrote the cache
	CauseReported = "reported" // a cache_miss_reason ctxstore does not map
	CauseUnknown  = "unknown"  // the cache missed; nothing recorded says why
)

// Call is one model request of a recorded session.
type Call struct {
	N int `json:"call"`
	// Lane is the conversation: "" for the main thread, else the
	// sub-agent's id (or its first record's id).
	Lane      string    `json:"lane,omitempty"`
	MessageID string    `json:"message_id,omitempty"`
	RequestID string    `json:"request_id,omitempty"`
	Model     string    `json:"model,omitempty"`
	Time      time.Time `json:"time"`
	// Usage is what the harness recorded (nil: none recorded; the tokens
	// are then estimated from the request's bytes).
	Usage *conversation.Usage `json:"usage,omitempty"`
	// Messages is how many messages the request sent; Bytes the size of
	// the request's messages (and system prompt when known) as rebuilt;
	// Exact says the request came from an api-request record.
	Messages int  `json:"messages"`
	Bytes    int  `json:"bytes"`
	Exact    bool `json:"exact,omitempty"`
	// PrefixMessages and PrefixBytes are the part shared with the previous
	// call of the lane (-1 for the first call of a lane).
	PrefixMessages int `json:"prefix_messages"`
	PrefixBytes    int `json:"prefix_bytes"`
	// Prev is the previous call of the lane (0: none).
	Prev int `json:"prev,omitempty"`
	// GapSeconds is the time since the previous call of the lane.
	GapSeconds float64 `json:"gap_seconds"`
	// Cause is why the cache broke (CauseNone: it did not); MissReason
	// the cache_miss_reason the provider reported, when recorded; Detail
	// says it in words; RewrittenTokens are tokens the previous call had
	// cached that this one wrote (or sent uncached) again.
	Cause           string `json:"cause"`
	MissReason      string `json:"miss_reason,omitempty"`
	Detail          string `json:"detail,omitempty"`
	RewrittenTokens int    `json:"rewritten_tokens"`
	// Shape is the system-and-tools shape hash an api-request recorded.
	Shape string `json:"shape,omitempty"`
	// Depth is the depth of the commit that holds the call's first event
	// (-1: not known, a call stored before it was recorded): its request
	// is rebuilt from the commits up to it (RequestOf).
	Depth int64 `json:"-"`

	first int      // index of the call's first event
	msgs  []string // digests of the request's messages (until the next call of its lane)
	ends  []int    // where each message ends in the request's bytes
	link  link     // the request against the previous call's of its lane
}

// Sent is the input tokens the call sent: recorded, else estimated from
// its bytes (4 bytes a token).
func (c Call) Sent() int {
	if c.Usage != nil {
		return int(c.Usage.Sent())
	}
	return c.Bytes / 4
}

// Derived is what Derive found in a session.
type Derived struct {
	Session string
	Calls   []Call
	// Commits is the number of commits read (Read compares it with the
	// chain to know whether stored calls are current).
	Commits int
	Tip     string
	// Turns are the session's prompts with the answers that followed, as
	// chat turns for search.
	Turns []Turn
	// Title is the harness's own title of the session (its last title
	// record: Claude Code's ai-title, custom-title, summary); Prompt the
	// first prompt a person (or, in a sub-agent's lane, its parent) wrote.
	Title  string
	Prompt string

	evs      []events.Event
	depths   []int64                // the depth of each event's commit
	assume   *shape                 // the whole session's shape, when a prefix is derived
	only     int                    // the one call whose request is wanted (0: every call's)
	main     bool                   // the session has a main thread
	requests map[string]*apiRequest // request id -> recorded request
	blobs    map[string]json.RawMessage
	reqOf    map[string]string // message id -> request id
	parented bool
	laneOf   []string
	render   *renderer
	byID     map[string][]int
}

// Turn is one prompt of a person (or a sub-agent's task) and the text of
// the answers that followed it.
type Turn struct {
	User      string
	Assistant []string
}

// commitsOf lists the commits of sid whose events count: the file chain,
// parents first; snapshots, compactions (their summary is in the events)
// and branch views are left out.
func commitsOf(ctx context.Context, svc *commits.Service, sid string) (use []*commits.Commit, all int, tip string, err error) {
	cs, err := svc.ListCommits(ctx, []string{sid})
	if err != nil {
		return nil, 0, "", err
	}
	for _, c := range cs {
		if c.Session != sid {
			continue
		}
		all++
		tip = c.ID
		if c.SnapshotOf != "" || (c.Type == commits.Snapshot && c.Parent != "") || c.Type == commits.Compaction ||
			slices.Contains(c.Tags, BranchTag) {
			continue
		}
		use = append(use, c)
	}
	return use, all, tip, nil
}

// Derive reads session sid's commits with svc (whose registry decodes
// them) and derives its calls, their cache attribution and its turns. A
// session without commits has no calls.
func Derive(ctx context.Context, svc *commits.Service, sid string) (*Derived, error) {
	cs, all, tip, err := commitsOf(ctx, svc, sid)
	if err != nil {
		return nil, err
	}
	return deriveCommits(ctx, svc, sid, cs, all, tip, nil, 0)
}

// deriveCommits is Derive of commits cs (the session's whose events
// count, in order); assume, when set, gives the shape of the whole
// session (cs then being the commits up to one call's); only, when not 0,
// is the one call whose request and figures are wanted (the others are
// numbered, neither measured nor attributed, and no turns are kept).
func deriveCommits(ctx context.Context, svc *commits.Service, sid string, cs []*commits.Commit, all int, tip string, assume *shape, only int) (*Derived, error) {
	d := &Derived{Session: sid, Commits: all, Tip: tip, assume: assume, only: only}
	hasRequests := false
	var ccContents [][]byte
	for _, c := range cs {
		f, ok := svc.Registry().Lookup(c.Format)
		if !ok || f.Decode == nil {
			continue
		}
		b, err := svc.Content(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", sid, err)
		}
		evs, err := f.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("session %s: commit %s (%s): %w", sid, c.ID, c.Format, err)
		}
		for _, e := range evs {
			if e.Time.IsZero() {
				e.Time = c.Created
			}
			if e.Type == events.Output && e.Subtype == "api-request" {
				hasRequests = true
			}
			d.evs = append(d.evs, e)
			d.depths = append(d.depths, c.Depth)
		}
		if c.Format == commits.FormatClaudeCode {
			ccContents = append(ccContents, b)
		}
	}
	if hasRequests {
		d.readRequests(ccContents)
	}
	d.mainThread()
	d.derive()
	return d, nil
}

// mainThread drops the sidechain events of a session that has a main
// thread: a sub-agent's records are imported as a lane of their own (a
// session "{session}/agent-…") and its calls count there. A lane's
// events are all sidechain, and stay.
func (d *Derived) mainThread() {
	main := false
	for _, e := range d.evs {
		if sc, _ := e.Metadata["sidechain"].(bool); !sc && assistantEvent(e) {
			main = true
			break
		}
	}
	if d.assume != nil {
		main = d.assume.Main
	}
	d.main = main
	if !main {
		return
	}
	kept, depths := d.evs[:0], d.depths[:0]
	for i, e := range d.evs {
		if sc, _ := e.Metadata["sidechain"].(bool); !sc {
			kept = append(kept, e)
			depths = append(depths, d.depths[i])
		}
	}
	d.evs, d.depths = kept, depths
}

// derive finds the calls and turns in d.evs.
func (d *Derived) derive() {
	evs := d.evs
	withParent, withID := 0, 0
	for _, e := range evs {
		if e.ID != "" {
			withID++
			if e.ParentID != "" {
				withParent++
			}
		}
	}
	// A harness that keeps a tree (Claude Code, Pi v2+) sends the path
	// from a record to its root; one that does not sends its file order.
	d.parented = withID > len(evs)/2 && withParent > withID/2
	if d.assume != nil {
		d.parented = d.assume.Parented
	}
	lanes := d.lanes()
	d.laneOf = lanes
	byID := map[string][]int{}
	for i, e := range evs {
		if e.ID != "" {
			byID[e.ID] = append(byID[e.ID], i)
		}
	}
	d.byID = byID
	r := newRenderer(evs)
	d.render = r
	seen := map[string]bool{}
	last := map[string]int{} // lane -> index in d.Calls of its last call
	prevAssistant := -1
	for i, e := range evs {
		if !assistantEvent(e) {
			if e.Type != events.Output {
				prevAssistant = -1
			}
			continue
		}
		if e.Model == "<synthetic>" {
			continue
		}
		var c *Call
		if e.MessageID != "" && seen[e.MessageID] {
			c = d.callOf(e.MessageID)
		} else if e.MessageID == "" && prevAssistant >= 0 && e.Usage == nil {
			// The rest of a message without an id (its usage is on its
			// first event).
			c = &d.Calls[prevAssistant]
		}
		if c == nil {
			seen[e.MessageID] = e.MessageID != ""
			nc := Call{N: len(d.Calls) + 1, Lane: lanes[i], MessageID: e.MessageID, Model: e.Model, Time: e.Time, first: i, PrefixMessages: -1, PrefixBytes: -1,
				Depth: d.depths[i]}
			nc.RequestID = d.reqOf[e.MessageID]
			// Another call than the one wanted (d.only) is numbered, its
			// request not walked (each walk reads the events before it).
			wanted := d.only == 0 || nc.N == d.only
			if wanted {
				nc.msgs, nc.ends, nc.Bytes = r.digest(d.context(byID, i))
				nc.Messages = len(nc.msgs)
			}
			if q := d.requests[nc.RequestID]; q != nil && nc.RequestID != "" && wanted {
				// The recorded request: its messages are its blobs.
				body, spans := exactBody(q, d.blobs, nc.Model)
				nc.Exact, nc.Shape, nc.Bytes = true, q.Shape, len(body)
				nc.msgs, nc.ends = recordedDigests(q, spans)
				if q.Model != "" && nc.Model == "" {
					nc.Model = q.Model
				}
			}
			if p, ok := last[nc.Lane]; ok {
				// Compared with the previous call of its lane now, whose
				// digests no later call needs: a session's calls do not
				// all hold theirs.
				pc := &d.Calls[p]
				nc.Prev, nc.link = pc.N, compare(nc.msgs, nc.ends, pc.msgs)
				pc.msgs, pc.ends = nil, nil
			}
			d.Calls = append(d.Calls, nc)
			last[nc.Lane] = len(d.Calls) - 1
			c = &d.Calls[len(d.Calls)-1]
		}
		prevAssistant = c.N - 1
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
	}
	if d.only != 0 {
		return // the wanted call's figures are the stored ones
	}
	for i := range d.Calls {
		d.attribute(i)
	}
	d.turns()
}

// callOf returns the call of message id (searching from the newest).
func (d *Derived) callOf(id string) *Call {
	for i := len(d.Calls) - 1; i >= 0; i-- {
		if d.Calls[i].MessageID == id {
			return &d.Calls[i]
		}
	}
	return nil
}

// assistantEvent tells whether e is part of a model's answer.
func assistantEvent(e events.Event) bool {
	switch e.Type {
	case events.Response, events.Thinking, events.ToolCall:
		return e.Source == "assistant" || e.Source == ""
	}
	return false
}

// lanes gives each event its conversation: "" for the main thread; a
// sidechain's agent id, else the id of the first record of its chain.
func (d *Derived) lanes() []string {
	evs := d.evs
	out := make([]string, len(evs))
	parent := map[string]string{}
	side := map[string]bool{}
	for _, e := range evs {
		if sc, _ := e.Metadata["sidechain"].(bool); sc && e.ID != "" {
			side[e.ID] = true
			parent[e.ID] = e.ParentID
		}
	}
	root := map[string]string{}
	var find func(id string, depth int) string
	find = func(id string, depth int) string {
		if r, ok := root[id]; ok {
			return r
		}
		r := id
		if p := parent[id]; p != "" && side[p] && depth < 100000 {
			r = find(p, depth+1)
		}
		root[id] = r
		return r
	}
	for i, e := range evs {
		sc, _ := e.Metadata["sidechain"].(bool)
		if !sc {
			continue
		}
		if a, _ := e.Metadata["agent_id"].(string); a != "" {
			out[i] = "agent-" + a
			continue
		}
		if e.ID != "" {
			out[i] = "side-" + short(find(e.ID, 0))
		} else {
			out[i] = "side"
		}
	}
	return out
}

func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

// context returns the indexes of the events call event i was sent with.
func (d *Derived) context(byID map[string][]int, i int) []int {
	if d.parented && d.evs[i].ParentID != "" {
		return d.path(byID, i)
	}
	return d.fileOrder(d.laneOf, i)
}

// path returns the indexes of the events on the path from the root to
// the record before event i (the request's context), in order: a
// compaction summary or boundary ends the walk (what came before it is
// not sent).
func (d *Derived) path(byID map[string][]int, i int) []int {
	var recs [][]int
	seen := map[string]bool{}
	id := d.evs[i].ParentID
	for id != "" && !seen[id] {
		seen[id] = true
		idx := byID[id]
		if len(idx) == 0 {
			break
		}
		recs = append(recs, idx)
		stop := false
		for _, k := range idx {
			if e := d.evs[k]; e.Type == events.System && (e.Subtype == events.SubtypeCompactionSummary || e.Subtype == events.SubtypeCompactBoundary) {
				stop = true
			}
		}
		if stop {
			break
		}
		id = d.evs[idx[0]].ParentID
	}
	var out []int
	for k := len(recs) - 1; k >= 0; k-- {
		out = append(out, recs[k]...)
	}
	// The events of the call's own message before i (none: i is its
	// first) are not context.
	return out
}

// fileOrder returns the indexes of the events of event i's lane before
// it, from the last compaction on.
func (d *Derived) fileOrder(lanes []string, i int) []int {
	var out []int
	for k := 0; k < i; k++ {
		if lanes[k] != lanes[i] {
			continue
		}
		e := d.evs[k]
		if e.Type == events.System && (e.Subtype == events.SubtypeCompactionSummary || e.Subtype == events.SubtypeCompactBoundary) {
			out = out[:0]
		}
		out = append(out, k)
	}
	return out
}

// compactedBetween tells whether a compaction happened in lane between
// events a and b.
func (d *Derived) compactedBetween(lane string, lanes []string, a, b int) bool {
	for k := a; k < b && k < len(d.evs); k++ {
		e := d.evs[k]
		if lanes[k] == lane && e.Type == events.System && (e.Subtype == events.SubtypeCompactionSummary || e.Subtype == events.SubtypeCompactBoundary) {
			return true
		}
	}
	return false
}

// turns collects the prompts and answers of the session for search.
func (d *Derived) turns() {
	var cur *Turn
	for _, e := range d.evs {
		if e.Type == events.System && e.Subtype == "title" && strings.TrimSpace(e.Text) != "" {
			d.Title = strings.TrimSpace(e.Text)
		}
		if e.Type == events.Prompt && (e.Source == "user" || e.Source == "agent") && d.Prompt == "" {
			d.Prompt = strings.TrimSpace(e.Text)
		}
		switch {
		case e.Type == events.Prompt && (e.Source == "user" || e.Source == "agent") && strings.TrimSpace(e.Text) != "":
			d.Turns = append(d.Turns, Turn{User: e.Text})
			cur = &d.Turns[len(d.Turns)-1]
		case e.Type == events.Response && cur != nil && strings.TrimSpace(e.Text) != "":
			cur.Assistant = append(cur.Assistant, e.Text)
		}
	}
}
