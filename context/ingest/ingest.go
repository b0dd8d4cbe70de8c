package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// Options configure New.
type Options struct {
	// Cwd resolves relative paths of tool calls and is where bash, find
	// and grep ran; default the process's working directory.
	Cwd string
	// Files reaches the files tool calls name; default Live.
	Files Files
	// Tools maps lowercased harness tool names to kinds; default
	// DefaultTools. Unlisted tools are KindOther.
	Tools map[string]Kind
	// OnUser, if set, sees each new user message before it enters the
	// stream: its notes are appended to the stream just before the message
	// (cache-stable context, such as the summaries of @@ referenced
	// sessions, context/recall), and record, if not nil, is kept in the
	// message's chat turn under key. An error stops the ingestion.
	OnUser func(ctx context.Context, text string) (notes []string, key string, record any, err error)
	// Commits, if set, makes the session write conversation commits
	// (commits.go); each call record then names the commit it rendered.
	Commits *CommitOptions
}

// Report says what one Ingest did.
type Report struct {
	// Applied is how many messages were new and applied.
	Applied int `json:"applied"`
	// Cursor is how many messages of the log are applied in all.
	Cursor int `json:"cursor"`
	// Reset is set when the log no longer began with the messages applied
	// before (replaced, shortened or edited); ResetAt is how many of them
	// it still shares, where the cursor went back to.
	Reset   bool `json:"reset,omitempty"`
	ResetAt int  `json:"reset_at,omitempty"`
	// Known counts the messages not applied because they were applied
	// before on another branch of the log (the harness went back to it).
	Known int `json:"known,omitempty"`
	// Skipped counts the messages not applied, by reason ("role:x" for an
	// unknown role, "empty assistant" for an assistant message with no
	// text and no tool call).
	Skipped map[string]int `json:"skipped,omitempty"`
	// Problems lists tool results whose tool could not be applied as its
	// kind says (a read of a missing file, say); each was recorded as a
	// plain toolcall instead, so nothing was lost.
	Problems []string `json:"problems,omitempty"`
	// Deactivated lists the objects deactivated to keep the context within
	// the model's window (assemble.Policy.Window).
	Deactivated []string `json:"deactivated,omitempty"`
}

// Ingester applies a harness's message log to a session, through its tools
// and assembler. It is safe for concurrent use; calls are serialized.
type Ingester struct {
	mu sync.Mutex
	t  *tools.Tools
	a  *assemble.Assembler
	o  Options

	chain     [][32]byte                       // chain[i]: the node of applied message i in the log's tree (its hash and its prefix's)
	unsaved   []string                         // the hashes of the messages from saved on (what the next cursor records)
	left      map[[32]byte]bool                // the nodes of messages applied on branches of the log the harness left
	saved     int                              // messages recorded in commits
	turnStart int                              // index of the message that began the current turn, -1 before any
	turn      *objects.Turn                    // the chat turn being built
	calls     map[string]conversation.ToolCall // tool calls of the current turn, by id
	pending   map[string]string                // calls waiting for their result: the harness's id -> the session's (own.go)
	cwdSaved  bool                             // the cwd is recorded in a commit of this Ingester
	conv      []convPoint                      // conversation commits of the log, oldest first (commits.go)
	lastLog   Log                              // what Flush and CompactLast may need of the last call's log (from Need on)
	called    bool                             // a context call was made (lastLog is set)
}

// Log is a harness's message log as a caller that does not keep all of it
// gives it: Messages are the log's messages from Start on, and the first
// Start messages are, unchanged, those of the log the previous call was
// given (Start 0: the whole log). A caller that converts the harness's log
// as it grows (the service's Pi converter) need keep only the messages
// from Need on: the ingester never reads one before it again, so what it
// holds does not grow with the session.
type Log struct {
	Start    int
	Messages []conversation.Message
}

// Whole returns the log of msgs, all of it.
func Whole(msgs []conversation.Message) Log { return Log{Messages: msgs} }

// Len is the length of the whole log.
func (l Log) Len() int { return l.Start + len(l.Messages) }

