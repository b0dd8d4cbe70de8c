package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// ResultEdit is an edit the harness made to a tool result of its own log
// after the fact (Pi's context_edit entries): from now on the result of
// call ToolCallID (the harness's id) is Replacement, or, when Replacement
// is nil, it is left out of the model's context.
type ResultEdit struct {
	ToolCallID  string
	Replacement *string
}

// EditedResult is what EditResults did to one toolcall.
type EditedResult struct {
	// ID is the toolcall's id in this session (the harness's id, or the
	// session's rename of it: own.go); Object its visible version now.
	ID     string
	Object *objects.Object
	// Omitted is set when the output was removed rather than replaced.
	Omitted bool
	// original is the output the edit took out, when the toolcall held
	// it (rechain checks the message it was against it).
	original *string
}

// EditResults applies edits of tool results this session already
// recorded: the output the harness took back is evicted from the store
// (every version of the toolcall, with its documents, its search entries
// and whatever a version held: store.OpEvict) and the toolcall is written
// again with the replacement as its only version, or without an output
// for an omission, and is deactivated. An edit of a call the session did not
// record (the usual case: the harness edits a result before the next
// model call, and the log then carries the replacement, or no result) or
// of another session's call is not this session's to apply and is
// skipped; so is one already applied (the toolcall's only version holds
// the replacement already). It returns the toolcalls it rewrote.
//
// The context commits of the calls that showed the original name a
// version that no longer exists: the assembler then rebases from the
// first item that rendered it (assemble.Assembler.Reload, and Resume in
// a new process), and those calls no longer rebuild (assemble.ErrEvicted;
// docs/pi.md, "Context edits").
//
// log is the harness's log as it is now, the edits applied (as for
// ContextLog, the first log.Start messages unchanged since the previous
// call). The messages the edits changed are taken as the ones applied
// before (rechain): the next ingestion goes on from there instead of
// taking the log for a replaced one. The conversation commits that hold
// an edited result's original are evicted, and the messages they held
// are committed again, edited, by the next checkpoint (forgetCommits).
func (in *Ingester) EditResults(ctx context.Context, log Log, edits []ResultEdit) ([]EditedResult, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []EditedResult
	originals := map[string]*string{}
	for _, e := range edits {
		r, ok, err := in.editResult(ctx, e)
		if err != nil {
			return out, fmt.Errorf("ingest: editing the result of %s: %w", e.ToolCallID, err)
		}
		if ok {
			out = append(out, r)
			originals[e.ToolCallID] = r.original
			if err := in.forgetCommits(ctx, e); err != nil {
				return out, fmt.Errorf("ingest: editing the result of %s: %w", e.ToolCallID, err)
			}
		}
	}
	in.rechain(log, edits, originals)
	return out, nil
}

// rechain makes the applied messages those of log where log differs from
// them only by the edits: a replaced result (a result of an edited call,
// another text; when the edit took its original out of the store just
// now, the message with the original text must be the one applied) or an
// omitted one (a message applied before and absent now, which the edits
// account for). Each other message must be the one applied at its place
// (its node in the chain proves it); otherwise the chain is left as it
// is, and the ingestion resets as for any replaced log. The chain, the
// cursor's hashes (the next commit records them) and the positions that
// count messages (the turn's start) follow the edited log.
func (in *Ingester) rechain(log Log, edits []ResultEdit, originals map[string]*string) {
	replaced, omitted := map[string]bool{}, 0
	for _, e := range edits {
		if e.Replacement != nil {
			replaced[e.ToolCallID] = true
		} else {
			omitted++
		}
	}
	p := min(log.Start, len(in.chain))
	var hs []string // the hashes of log's messages from p on, as far as they match
	i, changed, dropped := p, false, 0
	firstDrop := -1
	for j := p; j < log.Len() && i < len(in.chain); {
		m := log.At(j)
		h := hash(m)
		switch {
		case in.nodeAt(i, h) == in.chain[i]:
		case m.Role == conversation.RoleToolResult && replaced[m.ToolCallID]:
			if o, ok := originals[m.ToolCallID]; ok && o != nil {
				was := m
				was.Output = *o
				if in.nodeAt(i, hash(was)) != in.chain[i] {
					return
				}
			}
			changed = true
		case dropped < omitted && i+1 < len(in.chain) && in.nodeAt(i+1, h) == in.chain[i+1]:
			// Applied message i is not in the log any more: an omitted result.
			if firstDrop < 0 {
				firstDrop = i
			}
			dropped++
			i++
			changed = true
			continue
		default:
			return
		}
		hs = append(hs, h)
		i++
		j++
	}
	if !changed || i < len(in.chain) {
		return
	}
	in.chain = in.chain[:p]
	for _, h := range hs {
		in.chain = append(in.chain, in.node(h))
	}
	if in.saved > p {
		in.saved, in.unsaved = p, append(in.unsaved[:0], hs...)
	} else {
		in.unsaved = append(in.unsaved[:p-in.saved], hs...)
	}
	if dropped > 0 && in.turnStart > firstDrop {
		in.turnStart = max(firstDrop, in.turnStart-dropped)
	}
}

