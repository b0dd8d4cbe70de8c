package httpapi

import (
	"encoding/base64"
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
