package httpapi

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// basisOf reads a basis from query parameters tx_id, tx_time and
// valid_time (RFC 3339).
func basisOf(v url.Values) (store.Basis, error) {
	var b store.Basis
	if s := v.Get("valid_time"); s != "" {
		t, err := store.ParseTime(s)
		if err != nil {
			return b, badRequest("valid_time: %v", err)
		}
		b.ValidTime = t
	}
	if s := v.Get("tx_id"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return b, badRequest("tx_id: want a transaction id, got %q", s)
		}
		b.TxID = &n
	}
	if s := v.Get("tx_time"); s != "" {
		if b.TxID != nil {
			return b, badRequest("give tx_id or tx_time, not both")
		}
		t, err := store.ParseTime(s)
		if err != nil {
			return b, badRequest("tx_time: %v", err)
		}
		b.TxTime = &t
	}
	return b, nil
}

// ObjectResponse is GET /v1/objects/{id}: the document visible at the
// basis and the point that makes it.
type ObjectResponse struct {
	ID          string    `json:"id"`
	Doc         store.Doc `json:"doc"`
	TxID        int64     `json:"tx_id"`
	TxTime      time.Time `json:"tx_time"`
	ValidTime   time.Time `json:"valid_time"`
	ContentHash string    `json:"content_hash"`
}

func (s *Server) object(q *request) (any, error) {
	id := q.r.PathValue("id")
	b, err := basisOf(q.r.URL.Query())
	if err != nil {
		return nil, err
	}
	et, err := s.st.EntityTx(q.ctx, id, b)
	if err != nil {
		return nil, err
	}
	if et.Deleted {
		return nil, store.Errorf("entity", store.ErrNotFound, id, "deleted at this basis")
	}
	// Read the document at the point's own transaction, so that it and the
	// point agree even if a write lands in between.
	at := store.AtTx(et.TxID, b.ValidTime)
	doc, err := s.st.Entity(q.ctx, id, at)
	if err != nil {
		return nil, err
	}
	// A chat is read whole: its head and its turns.
	if doc, err = session.ChatViewDoc(q.ctx, s.st, doc, at); err != nil {
		return nil, err
	}
	return ObjectResponse{ID: id, Doc: doc, TxID: et.TxID, TxTime: et.TxTime, ValidTime: et.ValidTime, ContentHash: et.ContentHash}, nil
}

// HistoryResponse is GET /v1/history/{id}: one page of the versions;
// Next, when set, is the cursor of the following page.
type HistoryResponse struct {
	ID      string               `json:"id"`
	Entries []store.HistoryEntry `json:"entries"`
	Next    string               `json:"next,omitempty"`
}

func (s *Server) history(q *request) (any, error) {
	id := q.r.PathValue("id")
	v := q.r.URL.Query()
	b, err := basisOf(v)
	if err != nil {
		return nil, err
	}
	o := store.HistoryOptions{Order: store.Desc, Basis: b}
	switch v.Get("order") {
	case "", "desc":
	case "asc":
		o.Order = store.Asc
	default:
		return nil, badRequest("order: want asc or desc")
	}
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"with_docs", &o.WithDocs}, {"with_corrections", &o.WithCorrections}} {
		if s := v.Get(f.name); s != "" {
			x, err := strconv.ParseBool(s)
			if err != nil {
				return nil, badRequest("%s: want true or false", f.name)
			}
			*f.dst = x
		}
	}
	es, next, err := s.historyPage(q, id, o)
	if err != nil {
		return nil, err
	}
	return HistoryResponse{ID: id, Entries: es, Next: next}, nil
}

