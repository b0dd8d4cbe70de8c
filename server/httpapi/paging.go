package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// Lists answer a page at a time: at most limit entries (DefaultPageLimit
// when not given, never more than MaxPageLimit) and, when more follow, a
// next cursor that reaches them; docs/service.md, "Pages".
const (
	DefaultPageLimit = 200
	MaxPageLimit     = 1000
)

// pageLimit reads a page size from the query parameters named (the first
// one given wins): a count from 1 to MaxPageLimit; absent or 0 is
// DefaultPageLimit.
func pageLimit(v url.Values, names ...string) (int, error) {
	for _, name := range names {
		s := v.Get(name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > MaxPageLimit {
			return 0, badRequest("%s: want a count from 1 to %d, got %q", name, MaxPageLimit, s)
		}
		if n == 0 {
			return DefaultPageLimit, nil
		}
		return n, nil
	}
	return DefaultPageLimit, nil
}

// historyCursor is the position of the first history entry a page did not
// answer: its valid time and transaction. It travels as an opaque string.
type historyCursor struct {
	vt time.Time
	tx int64
}

func (c historyCursor) String() string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d:%d", c.vt.UnixNano(), c.tx))
}

func parseHistoryCursor(s string) (historyCursor, error) {
	bad := badRequest("cursor: not a cursor this server answered")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return historyCursor{}, bad
	}
	vt, tx, ok := strings.Cut(string(b), ":")
	if !ok {
		return historyCursor{}, bad
	}
	ns, err1 := strconv.ParseInt(vt, 10, 64)
	n, err2 := strconv.ParseInt(tx, 10, 64)
	if err1 != nil || err2 != nil || n < 0 {
		return historyCursor{}, bad
	}
	return historyCursor{vt: time.Unix(0, ns).UTC(), tx: n}, nil
}

// before reports whether e comes before the cursor in the order asked, so
// a page starting at the cursor leaves it out. Without corrections a valid
// time has one entry, so the valid time alone places it (a correction
// written since the previous page replaces its entry rather than hiding
// it); with corrections the transaction orders entries of one valid time.
func (c historyCursor) before(e store.HistoryEntry, o store.HistoryOptions) bool {
	d := e.ValidTime.Compare(c.vt)
	if d == 0 && o.WithCorrections {
		d = cmpInt(e.TxID, c.tx)
	}
	if o.Order == store.Desc {
		return d > 0
	}
	return d < 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// queryCursor continues a POST /v1/query answer. It pins the basis the
// first page was read at (the latest transaction and the valid time of
// that request, unless the request named them), so the answer it pages
// through is fixed: at one basis a query's answer is a set in a
// deterministic order (order_by, then the id). It holds the id of the
// last document answered and, for a query with an order_by, the offset
// of the next page in that order (the next page checks that the answer
// still has that id there, which only an evict since the first page
// changes); a query without one is in id order, and its next page is
// the documents after that id (Key: a keyset cursor, no offset). It also
// holds a hash of the request's where, find, order_by and basis, so it
// continues only the query that made it. It travels as base64url JSON
// with a checksum, opaque to clients.
type queryCursor struct {
	TxID      *int64 `json:"tx,omitempty"`
	TxTime    *int64 `json:"tt,omitempty"` // Unix nanoseconds
	ValidTime int64  `json:"vt"`           // Unix nanoseconds
	Offset    int    `json:"off,omitempty"`
	Key       bool   `json:"key,omitempty"`
	Last      string `json:"last"`
	Query     string `json:"q"`
}

// querySum is the checksum of a cursor's JSON text: it tells a cursor
// this server made from a damaged or hand-edited one (it is no secret: a
// forged cursor reads only what the same query could).
func querySum(b []byte) string {
	h := sha256.Sum256(append([]byte("ctxstore query cursor\x00"), b...))
	return base64.RawURLEncoding.EncodeToString(h[:12])
}

func (c queryCursor) String() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b) + "." + querySum(b)
}

// maxQueryOffset bounds a cursor's offset far beyond any answer a store
// holds, so offset and page never overflow.
const maxQueryOffset = 1 << 40

func parseQueryCursor(s string) (queryCursor, error) {
	var c queryCursor
	bad := badRequest("cursor: not a cursor this server answered for a query")
	body, sum, ok := strings.Cut(s, ".")
	if !ok {
		return c, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || querySum(b) != sum {
		return c, bad
	}
	if err := json.Unmarshal(b, &c); err != nil || (!c.Key && (c.Offset <= 0 || c.Offset > maxQueryOffset)) || (c.Key && c.Offset != 0) ||
		c.Last == "" || c.Query == "" || (c.TxID != nil && *c.TxID < 0) {
		return c, bad
	}
	return c, nil
}

// basis is the basis the cursor pins.
func (c queryCursor) basis() store.Basis {
	b := store.Basis{ValidTime: time.Unix(0, c.ValidTime).UTC(), TxID: c.TxID}
	if c.TxTime != nil {
		t := time.Unix(0, *c.TxTime).UTC()
		b.TxTime = &t
	}
	return b
}

// queryHash names a query request apart from its page: its where, find,
// order_by and basis as sent.
func queryHash(req QueryRequest) string {
	b, _ := json.Marshal(struct {
		Where   []store.Pred  `json:"where"`
		Find    []string      `json:"find"`
		OrderBy []store.Order `json:"order_by"`
		Basis   *BasisJSON    `json:"basis"`
	}{req.Where, req.Find, req.OrderBy, req.Basis})
	h := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(h[:16])
}
