package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// SessionSummary summarizes one session.
type SessionSummary struct {
	ID      string `json:"id"`
	Harness string `json:"harness,omitempty"`
	// Name and Description are the session index's (context/recall),
	// when the session has been indexed.
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Turns is the number of chat turns written; Calls the number of
	// context commits (model calls).
	Turns int `json:"turns"`
	Calls int `json:"calls"`
	// Active and Pool count the objects active in the context and in its
	// metadata pool (the session's own system prompt and chat left out).
	Active int `json:"active"`
	Pool   int `json:"pool"`
	// FirstPrompt and LastPrompt are the first and the last user prompt,
	// shortened to 200 characters.
	FirstPrompt string `json:"first_prompt,omitempty"`
	LastPrompt  string `json:"last_prompt,omitempty"`
	// Recorded marks a session known only from its context commits: a
	// transcript imported or captured (ctxstore import, Claude Code hooks),
	// never served live. Its Commits, Compactions, Cwd, Model, Source and
	// Tip come from the commits (session/commits.Chain); Turns counts its
	// person's prompts; Calls the requests its harness recorded
	// (harness/recorded, derived at import); it has no active set or pool.
	Recorded    bool   `json:"recorded,omitempty"`
	Commits     int    `json:"commits,omitempty"`
	Compactions int    `json:"compactions,omitempty"`
	Cwd         string `json:"cwd,omitempty"`
	Model       string `json:"model,omitempty"`
	Source      string `json:"source,omitempty"`
	Tip         string `json:"tip,omitempty"`
}

// SessionDetail describes one session.
type SessionDetail struct {
	SessionSummary
	// Prompts is the user prompt of every turn, in order, each shortened
	// to 500 characters.
	Prompts []string `json:"prompts"`
	// ActiveIDs and Pinned are the objects active and pinned.
	ActiveIDs []string `json:"active_ids"`
	Pinned    []string `json:"pinned"`
	// SystemPromptID and ChatID are the session's locked objects.
	SystemPromptID string `json:"system_prompt_id"`
	ChatID         string `json:"chat_id"`
}

// StoreSessions is Sessions over the store: the sessions ctxstore served
// and the recorded ones known only from their commit chains (imported or
// captured transcripts). A session is named by its id, a unique prefix of
// it, or its name in the session index (context/recall, exact then fuzzy,
// as @@ references resolve).
type StoreSessions struct{ Store store.Store }

// ids lists the served sessions and the recorded ones (with their chains).
func (s StoreSessions) ids(ctx context.Context) ([]string, map[string]commits.Chain, error) {
	ids, err := session.List(ctx, s.Store)
	if err != nil {
		return nil, nil, err
	}
	chains, err := commits.New(s.Store, commits.Options{}).Chains(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	recorded := map[string]commits.Chain{}
	for _, c := range chains {
		if !slices.Contains(ids, c.Session) {
			recorded[c.Session] = c
			ids = append(ids, c.Session)
		}
	}
	slices.Sort(ids)
	return ids, recorded, nil
}

// List implements Sessions.
func (s StoreSessions) List(ctx context.Context) ([]SessionSummary, error) {
	ids, recorded, err := s.ids(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]SessionSummary, 0, len(ids))
	for _, id := range ids {
		if c, ok := recorded[id]; ok {
			out = append(out, s.recordedSummary(ctx, c)) // prompts only in Get: they need the content
			continue
		}
		d, err := s.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, d.SessionSummary)
	}
	return out, nil
}

func chainSummary(c commits.Chain) SessionSummary {
	return SessionSummary{ID: c.Session, Harness: c.Harness, Recorded: true, Commits: c.Commits, Compactions: c.Compactions,
		Cwd: c.Cwd, Model: c.Model, Source: c.Source, Tip: c.Tip}
}

// recordedSummary is a recorded session's summary with the number of
// calls derived at import (harness/recorded), when they were.
func (s StoreSessions) recordedSummary(ctx context.Context, c commits.Chain) SessionSummary {
	sum := chainSummary(c)
	if st, ok, err := recorded.ReadState(ctx, s.Store, c.Session, c.Commits); err == nil && ok {
		sum.Calls = st.Calls
	}
	return sum
}

