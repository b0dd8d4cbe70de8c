package recall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// RefsKey is the chat turn member recording the @@ references of the
// turn's user message.
const RefsKey = "session_refs"

// Injector turns the @@ references of one session's user messages into
// context notes: each referenced session's
// metadata enters the stream as a note before the message that names it,
// once per session; "@@name: question" enters query_session's answer
// instead. Notes are stream items: appended once, they stay in the cached
// prefix of every later call.
type Injector struct {
	st      store.Store
	idx     *Indexer
	sc      Scope
	session string

	mu   sync.Mutex
	seen map[string]bool // sessions whose summary this session has been given
}

// NewInjector returns the injector of session sid: references resolve
// within sc, summaries come from idx (a session never indexed is indexed
// on first reference). Sessions the chat's recorded turns already
// referenced are not injected again.
func NewInjector(ctx context.Context, st store.Store, idx *Indexer, sc Scope, sid string) *Injector {
	in := &Injector{st: st, idx: idx, sc: sc, session: sid, seen: map[string]bool{}}
	if o, err := session.ReadChat(ctx, st, sid, store.Basis{}); err == nil {
		for _, t := range o.Chat.Turns {
			refs, _ := t.Extra[RefsKey].([]any)
			for _, r := range refs {
				if m, ok := r.(map[string]any); ok {
					if s, ok := m["session_id"].(string); ok && m["question"] == nil && m["error"] == nil {
						in.seen[s] = true
					}
				}
			}
		}
	}
	return in
}

// Resolved is one @@ reference as recorded in the chat turn.
type Resolved struct {
	Ref       string `json:"ref"`
	Question  string `json:"question,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	// MetaTx is the transaction of the metadata version injected.
	MetaTx int64  `json:"meta_tx,omitempty"`
	Error  string `json:"error,omitempty"`
	// Repeat is set when the session's summary was already given.
	Repeat bool `json:"repeat,omitempty"`
}

func (r Resolved) value() map[string]any {
	m := map[string]any{"ref": r.Ref}
	if r.Question != "" {
		m["question"] = r.Question
	}
	if r.SessionID != "" {
		m["session_id"] = r.SessionID
	}
	if r.MetaTx != 0 {
		m["meta_tx"] = r.MetaTx
	}
	if r.Error != "" {
		m["error"] = r.Error
	}
	if r.Repeat {
		m["repeat"] = true
	}
	return m
}

// Message handles one user message: the notes to put before it in the
// stream, and the references to record in its chat turn (nil when it has
// none). Failures to resolve become notes saying so; only the store's
// failures are errors.
func (in *Injector) Message(ctx context.Context, text string) (notes []string, record []any, err error) {
	refs := References(text)
	if len(refs) == 0 {
		return nil, nil, nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range refs {
		res := Resolved{Ref: r.Ref, Question: r.Question}
		note, err := in.one(ctx, r, &res)
		if err != nil {
			return nil, nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		record = append(record, res.value())
	}
	return notes, record, nil
}

func (in *Injector) one(ctx context.Context, r Reference, res *Resolved) (string, error) {
	sid, err := Resolve(ctx, in.st, r.Ref, in.sc)
	var amb *AmbiguousError
	switch {
	case errors.As(err, &amb):
		res.Error = amb.Error()
		return "[context] " + amb.Error() + ". Write @@ with the exact name or id.", nil
	case errors.Is(err, ErrNoSession):
		res.Error = err.Error()
		return "[context] @@" + r.Ref + ": no session by that id or name.", nil
	case err != nil:
		return "", err
	}
	res.SessionID = sid
	if r.Question != "" {
		a, err := QuerySession(ctx, in.st, in.idx.Settings(), in.sc, sid, r.Question)
		if err != nil {
			if store.KindOf(err) == store.ErrUnavailable {
				return "", err
			}
			res.Error = err.Error()
			return "[context] @@" + r.Ref + ": " + err.Error(), nil
		}
		return "[context] @@" + r.Ref + ": " + r.Question + "\n" + a.Text, nil
	}
	if in.seen[sid] {
		res.Repeat = true
		return "", nil
	}
	m, err := ReadMeta(ctx, in.st, sid, store.Basis{})
	if store.KindOf(err) == store.ErrNotFound {
		m, err = in.idx.Index(ctx, sid)
	}
	if err != nil {
		if store.KindOf(err) == store.ErrUnavailable {
			return "", err
		}
		// No summary to give (nothing to index, indexing disabled or
		// running, a failed generation): say so; the message goes on.
		res.Error = err.Error()
		return "[context] @@" + r.Ref + ": session " + sid + " has no summary (" + err.Error() + ").", nil
	}
	in.seen[sid] = true
	res.MetaTx = m.TxID
	var b strings.Builder
	fmt.Fprintf(&b, "[context] @@%s is session %s, %q", r.Ref, sid, m.Name)
	if len(m.Tags) > 0 {
		fmt.Fprintf(&b, " (tags: %s)", strings.Join(m.Tags, ", "))
	}
	fmt.Fprintf(&b, ", indexed %s.\nDescription: %s\nSummary: %s\nquery_session(%q, question) asks it more.",
		m.TxTime.Format("2006-01-02"), m.Description, m.Summary, sid)
	return b.String(), nil
}
