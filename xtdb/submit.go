package xtdb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// ednTxBody renders ops as an EDN submit-tx body: {:tx-ops [[:xtdb.api/put
// doc #inst ...] ...]}, every valid time written out with milliseconds and
// every document as its RFC 8785 canonical form reads (ednDocOf): XTDB
// would keep 1.0 as a double and 1 as a long and fail a match between
// them, where the store contract (and the SQLite backend) compares JSON
// numbers by value; the canonical form has one spelling per number.
func ednTxBody(ops []store.Op) (string, error) {
	var b strings.Builder
	b.WriteString("{:tx-ops [")
	inst := func(t *time.Time) {
		b.WriteString(" #inst ")
		b.WriteString(ednString(store.FormatTime(*t)))
	}
	times := func(op store.Op, both bool) {
		if op.ValidFrom != nil {
			inst(op.ValidFrom)
			if both && op.ValidTo != nil {
				inst(op.ValidTo)
			}
		}
	}
	for i, op := range ops {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch op.Kind {
		case store.OpPut:
			b.WriteString("[:xtdb.api/put ")
			if err := writeEDNDoc(&b, op.Doc); err != nil {
				return "", &store.Error{Op: "submit", Kind: store.ErrInvalid, OpIndex: i + 1, ID: op.ID, Field: "doc", Err: err}
			}
			times(op, true)
		case store.OpDelete:
			b.WriteString("[:xtdb.api/delete " + ednString(op.ID))
			times(op, true)
		case store.OpMatch:
			b.WriteString("[:xtdb.api/match " + ednString(op.ID) + " ")
			if op.Doc == nil {
				b.WriteString("nil")
			} else if err := writeEDNDoc(&b, op.Doc); err != nil {
				return "", &store.Error{Op: "submit", Kind: store.ErrInvalid, OpIndex: i + 1, ID: op.ID, Field: "doc", Err: err}
			}
			times(op, false)
		default:
			b.WriteString("[:xtdb.api/evict " + ednString(op.ID))
		}
		b.WriteByte(']')
	}
	b.WriteString("]}")
	return b.String(), nil
}

// writeEDNDoc writes doc in its canonical JSON form (store.Canonical) as
// EDN: canonical JSON writes a whole number without a fraction (1.0 as 1),
// which EDN then reads as a long, and any other number as a double.
func writeEDNDoc(b *strings.Builder, doc store.Doc) error {
	c, err := store.Canonical(doc)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(c))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return err
	}
	return writeEDNMap(b, m)
}

