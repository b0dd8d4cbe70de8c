package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// CommitOptions make a live session write conversation commits (docs/commits.md,
// "Live sessions"): the harness's messages since the last
// commit, as an events-v1 delta, at the checkpoints Every chooses.
type CommitOptions struct {
	// Service writes the commits (over the session's store).
	Service *commits.Service
	// Provenance is what the harness knows (template, principal, machine,
	// harness, ticket, thread); Session and Trigger are set per commit.
	Provenance commits.Provenance
	// Every chooses the checkpoints: EveryCall (default) commits at each
	// context call that has new messages; EveryTurn only when the newest
	// message is a user prompt (a turn ended and the next began).
	Every string
}

// The checkpoint frequencies of CommitOptions.Every.
const (
	EveryCall = "call"
	EveryTurn = "turn"
)

// convKey is the member of a call record's harness meta naming the
// conversation commit the call rendered.
const convKey = "conversation"

// convPoint is a conversation commit and the number of log messages it
// covers (for a compaction, the messages of the log it summarized, and 0
// once the harness replaced its log with the compacted one).
type convPoint struct {
	ID         string `json:"commit"`
	N          int    `json:"messages"`
	Compaction bool   `json:"compaction,omitempty"`
}

// convTip returns the latest conversation commit, if any.
func (in *Ingester) convTip() convPoint {
	if len(in.conv) == 0 {
		return convPoint{}
	}
	return in.conv[len(in.conv)-1]
}

// convReset drops the commits covering more than the k messages the log
// still shares with what was applied (a replaced log branches from the last
// commit within them; a compaction stays the parent of what follows it).
func (in *Ingester) convReset(k int) {
	for len(in.conv) > 0 {
		p := in.conv[len(in.conv)-1]
		if p.N <= k {
			return
		}
		if p.Compaction {
			// The harness replaced its log after compacting: what it
			// holds now follows the compaction.
			in.conv[len(in.conv)-1].N = 0
			return
		}
		in.conv = in.conv[:len(in.conv)-1]
	}
}

// forkStart continues a new session started by commits.Fork: its first
// commit (parent: the forked commit) covers the messages the harness's log
// begins with, so the next commit holds only what follows them.
func (in *Ingester) forkStart(ctx context.Context) error {
	co := in.o.Commits
	if co == nil || co.Service == nil {
		return nil
	}
	tip, err := co.Service.SessionTip(ctx, in.t.Session().ID())
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ingest: the session's conversation commits: %w", err)
	}
	if n, ok := co.Service.ForkMessages(ctx, tip); ok {
		in.conv = []convPoint{{ID: tip.ID, N: n}}
	}
	return nil
}

// convRestore replays the conversation commit of a resumed call record.
func (in *Ingester) convRestore(raw any) {
	m, ok := raw.(map[string]any)
	if !ok {
		return
	}
	id, _ := m["commit"].(string)
	if id == "" {
		return
	}
	n := 0
	if f, ok := num(m["messages"]); ok {
		n = int(f)
	}
	comp, _ := m["compaction"].(bool)
	if t := in.convTip(); t.ID == id {
		return
	}
	if !comp {
		in.convReset(n)
	}
	in.conv = append(in.conv, convPoint{ID: id, N: n, Compaction: comp})
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case interface{ Float64() (float64, error) }:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// commitConversation checkpoints the messages of log after the latest
// conversation commit, if Every says this call is a checkpoint.
func (in *Ingester) commitConversation(ctx context.Context, log Log, force commits.Trigger) error {
	co := in.o.Commits
	if co == nil || co.Service == nil {
		return nil
	}
	tip := in.convTip()
	if tip.N > log.Len() {
		in.convReset(log.Len())
		tip = in.convTip()
	}
	if tip.N < log.Start {
		return ErrLogWindow
	}
	delta := log.From(tip.N)
	if len(delta) == 0 {
		return nil
	}
	last := delta[len(delta)-1]
	trigger := commits.TurnBoundary
	if last.Role == conversation.RoleToolResult {
		trigger = commits.ToolCall
	}
	if force != "" {
		trigger = force
	} else if co.Every == EveryTurn && trigger != commits.TurnBoundary {
		return nil
	}
	p := co.Provenance
	p.Session, p.Trigger = in.t.Session().ID(), trigger
	c, err := co.Service.Checkpoint(ctx, commits.CheckpointRequest{Parent: tip.ID, Events: events.FromMessages(delta), Provenance: p})
	if errors.Is(err, commits.ErrUnknownParent) {
		// The call records name commits this store lacks (a session
		// imported from a bundle, which does not carry them yet): start
		// a new chain holding the whole log, so nothing is lost.
		if log.Start > 0 {
			return ErrLogWindow
		}
		in.conv = nil
		c, err = co.Service.Checkpoint(ctx, commits.CheckpointRequest{Events: events.FromMessages(log.Messages), Provenance: p})
		if err == nil {
			in.conv = append(in.conv, convPoint{ID: c.ID, N: log.Len()})
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("ingest: conversation commit: %w", err)
	}
	in.conv = append(in.conv, convPoint{ID: c.ID, N: log.Len()})
	return nil
}

// Compact records a compaction of the conversation: the messages of log
// not yet committed are checkpointed first (trigger compaction), then a
// compaction commit holding summary. Materializing what follows starts
// from the summary by default; the full history stays reachable with stop
// root. The next call's log (the harness's compacted log) is committed on
// top of the compaction commit. It needs CommitOptions.
func (in *Ingester) Compact(ctx context.Context, log []conversation.Message, summary string) (*commits.Commit, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	co := in.o.Commits
	if co == nil || co.Service == nil {
		return nil, fmt.Errorf("ingest: compact: the session does not write conversation commits")
	}
	return in.compact(ctx, Whole(log), summary)
}

func (in *Ingester) compact(ctx context.Context, log Log, summary string) (*commits.Commit, error) {
	co := in.o.Commits
	if _, err := in.ingestSince(ctx, log, log.Start); err != nil {
		return nil, err
	}
	if err := in.commitConversation(ctx, log, commits.CompactionTrigger); err != nil {
		return nil, err
	}
	p := co.Provenance
	p.Session, p.Trigger = in.t.Session().ID(), commits.CompactionTrigger
	c, err := co.Service.Checkpoint(ctx, commits.CheckpointRequest{Parent: in.convTip().ID, Type: commits.Compaction,
		Events: []events.Event{{Type: events.System, Subtype: events.SubtypeCompactionSummary, Text: summary}}, Provenance: p})
	if err != nil {
		return nil, fmt.Errorf("ingest: compaction commit: %w", err)
	}
	in.conv = append(in.conv, convPoint{ID: c.ID, N: log.Len(), Compaction: true})
	return c, nil
}

// CompactLast is Compact over the log of the last context call: a harness
// that compacted its own log (Pi on a provider overflow) hands ctxstore
// the compacted log in the next call, so what it compacted is the log
// ctxstore saw last. It does nothing, and returns nil, before any call or
// when the session writes no conversation commits.
func (in *Ingester) CompactLast(ctx context.Context, summary string) (*commits.Commit, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.called || in.o.Commits == nil || in.o.Commits.Service == nil {
		return nil, nil
	}
	return in.compact(ctx, in.lastLog, summary)
}

// ConversationCommit returns the latest conversation commit of the
// session ("" when none).
func (in *Ingester) ConversationCommit() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.convTip().ID
}