// At returns message i (i >= Start).
func (l Log) At(i int) conversation.Message { return l.Messages[i-l.Start] }

// From returns the messages from i on (i >= Start).
func (l Log) From(i int) []conversation.Message { return l.Messages[i-l.Start:] }

// Range returns the messages i to j-1 (i >= Start).
func (l Log) Range(i, j int) []conversation.Message { return l.Messages[i-l.Start : j-l.Start] }

// Tail returns the part of l from message i on (i >= Start).
func (l Log) Tail(i int) Log { return Log{Start: i, Messages: l.From(i)} }

// ErrLogWindow says that a call needed messages of the log before the
// Start it was given (the caller dropped what the ingester still needed,
// or the conversation commits restart a chain holding the whole log): the
// caller gives the whole log again. Nothing was lost: messages already
// applied are not applied twice.
var ErrLogWindow = errors.New("ingest: the call needs messages before the part of the log it was given")

// Need returns the first message of the log that a later call may read
// again: the turn in progress (its chat turn is rebuilt from its messages
// after a resume or a branch switch) and the messages after the last
// conversation commit (the next commit holds them). A caller giving Log
// windows need keep only the messages from Need on.
func (in *Ingester) Need() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.need()
}

func (in *Ingester) need() int {
	n := len(in.chain)
	if in.turnStart >= 0 {
		n = min(n, in.turnStart)
	}
	if co := in.o.Commits; co != nil && co.Service != nil {
		n = min(n, in.convTip().N)
	}
	return max(n, 0)
}

// New returns the Ingester of the session t and a drive. When a was
// resumed from context commits (assemble.Resume), the cursor recorded with
// them is restored: the messages the harness sent since the last call are
// applied again on the next Ingest, and nothing twice.
func New(ctx context.Context, t *tools.Tools, a *assemble.Assembler, o Options) (*Ingester, error) {
	if o.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("ingest: working directory: %w", err)
		}
		o.Cwd = wd
	}
	if o.Files == nil {
		o.Files = Live{}
	}
	if o.Tools == nil {
		o.Tools = DefaultTools
	}
	in := &Ingester{t: t, a: a, o: o, turnStart: -1}
	if last := a.LastCommit(); last != nil {
		if err := in.restore(ctx, last); err != nil {
			return nil, err
		}
	} else if err := in.forkStart(ctx); err != nil {
		return nil, err
	}
	return in, nil
}

// CwdKey is the member of a commit's harness meta holding the harness's
// working directory, recorded with the first call of each Ingester.
const CwdKey = "cwd"

// cursorKey is the member of a commit's harness meta holding the cursor.
const cursorKey = "ingest"

// cursor is the ingestion position recorded with each context commit:
// the hashes of the messages applied since the previous commit's (From is
// where they start; lower than the previous N after a reset).
type cursor struct {
	N         int      `json:"n"`
	From      int      `json:"from"`
	Hashes    []string `json:"hashes"`
	TurnStart int      `json:"turn_start"`
}

// restore rebuilds the message hashes from the cursors of every commit.
func (in *Ingester) restore(ctx context.Context, last *assemble.Commit) error {
	s := in.t.Session()
	var hs []string
	turnStart := -1
	var prev *assemble.Commit
	for k := 1; k <= last.N; k++ {
		c := last
		if k < last.N {
			var err error
			if c, err = assemble.ReadCommitAfter(ctx, s.Store(), s.ID(), k, prev); err != nil {
				return fmt.Errorf("ingest: restoring the cursor: %w", err)
			}
			prev = c
		}
		in.convRestore(c.Harness[convKey])
		raw, ok := c.Harness[cursorKey]
		if !ok {
			continue
		}
		var cur cursor
		b, _ := json.Marshal(raw)
		if err := json.Unmarshal(b, &cur); err != nil {
			return fmt.Errorf("ingest: restoring the cursor from %s: %w", c.ID, err)
		}
		if cur.From > len(hs) || cur.From+len(cur.Hashes) != cur.N {
			return fmt.Errorf("ingest: restoring the cursor from %s: %d hashes from %d do not reach %d after %d", c.ID, len(cur.Hashes), cur.From, cur.N, len(hs))
		}
		hs = append(hs[:cur.From:cur.From], cur.Hashes...)
		in.leave(cur.From)
		for i := cur.From; i < len(hs); i++ {
			in.push(hs[i])
		}
		turnStart = cur.TurnStart
	}
	in.saved, in.turnStart = len(hs), turnStart
	return nil
}

