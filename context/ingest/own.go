package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// A log copied from another session carries the tool call ids that session
// recorded: a harness's fork (Pi's /fork, a session resumed from a file
// `ctxstore commit fork` wrote) starts with the parent's messages. A
// toolcall object's id is the harness's tool call id, and a session never
// writes another session's object (tools.ErrForeignObject), so such a log
// would be refused whole. Instead the ingester renames, for this session
// only, every tool call id the store holds for another session: the
// assistant's call and its result get ownID's id, consistently, so the
// session records its own toolcall, the context it renders pairs calls and
// results, and the parent's toolcall is never touched. The harness's log
// and the conversation commits keep the harness's ids (they are the
// harness's bytes); only what the session records and renders is renamed.

// ownID returns the id under which this session records tool call id: id
// itself when this session already holds it or nobody does, else
// session.RenamedID (a suffix derived from the session's id, the same on
// every call and in every process, so a resumed session finds its own
// toolcalls again; no other session can take it first).
func (in *Ingester) ownID(ctx context.Context, id string) (string, error) {
	s := in.t.Session()
	if id == "" {
		return id, nil
	}
	if err := session.CheckID(s.ID(), id, session.FromClient); err != nil {
		return "", fmt.Errorf("tool call id: %w", err)
	}
	if s.Indexed(id) {
		return id, nil
	}
	q := session.RenamedID(s.ID(), id)
	if s.Indexed(q) {
		return q, nil
	}
	_, err := s.Store().EntityTx(ctx, id, store.Basis{})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return id, nil
	case err != nil:
		return "", err
	}
	return q, nil
}

// checkIDs checks, before anything of the log is applied, every tool call
// id of msgs against the namespace rule (session.CheckID): an id ctxstore
// derives (a commit "ctx-{session}-{n}", a chunk, a head) is never taken
// from a harness's log, renamed or not, so a request naming one is refused
// whole.
func (in *Ingester) checkIDs(msgs []conversation.Message, first int) error {
	sid := in.t.Session().ID()
	for i, m := range msgs {
		if m.ToolCallID != "" {
			if err := session.CheckID(sid, m.ToolCallID, session.FromClient); err != nil {
				return fmt.Errorf("ingest: message %d (%s): tool call id: %w", first+i, m.Role, err)
			}
		}
		for _, c := range m.ToolCalls {
			if err := session.CheckID(sid, c.ID, session.FromClient); err != nil {
				return fmt.Errorf("ingest: message %d (%s): tool call id: %w", first+i, m.Role, err)
			}
		}
	}
	return nil
}

// own returns m with its tool call ids as this session records them
// (ownID); m itself is not changed.
func (in *Ingester) own(ctx context.Context, m conversation.Message) (conversation.Message, error) {
	switch {
	case m.Role == conversation.RoleToolResult && m.ToolCallID != "":
		id, ok := in.pending[m.ToolCallID]
		if ok {
			delete(in.pending, m.ToolCallID) // a result answers its call once
		} else {
			var err error
			if id, err = in.ownID(ctx, m.ToolCallID); err != nil {
				return m, err
			}
		}
		m.ToolCallID = id
	case m.Role == conversation.RoleAssistant && len(m.ToolCalls) > 0:
		var calls []conversation.ToolCall
		for i, c := range m.ToolCalls {
			id, err := in.ownID(ctx, c.ID)
			if err != nil {
				return m, err
			}
			if in.pending == nil {
				in.pending = map[string]string{}
			}
			in.pending[c.ID] = id // its result is renamed alike, without a lookup
			if id == c.ID {
				continue
			}
			if calls == nil {
				calls = append([]conversation.ToolCall(nil), m.ToolCalls...)
			}
			calls[i].ID = id
		}
		if calls != nil {
			m.ToolCalls = calls
		}
	}
	return m, nil
}
