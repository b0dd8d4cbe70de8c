package recorded

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// shape is what deriving the first commits of a session needs to know
// of all of it: whether it has a main thread (its sub-agents' records
// then do not count) and whether its harness keeps a tree (Derive's
// rule, counted over every event). Update stores it with the state.
type shape struct{ Main, Parented bool }

// ErrNotBounded says that a stored call's request cannot be rebuilt from
// the commits up to it alone (a call stored before calls recorded their
// commit's depth, or one that the session's later commits change):
// deriving the whole session (Derive) rebuilds it.
var ErrNotBounded = errors.New("the call's request needs the whole session")

// RequestOf rebuilds stored call c's request (c as Page read it) from
// session sid's commits up to the one that holds the call's first event
// (Call.Depth), never past it: a call's page costs the commits before it,
// not the session's. The request derived so must be the one the call was
// stored with (same message, lane, number of messages and bytes), else
// ErrNotBounded. The call's figures are c's: its usage and attribution
// may come from events after its first.
func RequestOf(ctx context.Context, svc *commits.Service, sid string, c Call) (*Request, error) {
	if c.Depth < 0 || c.N < 1 {
		return nil, ErrNotBounded
	}
	sh, err := readShape(ctx, svc.Store(), sid)
	if err != nil {
		return nil, err
	}
	if sh != nil {
		r, err := streamRequest(ctx, svc, sid, c, sh)
		if !errors.Is(err, errLegacy) {
			return r, err
		}
	}
	return wholeRequest(ctx, svc, sid, c, sh)
}

// CallRequest is stored call c's request: RequestOf's, or, when the
// commits up to the call cannot give it (ErrNotBounded: a call stored
// before calls recorded their depth), the one deriving the whole session
// gives.
func CallRequest(ctx context.Context, svc *commits.Service, sid string, c Call) (*Request, error) {
	r, err := RequestOf(ctx, svc, sid, c)
	if !errors.Is(err, ErrNotBounded) {
		return r, err
	}
	d, err := Derive(ctx, svc, sid)
	if err != nil {
		return nil, err
	}
	return d.Request(c.N)
}

// streamRequest is RequestOf by the streaming derivation, a page of
// depths at a time: of the commits read it keeps what the wanted call's
// request holds (its blocks, shared with the requests of the records or
// lanes it may extend), the message ids of the calls before it and, for
// a harness that keeps a tree, the request up to each record; the calls
// before it are counted, not kept. A session whose commits record their
// requests (api-request) is read twice, the requests first, as Derive
// does. errLegacy: the commits cannot be read in one pass (Derive's
// reading, wholeRequest, is used).
func streamRequest(ctx context.Context, svc *commits.Service, sid string, c Call, sh *shape) (*Request, error) {
	var d *deriver
	for _, reqs := range []bool{false, true} {
		d = newDeriver(ctx, svc, sid)
		d.limit, d.fixed, d.want = c.Depth, sh, c.N
		d.assume.Main, d.assume.Requests = sh.Main, reqs
		if err := d.run(); err != nil {
			return nil, err
		}
		if !d.seen.Requests || reqs {
			break
		}
	}
	if onPrefix != nil {
		onPrefix()
	}
	got := d.wanted
	if got == nil {
		return nil, fmt.Errorf("session %s call %d: %w", sid, c.N, ErrNotBounded)
	}
	if !sameRequest(got.Call, c) {
		return nil, fmt.Errorf("session %s call %d: %w", sid, c.N, ErrNotBounded)
	}
	r := &Request{Call: c, PrevN: c.Prev}
	if got.Exact {
		r.Body, r.Spans = exactBody(d.reqs.requests[got.RequestID], d.reqs.blobs, got.Model)
		r.Exact = true
	} else {
		r.Body, r.Spans = got.req.body()
	}
	return r, nil
}

// sameRequest reports whether call got, derived from the commits up to
// stored call c, is c's request: the same message, lane, number of
// messages and bytes, exact or not.
func sameRequest(got, c Call) bool {
	return got.MessageID == c.MessageID && got.Lane == c.Lane && got.Messages == c.Messages && got.Bytes == c.Bytes && got.Exact == c.Exact
}

// onPrefix, when set (by tests), is called when the commits up to a
// call have been read, the deriver that read them still held.
var onPrefix func()

// body writes request l's body from its kept blocks: the bytes
// renderer.write gives for the same events.
func (l reqList) body() ([]byte, []Span) {
	var bs []*block
	for n := l.kept; n != nil && n.b != nil; n = n.prev {
		bs = append(bs, n.b)
	}
	slices.Reverse(bs)
	var system []*block
	var msgs []message
	for _, b := range bs {
		if b.role == "system" {
			system = append(system, b)
			continue
		}
		if n := len(msgs); n > 0 && msgs[n-1].role == b.role {
			msgs[n-1].blocks = append(msgs[n-1].blocks, b)
			continue
		}
		msgs = append(msgs, message{role: b.role, blocks: []*block{b}})
	}
	return writeBody(system, msgs)
}

// wholeRequest is RequestOf by Derive's reading of the commits up to the
// call's, held in memory: a session without a stored shape, or whose
// records cannot be read in one pass.
func wholeRequest(ctx context.Context, svc *commits.Service, sid string, c Call, sh *shape) (*Request, error) {
	cs, err := commitsThrough(ctx, svc, sid, c.Depth)
	if err != nil {
		return nil, err
	}
	d, err := deriveCommits(ctx, svc, sid, cs, len(cs), "", sh, c.N)
	if err != nil {
		return nil, err
	}
	if c.N > len(d.Calls) {
		return nil, fmt.Errorf("session %s call %d: %w", sid, c.N, ErrNotBounded)
	}
	if !sameRequest(d.Calls[c.N-1], c) {
		return nil, fmt.Errorf("session %s call %d: %w", sid, c.N, ErrNotBounded)
	}
	r, err := d.Request(c.N)
	if err != nil {
		return nil, err
	}
	r.Call = c
	return r, nil
}

// readShape reads the shape Update stored with session sid's state (nil:
// none stored; the commits read then decide, as Derive does).
func readShape(ctx context.Context, st store.Store, sid string) (*shape, error) {
	d, err := st.Entity(ctx, StateID(sid), store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m, ok1 := d["main"].(bool)
	p, ok2 := d["parented"].(bool)
	if !ok1 || !ok2 {
		return nil, nil
	}
	return &shape{Main: m, Parented: p}, nil
}

// commitsThrough lists the commits of session sid whose events count
// (commitsOf's rule) at depths up to last, in order (depthPages).
func commitsThrough(ctx context.Context, svc *commits.Service, sid string, last int64) ([]*commits.Commit, error) {
	var out []*commits.Commit
	err := depthPages(ctx, svc, sid, 0, last, func(cs []*commits.Commit) error {
		for _, c := range cs {
			if c.Session == sid && used(c) {
				out = append(out, c)
			}
		}
		return nil
	})
	return out, err
}