// leave cuts the chain back to its first k messages: the harness left
// the branch of the rest, whose nodes are remembered (left) so that a
// return to it applies nothing twice.
func (in *Ingester) leave(k int) {
	for _, n := range in.chain[k:] {
		if in.left == nil {
			in.left = map[[32]byte]bool{}
		}
		in.left[n] = true
	}
	in.chain = in.chain[:k]
}

// node returns the tree node of a message with hash h after the messages
// of in.chain.
func (in *Ingester) node(h string) [32]byte { return in.nodeAt(len(in.chain), h) }

// nodeAt returns the tree node of a message with hash h after the first n
// messages of in.chain. A node names its message and every message before
// it: two logs share their first n+1 messages exactly when their nodes n
// are equal.
func (in *Ingester) nodeAt(n int, h string) [32]byte {
	sum := sha256.New()
	if n > 0 {
		sum.Write(in.chain[n-1][:])
	}
	sum.Write([]byte(h))
	var k [32]byte
	sum.Sum(k[:0])
	return k
}

// push extends in.chain with the message of hash h. The chain holds a
// node per applied message, and no hash of a message already recorded in
// a commit: what the ingester keeps per message is 32 bytes.
func (in *Ingester) push(h string) {
	k := in.node(h)
	in.chain = append(in.chain, k)
	delete(in.left, k) // on the chain again
}