// recordedDetail describes a recorded session from its tip's conversation
// (the main thread from its root, as neutral events): a person's prompts.
func (s StoreSessions) recordedDetail(ctx context.Context, c commits.Chain) (SessionDetail, error) {
	d := SessionDetail{SessionSummary: s.recordedSummary(ctx, c), Prompts: []string{}, ActiveIDs: []string{}, Pinned: []string{}}
	d.Name, d.Description = recallMeta(ctx, s.Store, c.Session)
	m, err := commits.New(s.Store, commits.Options{Registry: formats.Commits()}).Materialize(ctx, commits.MaterializeRequest{ID: c.Tip, Format: commits.FormatEvents, Stop: "root", NoCache: true})
	if err != nil {
		return d, fmt.Errorf("session %s: %w", c.Session, err)
	}
	evs, err := events.Decode(m.Content)
	if err != nil {
		return d, fmt.Errorf("session %s: %w", c.Session, err)
	}
	for _, e := range evs {
		if e.Type == events.Prompt && (e.Source == "" || e.Source == "user") && !e.Meta && e.Text != "" {
			d.Prompts = append(d.Prompts, shorten(e.Text, 500))
		}
	}
	d.Turns = len(d.Prompts)
	if n := len(d.Prompts); n > 0 {
		d.FirstPrompt, d.LastPrompt = shorten(d.Prompts[0], 200), shorten(d.Prompts[n-1], 200)
	}
	return d, nil
}

