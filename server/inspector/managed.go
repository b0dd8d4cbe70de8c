package inspector

import (
	"context"

	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/server/ccproxy"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// Managed is a recorded Claude Code session that went through the proxy's
// managed mode: the calls its transcript recorded (what Claude Code asked
// to send) paired with the proxy's ccproxy_call records (what the model
// saw), by ccproxy.Match. The CLI's calls and call, and the inspector's
// call page, show both.
type Managed struct {
	Calls []ccproxy.RecordedCall
	// Sent holds each managed call's request, as the model got it.
	Sent [][]byte
	// byN maps a recorded call's number to its managed call's index;
	// asked holds the recorded calls' requests.
	byN   map[int]int
	asked map[int][]byte
}

// ManagedCall is a recorded call's managed form: the managed call, the
// request the model got and the one Claude Code asked to send (as its
// transcript recorded it), and the tool results that differ.
type ManagedCall struct {
	Call    ccproxy.RecordedCall `json:"call"`
	Sent    []byte               `json:"-"`
	Asked   []byte               `json:"-"`
	Changes []ccproxy.Change     `json:"changes"`
}

// LoadManaged pairs session sid's recorded calls with its managed calls;
// nil when the store holds no managed call of sid.
func LoadManaged(ctx context.Context, st store.Store, sid string) (*Managed, error) {
	calls, err := ccproxy.ReadCalls(ctx, st, sid)
	if err != nil || len(calls) == 0 {
		return nil, err
	}
	sent, err := ccproxy.Bodies(ctx, st, calls)
	if err != nil {
		return nil, err
	}
	d, err := recorded.Derive(ctx, commits.New(st, commits.Options{Registry: formats.Commits()}), sid)
	if err != nil {
		return nil, err
	}
	m := &Managed{Calls: calls, Sent: sent, byN: map[int]int{}, asked: map[int][]byte{}}
	asked := make([]ccproxy.Asked, 0, len(d.Calls))
	for n := 1; n <= len(d.Calls); n++ {
		r, err := d.Request(n)
		if err != nil {
			return nil, err
		}
		asked = append(asked, ccproxy.Asked{N: n, Lane: r.Call.Lane, Time: r.Call.Time, Body: r.Body})
		m.asked[n] = r.Body
	}
	for i, j := range ccproxy.Match(calls, sent, asked) {
		if j >= 0 {
			m.byN[asked[i].N] = j
		}
	}
	return m, nil
}

// For returns recorded call n's managed form (false: none, the request
// went on as Claude Code wrote it or without managed mode).
func (m *Managed) For(n int) (ManagedCall, bool) {
	if m == nil {
		return ManagedCall{}, false
	}
	j, ok := m.byN[n]
	if !ok {
		return ManagedCall{}, false
	}
	return ManagedCall{Call: m.Calls[j], Sent: m.Sent[j], Asked: m.asked[n], Changes: ccproxy.Changes(m.asked[n], m.Sent[j])}, true
}

// managedCall returns recorded call n of session sid (its id: the call
// page found the call by it) in its managed form, for the call page and
// the raw bytes; nil when the call has none. A session without managed
// calls costs one query.
func (h *Handler) managedCall(q *req, sid string, n int) (*ManagedCall, error) {
	m, err := LoadManaged(q.ctx, h.o.Store, sid)
	if err != nil {
		return nil, err
	}
	mc, ok := m.For(n)
	if !ok {
		return nil, nil
	}
	return &mc, nil
}

// managedConversations is how many conversations of recorded session sid
// (its id) went through managed mode, for the session page's note.
func (h *Handler) managedConversations(q *req, sid string) (int, error) {
	cs, err := ccproxy.Conversations(q.ctx, h.o.Store, sid)
	return len(cs), err
}