// forgetCommits evicts the session's conversation commits that hold the
// original of an edited result (a tool result event of its call with
// another text than the replacement, or any for an omission), with their
// contents when no other commit shares them, and every later commit of
// the session's chain (its parent goes). The chain goes back to the last
// commit before them: the next checkpoint commits the messages they held
// again, from the edited log. A commit in a format the registry cannot
// decode (none that a live session writes) is kept.
func (in *Ingester) forgetCommits(ctx context.Context, e ResultEdit) error {
	co := in.o.Commits
	if co == nil || co.Service == nil {
		return nil
	}
	sid := in.t.Session().ID()
	list, err := co.Service.ListCommits(ctx, []string{sid})
	if err != nil {
		return err
	}
	gone := map[string]bool{}
	contents := map[string]bool{}
	for _, c := range list {
		holds, err := in.holdsOriginal(ctx, c, e)
		if err != nil {
			return err
		}
		if holds {
			gone[c.ID] = true
		}
	}
	if len(gone) == 0 {
		return nil
	}
	for k, p := range in.conv {
		if gone[p.ID] {
			for _, q := range in.conv[k:] {
				gone[q.ID] = true
			}
			in.conv = in.conv[:k]
			break
		}
	}
	var ops []store.Op
	for _, c := range list {
		if gone[c.ID] {
			ops = append(ops, store.Evict(c.ID))
			contents[c.Content] = true
		}
	}
	// A content shared with a commit that stays (another session's fork,
	// an identical delta) stays too.
	for _, c := range list {
		if !gone[c.ID] {
			delete(contents, c.Content)
		}
	}
	for h := range contents {
		others, err := co.Service.Store().Query(ctx, store.Query{Where: []store.Pred{
			store.Where("type", commits.DocCommit), store.Where("content", h)}})
		if err != nil {
			return err
		}
		shared := false
		for _, d := range others {
			if id, _ := d[store.IDKey].(string); !gone[id] {
				shared = true
			}
		}
		if !shared {
			ops = append(ops, store.Evict(commits.ContentPrefix+h))
		}
	}
	_, err = store.SubmitWait(ctx, co.Service.Store(), ops)
	return err
}

// holdsOriginal reports whether commit c's content holds the result of
// e's call as it was before e.
func (in *Ingester) holdsOriginal(ctx context.Context, c *commits.Commit, e ResultEdit) (bool, error) {
	f, ok := in.o.Commits.Service.Registry().Lookup(c.Format)
	if !ok || f.Decode == nil {
		return false, nil
	}
	b, err := in.o.Commits.Service.Content(ctx, c)
	if err != nil {
		return false, err
	}
	evs, err := f.Decode(b)
	if err != nil {
		return false, nil
	}
	for _, ev := range evs {
		if ev.Type != events.ToolResult || ev.Tool == nil || ev.Tool.ID != e.ToolCallID || ev.Result == nil {
			continue
		}
		if e.Replacement == nil || ev.Result.Content != *e.Replacement {
			return true, nil
		}
	}
	return false, nil
}

func (in *Ingester) editResult(ctx context.Context, e ResultEdit) (EditedResult, bool, error) {
	s := in.t.Session()
	if e.ToolCallID == "" || session.CheckID(s.ID(), e.ToolCallID, session.FromClient) != nil {
		return EditedResult{}, false, nil
	}
	// Only a toolcall this session holds (docs/security.md, "Ownership"):
	// the harness's id, or this session's rename of a forked log's id.
	id := e.ToolCallID
	if !s.Indexed(id) {
		if id = session.RenamedID(s.ID(), e.ToolCallID); !s.Indexed(id) {
			return EditedResult{}, false, nil
		}
	}
	st := s.Store()
	doc, err := st.Entity(ctx, id, store.Basis{})
	gone := errors.Is(err, store.ErrNotFound) // evicted by an edit that stopped before its put
	if err != nil && !gone {
		return EditedResult{}, false, err
	}
	var f objects.ToolcallFields
	var was *string
	if !gone {
		o, err := objects.FromDoc(doc)
		if err != nil || o.Kind() != objects.KindToolcall || o.Toolcall.ChatRef != s.Info().ChatID {
			return EditedResult{}, false, nil // not a toolcall of this session's chat
		}
		if sameOutput(o.Content, e.Replacement) {
			h, err := st.History(ctx, id, store.HistoryOptions{Limit: 2, WithCorrections: true})
			if err != nil {
				return EditedResult{}, false, err
			}
			if len(h) == 1 {
				return EditedResult{}, false, nil // applied already
			}
		}
		f, was = o.Toolcall, o.Content
		if _, _, err := s.Update(ctx, []store.Op{store.Evict(id)}, nil); err != nil {
			return EditedResult{}, false, err
		}
	} else {
		// The put below is what is missing; the call's fields went with
		// the eviction, and are the session's as far as it knows them.
		f = objects.ToolcallFields{Tool: "unknown", Args: map[string]any{}, Status: objects.StatusOK, ChatRef: s.Info().ChatID}
	}
	o, err := objects.NewToolcall(id, f, e.Replacement)
	if err != nil {
		return EditedResult{}, false, err
	}
	nd, err := o.Doc()
	if err != nil {
		return EditedResult{}, false, err
	}
	// The call leaves the active set: the assembler then shows what it
	// rendered of the output as gone rather than as a changed version,
	// whose patch would quote the lines the edit took out (the model
	// reads the replacement in the harness's own tool result, and
	// activate or the spill file loads it).
	if _, _, err := s.Update(ctx, []store.Op{store.Put(nd)}, func(state *session.State) error {
		if state.IsActive(id) {
			if err := state.Deactivate(id); err != nil {
				return err
			}
		}
		state.SetToolcallTokens(id, tools.CallTokens(f.Args, e.Replacement))
		return nil
	}); err != nil {
		return EditedResult{}, false, err
	}
	return EditedResult{ID: id, Object: o, Omitted: e.Replacement == nil, original: was}, true, nil
}

// sameOutput reports whether an output is the replacement (nil: none).
func sameOutput(out, replacement *string) bool {
	if out == nil || replacement == nil {
		return out == nil && replacement == nil
	}
	return *out == *replacement
}