// historyPage reads one page of id's history as o asks, from the query's
// limit and cursor: the entries and the cursor of the next page ("" at
// the end).
func (s *Server) historyPage(q *request, id string, o store.HistoryOptions) ([]store.HistoryEntry, string, error) {
	v := q.r.URL.Query()
	limit, err := pageLimit(v, "limit")
	if err != nil {
		return nil, "", err
	}
	var cur *historyCursor
	if c := v.Get("cursor"); c != "" {
		hc, err := parseHistoryCursor(c)
		if err != nil {
			return nil, "", err
		}
		// The store reads from the cursor's valid time on (the start bound
		// is inclusive in either order); entries of that valid time the
		// previous page answered are left out below.
		cur, o.StartValidTime = &hc, &hc.vt
	}
	// One page and the entry after it (which makes the next cursor), and
	// no more: the store stops reading there (HistoryOptions.Limit). From
	// a cursor, the entries of its valid time the previous page answered
	// (with corrections, one valid time holds many) come first and are
	// left out, so a read that they fill is made again, longer.
	want := limit + 1
	o.Limit = want
	var es []store.HistoryEntry
	for {
		all, err := s.st.History(q.ctx, id, o)
		if err != nil {
			return nil, "", err
		}
		skip := 0
		for cur != nil && skip < len(all) && cur.before(all[skip], o) {
			skip++
		}
		if len(all)-skip >= want || !o.Full(len(all)) {
			es = all[skip:]
			break
		}
		o.Limit = max(2*o.Limit, skip+want)
	}
	next := ""
	if len(es) > limit {
		next = historyCursor{vt: es[limit].ValidTime, tx: es[limit].TxID}.String()
		es = es[:limit:limit]
	}
	if es == nil {
		es = []store.HistoryEntry{}
	}
	return es, next, nil
}

// QueryRequest is the body of POST /v1/query: a portable query, its
// basis, and the cursor of the page wanted (absent: the first).
type QueryRequest struct {
	store.Query
	Basis  *BasisJSON `json:"basis,omitempty"`
	Cursor string     `json:"cursor,omitempty"`
}

// BasisJSON is a basis in a request body.
type BasisJSON struct {
	ValidTime string `json:"valid_time,omitempty"`
	TxID      *int64 `json:"tx_id,omitempty"`
	TxTime    string `json:"tx_time,omitempty"`
}

// QueryResponse is the answer of POST /v1/query: one page of at most the
// query's limit (MaxPageLimit when it names none) of the matching
// documents; Next, when more matched, is the cursor of the following page
// and Truncated is then true.
type QueryResponse struct {
	Docs      []store.Doc `json:"docs"`
	Next      string      `json:"next,omitempty"`
	Truncated bool        `json:"truncated,omitempty"`
}

func (s *Server) query(q *request) (any, error) {
	var req QueryRequest
	if err := q.decode(&req); err != nil {
		return nil, err
	}
	if b := req.Basis; b != nil {
		v := url.Values{}
		if b.ValidTime != "" {
			v.Set("valid_time", b.ValidTime)
		}
		if b.TxID != nil {
			v.Set("tx_id", strconv.FormatInt(*b.TxID, 10))
		}
		if b.TxTime != "" {
			v.Set("tx_time", b.TxTime)
		}
		basis, err := basisOf(v)
		if err != nil {
			return nil, err
		}
		req.Query.Basis = basis
	}
	if err := req.Query.Validate(); err != nil {
		return nil, err
	}
	// The answer is a page: at most the limit (MaxPageLimit when none is
	// named), and one more document is asked to tell whether more matched.
	limit := req.Limit
	if limit > MaxPageLimit {
		return nil, badRequest("limit: at most %d, got %d", MaxPageLimit, limit)
	}
	if limit == 0 {
		limit = MaxPageLimit
	}
	hash := queryHash(req)
	if req.Cursor != "" {
		c, err := parseQueryCursor(req.Cursor)
		if err != nil {
			return nil, err
		}
		if c.Query != hash {
			return nil, badRequest("cursor: made for another query (send the where, find, order_by and basis of the first page with it)")
		}
		if c.Key {
			if len(req.OrderBy) > 0 {
				return nil, badRequest("cursor: made for another query (send the where, find, order_by and basis of the first page with it)")
			}
			return s.queryAfter(q, req.Query, c, limit)
		}
		return s.queryFrom(q, req.Query, c, limit) // an offset cursor (order_by, or made by an earlier server)
	}
	c := queryCursor{ValidTime: req.Query.Basis.ValidTime.UnixNano(), Query: hash}
	if req.Query.Basis.ValidTime.IsZero() {
		c.ValidTime = time.Now().UnixNano()
	}
	switch b := req.Query.Basis; {
	case b.TxID != nil:
		c.TxID = b.TxID
	case b.TxTime != nil:
		tt := b.TxTime.UnixNano()
		c.TxTime = &tt
	default:
		st, err := s.st.Status(q.ctx)
		if err != nil {
			return nil, err
		}
		if st.LatestCompleted == nil {
			return QueryResponse{Docs: []store.Doc{}}, nil // no transaction, no documents
		}
		c.TxID = &st.LatestCompleted.ID
	}
	req.Query.Basis = c.basis()
	req.Limit = limit + 1
	docs, err := s.st.Query(q.ctx, req.Query)
	if err != nil {
		return nil, err
	}
	c.Key = len(req.OrderBy) == 0
	return cutPage(docs, limit, c), nil
}