// hash identifies a message by its content.
func hash(m conversation.Message) string {
	b, _ := json.Marshal(m)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// Ingest applies the messages of log that are new since the cursor. log is
// the harness's whole log as it is now. If it no longer begins with the
// messages applied before, the cursor goes back to the longest prefix it
// shares with them (Report.Reset), a note says so in the context, and the
// rest is applied as new: what was ingested stays in the store and the
// session, nothing is undone.
func (in *Ingester) Ingest(ctx context.Context, log []conversation.Message) (Report, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.ingest(ctx, log)
}

// Context ingests log and assembles the next model call, recording the
// cursor in the call's context commit.
func (in *Ingester) Context(ctx context.Context, log []conversation.Message) (*assemble.Assembled, Report, error) {
	return in.ContextWith(ctx, log, nil)
}

// eventsKey is the member of a commit's harness meta holding the harness
// events given to ContextWith.
const eventsKey = "events"

// ContextWith is Context, and records events (what the harness did to its
// session since the previous call: a fork, a tree navigation, a
// compaction; plain JSON objects, each with a "type") with the context
// commit, in its harness meta under "events" (assemble.Commit.Harness).
func (in *Ingester) ContextWith(ctx context.Context, log []conversation.Message, events []map[string]any) (*assemble.Assembled, Report, error) {
	return in.ContextSince(ctx, log, 0, events)
}

// ContextSince is ContextWith for a caller that knows the first same
// messages of log are, unchanged, the first same messages of the log it
// gave the previous call (a harness that sends its log as a delta: the
// server's copy grows by appending). The ingester then checks only the
// rest against what it applied, so a call's work does not grow with the
// log; same = 0 checks every message. A same beyond what the
// ingester applied counts as what it applied.
func (in *Ingester) ContextSince(ctx context.Context, log []conversation.Message, same int, events []map[string]any) (*assemble.Assembled, Report, error) {
	return in.ContextLog(ctx, Whole(log), same, events)
}

// ContextLog is ContextSince for a caller that gives only the part of the
// log from log.Start on (Log); same is at least log.Start. When the call
// needs an earlier message it returns ErrLogWindow, before the context
// commit (the caller gives the whole log again).
func (in *Ingester) ContextLog(ctx context.Context, log Log, same int, events []map[string]any) (*assemble.Assembled, Report, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	rep, err := in.ingestSince(ctx, log, same)
	if err != nil {
		return nil, rep, err
	}
	if err := in.makeRoom(ctx, &rep); err != nil {
		return nil, rep, err
	}
	cur := cursor{N: len(in.chain), From: in.saved, Hashes: in.unsaved, TurnStart: in.turnStart}
	if cur.Hashes == nil {
		cur.Hashes = []string{}
	}
	var meta map[string]any
	b, _ := json.Marshal(cur)
	_ = json.Unmarshal(b, &meta)
	hm := map[string]any{cursorKey: meta}
	if !in.cwdSaved {
		hm[CwdKey] = in.o.Cwd // once per Ingester: what an inspector shows
	}
	if len(events) > 0 {
		evs := make([]any, len(events))
		for i, e := range events {
			evs[i] = e
		}
		hm[eventsKey] = evs
	}
	if err := in.commitConversation(ctx, log, ""); err != nil {
		return nil, rep, err
	}
	in.lastLog, in.called = log.Tail(max(log.Start, min(in.need(), log.Len()))), true
	if tip := in.convTip(); tip.ID != "" {
		hm[convKey] = map[string]any{"commit": tip.ID, "messages": int64(tip.N), "compaction": tip.Compaction}
	}
	c, err := in.a.CallWith(ctx, hm)
	if err != nil {
		return nil, rep, err
	}
	in.saved, in.unsaved, in.cwdSaved = len(in.chain), in.unsaved[:0], true
	return c, rep, nil
}

// makeRoom keeps the context within the model's window: when even a rebase
// dropping every stale token would leave it too large, the oldest live
// content of unpinned objects is deactivated until it fits (the next call
// then rebases for the window). If the chat alone does not fit, nothing can
// be deactivated and Report.Problems says so.
func (in *Ingester) makeRoom(ctx context.Context, rep *Report) error {
	over, live, err := in.a.Overflow(ctx)
	if err != nil || over <= 0 {
		return err
	}
	freed := 0
	for _, l := range live {
		if freed >= over {
			break
		}
		if _, err := in.t.Deactivate(ctx, l.ID); err != nil {
			return fmt.Errorf("ingest: making room in the window: %w", err)
		}
		freed += l.Tokens
		rep.Deactivated = append(rep.Deactivated, l.ID)
	}
	if freed < over {
		rep.Problems = append(rep.Problems, fmt.Sprintf("the context exceeds the window by %d tokens with no content left to deactivate", over-freed))
	}
	return nil
}

// Applied returns how many messages of the log the cursor holds.
func (in *Ingester) Applied() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.chain)
}

// Flush writes the turn in progress to the chat object (it is written by
// itself when the next user message begins a new turn). Call it when the
// session pauses or ends.
func (in *Ingester) Flush(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := in.flushTurn(ctx); err != nil {
		return err
	}
	// What the last context call saw and no checkpoint took (with Every
	// turn) is committed as the session's end.
	if !in.called {
		return nil
	}
	return in.commitConversation(ctx, in.lastLog, commits.SessionEnd)
}

func (in *Ingester) ingest(ctx context.Context, log []conversation.Message) (Report, error) {
	return in.ingestSince(ctx, Whole(log), 0)
}