// Submit implements store.Store. The transaction is logged when Submit
// returns; it is indexed (and its abort known) after AwaitTx.
func (s *Store) Submit(ctx context.Context, ops []store.Op) (store.Tx, error) {
	ops, err := store.Normalize(ops)
	if err != nil {
		return store.Tx{}, err
	}
	if err := store.CheckReserved(ctx, ops); err != nil {
		return store.Tx{}, err
	}
	puts := map[string]bool{}
	for _, op := range ops {
		if op.Kind == store.OpPut {
			puts[op.ID] = true
		}
	}
	for _, op := range ops {
		if op.Kind != store.OpPut && !(op.Kind == store.OpMatch && puts[op.ID]) {
			// The log names this op's entity only by hash; a put's id is in
			// its document (and an evicted put's entity in its evict op).
			// A match whose entity the same transaction puts (a create-only
			// commit, a session head's new version) is named by that put
			// when the log is read (TxLog adds a page's puts first), so
			// remembering it would only fill the cache: one entry per call
			// in a long session. A delete or evict is
			// remembered even then: an evicted put's document is gone.
			s.ids.add(op.ID)
		}
	}
	// EDN, not JSON: XTDB's JSON reader makes small integers
	// java.lang.Integer (content hashes then differ from the same document
	// written as EDN) and reads an "xt/fn" value as code.
	body, err := ednTxBody(ops)
	if err != nil {
		return store.Tx{}, err
	}
	// Any transaction of ours that lands comes after the latest this
	// client has seen.
	before := s.lastSeen.Load()
	r := request{op: "submit", method: http.MethodPost, path: "/submit-tx", body: []byte(body), ctype: "application/edn", accept: "application/edn"}
	delay := s.o.Backoff
	for attempt := 0; ; attempt++ {
		data, err := s.do(ctx, r)
		if err == nil {
			v, derr := decodeEDN(data)
			if derr != nil {
				return store.Tx{}, &store.Error{Op: "submit", Kind: store.ErrUnavailable, Msg: "unexpected answer", Err: derr}
			}
			tx, err := txFromEDN(v)
			if err != nil {
				return store.Tx{}, &store.Error{Op: "submit", Kind: store.ErrUnavailable, Msg: "unexpected answer", Err: err}
			}
			s.seen(tx.ID)
			return tx, nil
		}
		if !transient(err) || attempt >= s.o.Retries || s.closed.Load() {
			return store.Tx{}, err
		}
		if !errors.Is(err, errNotSent) {
			// The server may have logged the transaction: find out before
			// sending it again.
			tx, found, rerr := s.findSubmitted(ctx, before, ops)
			if rerr != nil {
				return store.Tx{}, fmt.Errorf("%w (and whether the transaction landed is unknown: %v)", err, rerr)
			}
			if found {
				return tx, nil
			}
		}
		select {
		case <-ctx.Done():
			return store.Tx{}, &store.Error{Op: "submit", Kind: store.ErrUnavailable, Err: ctx.Err()}
		case <-time.After(delay):
		}
		delay *= 2
	}
}

// latestSubmitted returns the latest logged tx id, -1 if none.
func (s *Store) latestSubmitted(ctx context.Context) (int64, error) {
	return s.latestTx(ctx, "submit", "/latest-submitted-tx")
}

// latestCompleted returns the latest indexed tx id, -1 if none.
func (s *Store) latestCompleted(ctx context.Context) (int64, error) {
	return s.latestTx(ctx, "tx-committed", "/latest-completed-tx")
}

// latestTx reads the tx id of one of the node's latest-tx endpoints (path),
// -1 when the node has none; op names the operation in errors.
func (s *Store) latestTx(ctx context.Context, op, path string) (int64, error) {
	v, err := s.readEDN(ctx, request{op: op, method: http.MethodGet, path: path})
	if errors.Is(err, store.ErrNotFound) {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	m, ok := ednMap(v)
	if !ok {
		return -1, nil
	}
	id, err := ednInt(m["xtdb.api/tx-id"])
	if err != nil {
		return 0, &store.Error{Op: op, Kind: store.ErrUnavailable, Msg: strings.TrimPrefix(path, "/"), Err: err}
	}
	return id, nil
}

// findSubmitted waits for the server to answer, lets it index what was
// logged, and looks in the log after tx `after` for a transaction with
// exactly ops.
func (s *Store) findSubmitted(ctx context.Context, after int64, ops []store.Op) (store.Tx, bool, error) {
	latest, err := s.latestSubmitted(ctx)
	if err != nil {
		return store.Tx{}, false, err
	}
	if latest <= after {
		return store.Tx{}, false, nil
	}
	if _, err := s.AwaitTx(ctx, latest, 0); err != nil {
		return store.Tx{}, false, err
	}
	log, err := s.TxLog(ctx, after, 0)
	if err != nil {
		return store.Tx{}, false, err
	}
	for _, lt := range log {
		if sameOps(lt.Ops, ops) {
			return lt.Tx, true, nil
		}
	}
	// An aborted transaction is not in the log: check the ids in between.
	for id := after + 1; id <= latest; id++ {
		if ok, err := s.TxCommitted(ctx, id); err == nil && !ok && !inLog(log, id) {
			// An aborted tx whose ops we cannot see; it had no effect, so
			// sending ours again is safe only if it was not ours. We cannot
			// tell: report it as ours, aborted.
			return store.Tx{ID: id}, true, nil
		}
	}
	return store.Tx{}, false, nil
}

func inLog(log []store.LoggedTx, id int64) bool {
	for _, lt := range log {
		if lt.ID == id {
			return true
		}
	}
	return false
}

func sameOps(a, b []store.Op) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Kind != y.Kind || x.ID != y.ID || !sameTime(x.ValidFrom, y.ValidFrom) || !sameTime(x.ValidTo, y.ValidTo) {
			return false
		}
		if (x.Doc == nil) != (y.Doc == nil) || (x.Doc != nil && !store.SameDoc(x.Doc, y.Doc)) {
			return false
		}
	}
	return true
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// txFromEDN reads {:xtdb.api/tx-id N, :xtdb.api/tx-time #inst ...}.
func txFromEDN(v any) (store.Tx, error) {
	m, ok := ednMap(v)
	if !ok {
		return store.Tx{}, fmt.Errorf("expected a tx map, got %T", v)
	}
	id, err := ednInt(m["xtdb.api/tx-id"])
	if err != nil {
		return store.Tx{}, fmt.Errorf("tx-id: %w", err)
	}
	t, err := ednTime(m["xtdb.api/tx-time"])
	if err != nil {
		return store.Tx{}, fmt.Errorf("tx-time: %w", err)
	}
	return store.Tx{ID: id, Time: t}, nil
}