// cutPage answers a page asked with one document more than limit: when
// that one came, the page ends at limit and cursor c, moved past the page
// (its last id; an offset cursor's offset too), names the next.
func cutPage(docs []store.Doc, limit int, c queryCursor) QueryResponse {
	out := QueryResponse{Docs: docs}
	if len(docs) > limit {
		out.Docs = docs[:limit:limit]
		c.Last = docID(docs[limit-1])
		if !c.Key {
			c.Offset += limit
		}
		out.Next, out.Truncated = c.String(), true
	}
	if out.Docs == nil {
		out.Docs = []store.Doc{}
	}
	return out
}

// queryAfter answers the page of query qu (in id order: no order_by) that
// keyset cursor c starts: the documents after c's last id, at the basis
// c pins, one more asked to tell whether more follow. It reads neither
// the documents nor the ids before the page; the store still reads the
// matches after the key to order them (docs/service.md, "Pages").
func (s *Server) queryAfter(q *request, qu store.Query, c queryCursor, limit int) (any, error) {
	qu.Basis = c.basis()
	qu.Where = append(slices.Clip(qu.Where), store.Pred{Field: store.IDKey, Op: store.Gt, Value: c.Last})
	qu.Limit = limit + 1
	docs, err := s.st.Query(q.ctx, qu)
	if err != nil {
		return nil, err
	}
	return cutPage(docs, limit, c), nil
}

// queryFrom answers the page of query qu (with an order_by) that offset
// cursor c starts, at the basis c pins. The ids of the documents up to the page's end are read in
// the answer's order (the query projected to the id), the cursor's last
// id is checked at its place, and the page's documents are read by their
// ids. A page so reads the ids before it but only its own documents: the
// store orders every match before it cuts any page, first or not.
func (s *Server) queryFrom(q *request, qu store.Query, c queryCursor, limit int) (any, error) {
	qu.Basis = c.basis()
	ids := qu
	ids.Find, ids.Limit = []string{store.IDKey}, c.Offset+limit+1
	heads, err := s.st.Query(q.ctx, ids)
	if err != nil {
		return nil, err
	}
	if len(heads) < c.Offset || docID(heads[c.Offset-1]) != c.Last {
		return nil, errorf(http.StatusConflict, CodeConflict, "cursor: the answer at its basis changed since its first page (documents were evicted); start again without a cursor")
	}
	end := min(c.Offset+limit, len(heads))
	page := make([]any, 0, end-c.Offset)
	for _, d := range heads[c.Offset:end] {
		page = append(page, docID(d))
	}
	out := QueryResponse{Docs: []store.Doc{}}
	if len(page) > 0 {
		qu.Where = append(slices.Clip(qu.Where), store.Pred{Field: store.IDKey, Op: store.In, Values: page})
		qu.Limit = 0
		docs, err := s.st.Query(q.ctx, qu)
		if err != nil {
			return nil, err
		}
		if docs != nil {
			out.Docs = docs
		}
	}
	if len(heads) > end {
		c.Offset, c.Last = end, docID(heads[end-1])
		out.Next, out.Truncated = c.String(), true
	}
	return out, nil
}

// docID is the id of a query's answer.
func docID(d store.Doc) string {
	id, _ := d[store.IDKey].(string)
	return id
}