// ingestSince is ingest for a log whose first same messages are known to
// be those of the previous call's log: every message of that log was
// applied or known (its node is in.chain[i]), so only the rest is hashed.
func (in *Ingester) ingestSince(ctx context.Context, log Log, same int) (Report, error) {
	rep := Report{}
	same = max(0, min(same, log.Len(), len(in.chain)))
	if same < log.Start || (in.turn == nil && in.turnStart >= 0 && in.turnStart < log.Start) {
		return rep, ErrLogWindow
	}
	if err := in.checkIDs(log.From(same), same); err != nil {
		return rep, err
	}
	tail := make([]string, log.Len()-same)
	for i := range tail {
		tail[i] = hash(log.At(same + i))
	}
	hs := func(i int) string { return tail[i-same] } // i >= same: the cursor only goes back to k >= same
	k := same
	for k < log.Len() && k < len(in.chain) && in.nodeAt(k, tail[k-same]) == in.chain[k] {
		k++
	}
	if k < len(in.chain) {
		rep.Reset, rep.ResetAt = true, k
		in.leave(k)
		in.convReset(k)
		if in.saved > k {
			in.saved, in.unsaved = k, in.unsaved[:0]
		} else {
			in.unsaved = in.unsaved[:k-in.saved]
		}
		if err := in.flushTurn(ctx); err != nil {
			return rep, err
		}
		in.turnStart = -1
		if err := in.a.Note(ctx, fmt.Sprintf("[context] the harness's message log was replaced after message %d; what follows continues from there", k)); err != nil {
			return rep, err
		}
	} else if in.turn == nil && in.turnStart >= 0 && in.turnStart < log.Len() {
		if err := in.rebuildTurn(ctx, log.Range(in.turnStart, len(in.chain))); err != nil {
			return rep, err
		}
	}
	// A message already applied on another branch of the log (the harness
	// went back to a branch it had left) is not applied again: switching
	// branches costs its hashes, and the store grows only with messages
	// never seen. The turn in progress is rebuilt from the
	// branch before the first new message.
	known, knownFrom := 0, -1
	for i := len(in.chain); i < log.Len(); i++ {
		m := log.At(i)
		// A node past the chain's end is on no branch but a left one.
		if in.left[in.node(hs(i))] {
			if known == 0 {
				knownFrom = i
				if err := in.flushTurn(ctx); err != nil {
					return rep, err
				}
			}
			known++
			if m.Role == conversation.RoleUser {
				in.turnStart = i
			}
			in.unsaved = append(in.unsaved, hs(i))
			in.push(hs(i))
			continue
		}
		if known > 0 && in.turn == nil && in.turnStart >= knownFrom && in.turnStart < i {
			if err := in.rebuildTurn(ctx, log.Range(in.turnStart, i)); err != nil {
				return rep, err
			}
		}
		if known > 0 && knownFrom >= 0 {
			if err := in.a.Note(ctx, fmt.Sprintf("[context] messages %d to %d of the log were already applied on another branch and are shown above", knownFrom, i-1)); err != nil {
				return rep, err
			}
			knownFrom = -1
		}
		// Tool arguments a store cannot hold exactly are kept as strings:
		// one field never breaks the session.
		om, err := in.own(ctx, m.Exact())
		if err != nil {
			return rep, fmt.Errorf("ingest: message %d (%s): %w", i, m.Role, err)
		}
		if err := in.apply(ctx, i, om, &rep); err != nil {
			return rep, fmt.Errorf("ingest: message %d (%s): %w", i, m.Role, err)
		}
		in.unsaved = append(in.unsaved, hs(i))
		in.push(hs(i))
		rep.Applied++
	}
	if known > 0 {
		rep.Known = known
		if knownFrom >= 0 && in.turn == nil && in.turnStart >= knownFrom && in.turnStart < log.Len() {
			if err := in.rebuildTurn(ctx, log.From(in.turnStart)); err != nil {
				return rep, err
			}
		}
	}
	rep.Cursor = len(in.chain)
	return rep, nil
}

// rebuildTurn restores the turn in progress after a resume, from the
// messages that began it (already applied to the store and the stream).
func (in *Ingester) rebuildTurn(ctx context.Context, msgs []conversation.Message) error {
	for _, m := range msgs {
		m, err := in.own(ctx, m.Exact())
		if err != nil {
			return fmt.Errorf("ingest: rebuilding the turn in progress: %w", err)
		}
		switch m.Role {
		case conversation.RoleUser:
			in.beginTurn(m)
		case conversation.RoleAssistant:
			in.addAssistant(m)
		}
	}
	return nil
}