// AwaitTx implements store.Store with /await-tx, always with a timeout.
func (s *Store) AwaitTx(ctx context.Context, txID int64, timeout time.Duration) (store.Tx, error) {
	if timeout <= 0 {
		timeout = s.o.AwaitTimeout
	}
	q := url.Values{"tx-id": {strconv.FormatInt(txID, 10)}, "timeout": {strconv.FormatInt(timeout.Milliseconds(), 10)}}
	v, err := s.readEDN(ctx, request{op: "await", method: http.MethodGet, path: "/await-tx", query: q, wait: timeout})
	if err != nil {
		var se *store.Error
		if errors.As(err, &se) && se.Kind != store.ErrUnavailable {
			se.Kind = store.ErrUnavailable // a timeout comes back as a server error
		}
		return store.Tx{}, err
	}
	tx, err := txFromEDN(v)
	if err != nil {
		return store.Tx{}, &store.Error{Op: "await", Kind: store.ErrUnavailable, Err: err}
	}
	s.seen(tx.ID)
	if tx.ID < txID {
		return tx, store.Errorf("await", store.ErrUnavailable, "", fmt.Sprintf("tx %d not indexed within %s", txID, timeout))
	}
	return tx, nil
}

// TxCommitted implements store.Store. XTDB answers a tx id it has not
// indexed with an error whose form differs by server (XTDB 1.24.5's module:
// an empty 500 under EDN, its handler returns the NodeOutOfSyncException as
// the body; the JSON form carries "NodeOutOfSync"), so on any error answer
// the driver asks for the latest indexed tx: an id beyond it is not found.
func (s *Store) TxCommitted(ctx context.Context, txID int64) (bool, error) {
	q := url.Values{"tx-id": {strconv.FormatInt(txID, 10)}}
	v, err := s.readEDN(ctx, request{op: "tx-committed", method: http.MethodGet, path: "/tx-committed", query: q})
	if err != nil {
		var he *httpError
		if !errors.As(err, &he) {
			return false, err
		}
		latest, lerr := s.latestCompleted(ctx)
		if lerr != nil {
			return false, errors.Join(err, lerr)
		}
		if txID > latest {
			return false, &store.Error{Op: "tx-committed", Kind: store.ErrNotFound, Msg: fmt.Sprintf("tx %d is not indexed (latest indexed: %d)", txID, latest), Err: err}
		}
		return false, err
	}
	m, _ := ednMap(v)
	ok, isBool := m["tx-committed?"].(bool)
	if !isBool {
		return false, store.Errorf("tx-committed", store.ErrUnavailable, "", fmt.Sprintf("unexpected answer %v", v))
	}
	return ok, nil
}