// Resolve implements Sessions: an id, or a prefix of exactly one id.
func (s StoreSessions) Resolve(ctx context.Context, ref string) (string, error) {
	ref = strings.TrimSpace(strings.TrimPrefix(ref, "@@"))
	if ref == "" {
		return "", errors.New("session: a session id (or a unique prefix of one) is needed")
	}
	ids, _, err := s.ids(ctx)
	if err != nil {
		return "", err
	}
	if slices.Contains(ids, ref) {
		return ref, nil
	}
	var hits []string
	for _, id := range ids {
		if strings.HasPrefix(id, ref) {
			hits = append(hits, id)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		// A name of the session index (exact, then fuzzy), as @@ references resolve.
		id, err := recall.Resolve(ctx, s.Store, ref, recall.Scope{})
		if err == nil {
			return id, nil
		}
		var amb *recall.AmbiguousError
		if errors.As(err, &amb) {
			return "", fmt.Errorf("session %q: %v", ref, err)
		}
		return "", fmt.Errorf("session %q: no session has this id, id prefix or name (%d sessions in the store)", ref, len(ids))
	}
	if len(hits) > 5 {
		hits = append(hits[:5], "…")
	}
	return "", fmt.Errorf("session %q: the prefix names several sessions: %s", ref, strings.Join(hits, ", "))
}

// Get implements Sessions.
func (s StoreSessions) Get(ctx context.Context, id string) (SessionDetail, error) {
	ss, err := session.Open(ctx, s.Store, id)
	if errors.Is(err, store.ErrNotFound) {
		chains, cerr := commits.New(s.Store, commits.Options{}).Chains(ctx, []string{id})
		if cerr != nil {
			return SessionDetail{}, cerr
		}
		if len(chains) == 1 {
			return s.recordedDetail(ctx, chains[0])
		}
	}
	if err != nil {
		return SessionDetail{}, err
	}
	st := ss.State()
	info := ss.Info()
	calls, err := s.Store.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", assemble.CommitType), store.Where("session_id", id)}, Find: []string{"call"}})
	if err != nil {
		return SessionDetail{}, err
	}
	chat, err := ss.Chat(ctx)
	if err != nil {
		return SessionDetail{}, err
	}
	d := SessionDetail{
		SessionSummary: SessionSummary{ID: id, Harness: info.Harness, Turns: len(chat.Chat.Turns), Calls: len(calls),
			Active: len(unlocked(st.Active)), Pool: len(unlocked(st.Pool))},
		Prompts: []string{}, ActiveIDs: unlocked(st.Active), Pinned: unlocked(st.Pinned),
		SystemPromptID: info.SystemPromptID, ChatID: info.ChatID,
	}
	d.Name, d.Description = recallMeta(ctx, s.Store, id)
	for _, t := range chat.Chat.Turns {
		if p := t.UserText(); p != "" {
			d.Prompts = append(d.Prompts, shorten(p, 500))
		}
	}
	if n := len(d.Prompts); n > 0 {
		d.FirstPrompt, d.LastPrompt = shorten(d.Prompts[0], 200), shorten(d.Prompts[n-1], 200)
	}
	return d, nil
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// unlocked leaves out the session's own system prompt and chat.
func unlocked(ids []string) []string {
	out := []string{}
	for _, id := range ids {
		if !session.Locked(id) {
			out = append(out, id)
		}
	}
	return out
}

// CallSummary is one call record in a list: context/assemble's
// "ctx-{session}-{n}", what model call n was shown (not a context commit of
// session/commits, docs/commits.md).
type CallSummary struct {
	N           int    `json:"n"`
	ID          string `json:"id"`
	Parent      string `json:"parent,omitempty"`
	Bytes       int    `json:"bytes"`
	Tokens      int    `json:"tokens"`
	StaleTokens int    `json:"stale_tokens"`
	// RebaseFrom is the item a rebase rewrote the context from (-1: none).
	RebaseFrom int    `json:"rebase_from"`
	Reason     string `json:"reason,omitempty"`
	// Events are the harness events recorded with the call (a fork, a tree
	// navigation, a compaction).
	Events []any `json:"events,omitempty"`
	// A recorded session's call (harness/recorded: a request its harness
	// made, ID its message id): the model, the usage the provider
	// reported and why the prompt cache broke against the previous call
	// (docs/inspector.md, "Recorded sessions").
	Recorded bool                `json:"recorded,omitempty"`
	Model    string              `json:"model,omitempty"`
	Usage    *conversation.Usage `json:"usage,omitempty"`
	Cause    string              `json:"cause,omitempty"`
	Detail   string              `json:"detail,omitempty"`
}

// CallDetail is one call record.
type CallDetail struct {
	CallSummary
	Session     string             `json:"session"`
	Layout      string             `json:"layout"`
	SessionTx   int64              `json:"session_tx"`
	SystemRef   string             `json:"system_ref"`
	BytesSHA256 string             `json:"bytes_sha256"`
	Items       []assemble.ItemDoc `json:"items"`
	Harness     map[string]any     `json:"harness,omitempty"`
}

// CallContext is what a model call was sent.
type CallContext struct {
	Session  string             `json:"session"`
	N        int                `json:"n"`
	System   string             `json:"system"`
	Tools    []string           `json:"tools"`
	Messages []assemble.Message `json:"messages"`
	Bytes    int                `json:"bytes"`
	// Request is a recorded session's call as its harness sent it (an
	// Anthropic Messages body: recorded, or rebuilt from the
	// conversation); System, Tools and Messages are then empty.
	Request json.RawMessage `json:"request,omitempty"`
}

// StoreCalls is Calls over the call records the assembler writes
// (assemble.ReadCommit, assemble.Rebuild).
type StoreCalls struct{ Store store.Store }

func (c StoreCalls) count(ctx context.Context, session string) (int, error) {
	docs, err := c.Store.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", assemble.CommitType), store.Where("session_id", session)}, Find: []string{"call"}})
	if err != nil {
		return 0, err
	}
	return len(docs), nil
}

func (c StoreCalls) pick(ctx context.Context, session string, n int) (int, error) {
	last, err := c.count(ctx, session)
	if err != nil {
		return 0, err
	}
	if last == 0 {
		return 0, fmt.Errorf("session %s has no call record", session)
	}
	if n <= 0 {
		return last, nil
	}
	if n > last {
		return 0, fmt.Errorf("session %s: n %d: the session has %d calls", session, n, last)
	}
	return n, nil
}

// recorded picks call n (0: the last) of a session without call records
// (ok false when it has call records, or no recorded calls either).
func (c StoreCalls) recorded(ctx context.Context, session string, n int) (recorded.Call, bool, error) {
	k, err := c.count(ctx, session)
	if err != nil || k > 0 {
		return recorded.Call{}, false, err
	}
	return c.recordedCall(ctx, session, n)
}

// recordedCalls are the calls of a session without call records: a
// recorded session's (harness/recorded), none for another.
func (c StoreCalls) recordedCalls(ctx context.Context, session string) ([]recorded.Call, error) {
	return recorded.Calls(ctx, commits.New(c.Store, commits.Options{Registry: formats.Commits()}), session)
}

func recordedSummary(r recorded.Call) CallSummary {
	return CallSummary{N: r.N, ID: r.MessageID, Bytes: r.Bytes, Tokens: r.Sent(), RebaseFrom: -1, Recorded: true,
		Model: r.Model, Usage: r.Usage, Cause: r.Cause, Detail: r.Detail}
}

// recordedCall picks call n (0: the last) of a recorded session.
func (c StoreCalls) recordedCall(ctx context.Context, session string, n int) (recorded.Call, bool, error) {
	rc, err := c.recordedCalls(ctx, session)
	if err != nil || len(rc) == 0 {
		return recorded.Call{}, false, err
	}
	if n <= 0 {
		n = len(rc)
	}
	if n > len(rc) {
		return recorded.Call{}, false, fmt.Errorf("session %s: n %d: the session has %d calls", session, n, len(rc))
	}
	return rc[n-1], true, nil
}

func summary(k *assemble.Commit) CallSummary {
	s := CallSummary{N: k.N, ID: k.ID, Parent: k.Parent, Bytes: k.ByteLen, Tokens: k.Tokens, StaleTokens: k.StaleTokens,
		RebaseFrom: k.RebaseFrom, Reason: k.Reason}
	if evs, ok := k.Harness["events"].([]any); ok {
		s.Events = evs
	}
	return s
}

// List implements Commits.
func (c StoreCalls) List(ctx context.Context, session string) ([]CallSummary, error) {
	n, err := c.count(ctx, session)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		rc, err := c.recordedCalls(ctx, session)
		if err != nil {
			return nil, err
		}
		out := make([]CallSummary, 0, len(rc))
		for _, r := range rc {
			out = append(out, recordedSummary(r))
		}
		return out, nil
	}
	out := make([]CallSummary, 0, n)
	for i := 1; i <= n; i++ {
		k, err := assemble.ReadCommit(ctx, c.Store, session, i)
		if err != nil {
			return nil, err
		}
		out = append(out, summary(k))
	}
	return out, nil
}

// Show implements Commits.
func (c StoreCalls) Show(ctx context.Context, session string, n int) (CallDetail, error) {
	if r, ok, err := c.recorded(ctx, session, n); err != nil || ok {
		return CallDetail{CallSummary: recordedSummary(r), Session: session, Layout: "recorded", Items: []assemble.ItemDoc{}}, err
	}
	n, err := c.pick(ctx, session, n)
	if err != nil {
		return CallDetail{}, err
	}
	k, err := assemble.ReadCommit(ctx, c.Store, session, n)
	if err != nil {
		return CallDetail{}, err
	}
	return CallDetail{CallSummary: summary(k), Session: session, Layout: string(k.Layout), SessionTx: k.SessionTx,
		SystemRef: k.SystemRef.String(), BytesSHA256: k.BytesSHA256, Items: k.Items, Harness: k.Harness}, nil
}

// Materialize implements Commits.
func (c StoreCalls) Materialize(ctx context.Context, session string, n int) (CallContext, error) {
	if r, ok, err := c.recorded(ctx, session, n); err != nil {
		return CallContext{}, err
	} else if ok {
		q, err := recorded.CallRequest(ctx, commits.New(c.Store, commits.Options{Registry: formats.Commits()}), session, r)
		if err != nil {
			return CallContext{}, err
		}
		return CallContext{Session: session, N: r.N, Tools: []string{}, Messages: []assemble.Message{}, Bytes: len(q.Body), Request: q.Body}, nil
	}
	n, err := c.pick(ctx, session, n)
	if err != nil {
		return CallContext{}, err
	}
	a, err := assemble.Rebuild(ctx, c.Store, session, n)
	if err != nil {
		return CallContext{}, err
	}
	m := CallContext{Session: session, N: n, System: a.System(), Tools: []string{}, Messages: a.Messages(), Bytes: len(a.Bytes)}
	for _, t := range a.Tools() {
		m.Tools = append(m.Tools, t.Name)
	}
	return m, nil
}