func (in *Ingester) beginTurn(m conversation.Message) {
	in.turn = &objects.Turn{User: m.Text}
	in.calls = map[string]conversation.ToolCall{}
}

func (in *Ingester) addAssistant(m conversation.Message) {
	if in.turn == nil {
		in.turn = &objects.Turn{}
		in.calls = map[string]conversation.ToolCall{}
	}
	if m.Text != "" {
		in.turn.Assistant = append(in.turn.Assistant, map[string]any{"type": "text", "text": m.Text})
	}
	for _, c := range m.ToolCalls {
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		in.turn.Assistant = append(in.turn.Assistant, map[string]any{"type": "toolCall", "id": c.ID, "name": c.Name, "arguments": args})
		in.turn.ToolcallIDs = append(in.turn.ToolcallIDs, c.ID)
		in.calls[c.ID] = c
	}
	if m.Model != "" || m.Usage != nil {
		meta := map[string]any{}
		if m.Model != "" {
			meta["model"] = m.Model
		}
		if u := m.Usage; u != nil {
			meta["usage"] = map[string]any{"input": u.Input, "output": u.Output, "cacheRead": u.CacheRead, "cacheWrite": u.CacheWrite}
		}
		in.turn.AssistantMeta = meta
	}
}

// flushTurn appends the turn in progress to the chat object.
func (in *Ingester) flushTurn(ctx context.Context) error {
	if in.turn == nil {
		return nil
	}
	t := *in.turn
	in.turn = nil
	if _, _, err := in.t.Session().AppendTurns(ctx, t); err != nil {
		return fmt.Errorf("writing the chat turn: %w", err)
	}
	return nil
}

// apply applies message i.
func (in *Ingester) apply(ctx context.Context, i int, m conversation.Message, rep *Report) error {
	switch m.Role {
	case conversation.RoleUser:
		if err := in.flushTurn(ctx); err != nil {
			return err
		}
		if _, err := in.t.BeginTurn(ctx); err != nil {
			return err
		}
		in.beginTurn(m)
		in.turnStart = i
		if in.o.OnUser != nil {
			notes, key, record, err := in.o.OnUser(ctx, m.Text)
			if err != nil {
				return err
			}
			for _, n := range notes {
				if err := in.a.Note(ctx, n); err != nil {
					return err
				}
			}
			if record != nil {
				in.turn.Extra = map[string]any{key: record}
			}
		}
		return in.a.User(ctx, m.Text)
	case conversation.RoleAssistant:
		if m.Text == "" && len(m.ToolCalls) == 0 {
			skip(rep, "empty assistant")
			return nil
		}
		if in.turn == nil {
			in.turnStart = i
		}
		in.addAssistant(m)
		calls := make([]assemble.ToolCall, len(m.ToolCalls))
		for j, c := range m.ToolCalls {
			calls[j] = assemble.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args}
		}
		return in.a.Assistant(ctx, m.Text, calls)
	case conversation.RoleToolResult:
		r, err := in.toolResult(ctx, m, rep)
		if err != nil {
			return err
		}
		// The output as the harness sent it: a session whose harness sends
		// the turn's results itself keeps that form (assemble.ToolResultSent).
		return in.a.ToolResultSent(ctx, r, m.Output)
	default:
		skip(rep, "role:"+string(m.Role))
		return nil
	}
}

func skip(rep *Report, why string) {
	if rep.Skipped == nil {
		rep.Skipped = map[string]int{}
	}
	rep.Skipped[why]++
}

// toolResult records a tool result as a toolcall, through the tool of its
// kind, unless ctxstore already recorded it (one of its own tools, run
// through the service, or a result applied before a crash).
func (in *Ingester) toolResult(ctx context.Context, m conversation.Message, rep *Report) (tools.Result, error) {
	if m.ToolCallID == "" {
		return tools.Result{}, errors.New("a tool result without a tool-call id")
	}
	if r, ok, err := in.recorded(ctx, m.ToolCallID); err != nil || ok {
		return r, err
	}
	c, known := in.calls[m.ToolCallID]
	name := m.ToolName
	if name == "" {
		name = c.Name
	}
	if name == "" {
		name = "unknown"
	}
	out := m.Output
	call := tools.Call{ID: m.ToolCallID, Tool: name, Args: c.Args, Failed: m.IsError, Output: &out}
	if !known {
		call.Args = map[string]any{}
	}
	kind := in.kindOf(name)
	r, err := in.byKind(ctx, kind, call)
	if err == nil {
		return r, nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrConflict) {
		return tools.Result{}, err
	}
	rep.Problems = append(rep.Problems, fmt.Sprintf("%s %s: %v (recorded as a plain tool call)", name, m.ToolCallID, err))
	call.Output = &out
	return in.t.Record(ctx, call)
}

// byKind applies a call through the tool of its kind.
func (in *Ingester) byKind(ctx context.Context, kind Kind, c tools.Call) (tools.Result, error) {
	cwd := in.o.Files.Local(in.o.Cwd)
	switch kind {
	case KindRead, KindWrite, KindEdit:
		p := pathArg(c.Args)
		if p == "" {
			return in.t.Record(ctx, c)
		}
		local := in.o.Files.Local(abs(in.o.Cwd, p))
		if c.ArgsDisplay == "" {
			c.ArgsDisplay = p // the path says it; a body would only cost tokens
		}
		if err := in.o.Files.Observe(kind, local, c.Args, *c.Output, c.Failed); err != nil {
			return tools.Result{}, err
		}
		switch kind {
		case KindWrite:
			return in.t.Write(ctx, c, local)
		case KindEdit:
			return in.t.Edit(ctx, c, local)
		}
		if c.Failed {
			return in.t.Record(ctx, c)
		}
		// A harness's own read of lines of a bare head's spill file (OpenClaw's
		// read: docs/openclaw.md) is those lines of the output, as ctxstore's
		// read(path, offset, limit) records them; read whole, it activates the
		// output (Tools.Read). A part of any other file still loads the whole
		// file, as ingestion always did.
		if offset, limit := tools.IntArg(c.Args, "offset"), tools.IntArg(c.Args, "limit"); (offset > 0 || limit > 0) && in.t.IsSpill(local) {
			return in.t.ReadPart(ctx, c, local, offset, limit)
		}
		r, err := in.t.Read(ctx, local)
		if err != nil {
			return tools.Result{}, err
		}
		c.Output = nil // what a read loaded lives in the file object
		return in.t.RecordResult(ctx, c, r)
	case KindBash:
		cmd, _ := c.Args["command"].(string)
		return in.t.Bash(ctx, c, cwd, cmd)
	case KindLs, KindFind, KindGrep:
		dir := cwd
		if p := pathArg(c.Args); p != "" {
			dir = in.o.Files.Local(abs(in.o.Cwd, p))
		}
		switch kind {
		case KindLs:
			return in.t.Ls(ctx, c, dir)
		case KindFind:
			return in.t.Find(ctx, c, dir)
		}
		return in.t.Grep(ctx, c, dir)
	}
	return in.t.Record(ctx, c)
}

// recorded returns the toolcall id as this session recorded it, if it did.
func (in *Ingester) recorded(ctx context.Context, id string) (tools.Result, bool, error) {
	st := in.t.Session().Store()
	et, err := st.EntityTx(ctx, id, store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return tools.Result{}, false, nil
	}
	if err != nil {
		return tools.Result{}, false, err
	}
	doc, err := st.Entity(ctx, id, store.AtTx(et.TxID, time.Time{}))
	if err != nil {
		return tools.Result{}, false, err
	}
	o, err := objects.FromDoc(doc)
	if err != nil || o.Kind() != objects.KindToolcall || o.Toolcall.ChatRef != in.t.Session().Info().ChatID {
		return tools.Result{}, false, nil
	}
	return tools.Result{ID: id, Object: o, Ref: objects.StaticRef(o, et.TxID), Message: objects.RenderMetadata(o)}, true, nil
}
