package inspect

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// Object is an object's history on both time axes, and which calls showed
// which of its versions.
type Object struct {
	ID       string `json:"id"`
	Kind     string `json:"kind,omitempty"`
	Nickname string `json:"nickname,omitempty"`
	// Versions are every version, oldest transaction first, with the calls
	// that showed each.
	Versions []Version `json:"versions"`
	// Sessions are the sessions searched (those whose index holds the
	// object, among the ones the grant allows).
	Sessions []string `json:"sessions"`
	// Invalid says why the object's current document is not a valid
	// object (an object kind whose identity, content or metadata view
	// hash does not match its fields), empty when it is or when it is not
	// an object: the page shows its history all the same.
	Invalid string `json:"invalid,omitempty"`
	// Unreadable lists the sessions whose state could not be read (a
	// damaged session object): they are left out of Sessions and the
	// page says so, rather than failing for every object.
	Unreadable []Unreadable `json:"unreadable,omitempty"`
	// After is the session the sessions of this page follow (empty: the
	// first page); More, when set, is the last session this page looked
	// at: the next page (ObjectFrom with after = More) looks at the
	// sessions after it. Sessions are looked at in id order.
	After string `json:"after,omitempty"`
	More  string `json:"more,omitempty"`
	// OlderVersions is set when the object has more versions than a page
	// shows (ObjectVersionsShown): Versions are its latest ones, and calls
	// that showed an older version are not attributed.
	OlderVersions bool `json:"older_versions,omitempty"`
	// CallsCut lists the sessions whose calls the page did not walk to
	// the end (more than ObjectCallsWalked): Shown covers their first
	// ObjectCallsWalked calls.
	CallsCut []CallsCut `json:"calls_cut,omitempty"`
}

// CallsCut is a session whose calls an object's page walked only in part:
// calls 1 to Walked of its Calls.
type CallsCut struct {
	Session string `json:"session_id"`
	Walked  int    `json:"walked"`
	Calls   int    `json:"calls"`
}

// An object's page reads the sessions of the store a page at a time, in
// id order, so its cost does not grow with the number of sessions: it
// reads at most ObjectSessionsRead sessions' states (to learn whether
// their index holds the object) and walks the call records of at most
// ObjectSessionsShown of them (those whose index holds it), then stops
// and names where the next page starts. A token limited to sessions is
// the exception: its page goes on past the bounds until it finds one
// session of its own that uses the object (else the object is not
// found for it), and it reads only its own sessions' states.
//
// Within that, a page shows at most ObjectVersionsShown of the object's
// versions (its latest, by valid time: the history is read no further)
// and walks at most ObjectCallsWalked call records of each session
// (its first calls), saying so when it stops short (OlderVersions,
// CallsCut): a page's reads are bounded by these constants, however long
// the object's history or a session.
const (
	ObjectSessionsRead  = 200
	ObjectSessionsShown = 20
	ObjectVersionsShown = 200
	ObjectCallsWalked   = 2000
)

// objectVersionsShown and objectCallsWalked are the bounds, variables for
// the tests.
var (
	objectVersionsShown = ObjectVersionsShown
	objectCallsWalked   = ObjectCallsWalked
)

// objectSessionBatch is how many session ids one listing query reads.
const objectSessionBatch = ObjectSessionsRead + 1

// Unreadable is a session a page could not read, and why.
type Unreadable struct {
	Session string `json:"session_id"`
	Error   string `json:"error"`
}

// Version is one version of an object.
type Version struct {
	// Tx is the transaction that wrote it; TxTime when (transaction time);
	// ValidTime the time it is valid from (valid time).
	Tx          int64     `json:"tx"`
	TxTime      time.Time `json:"tx_time"`
	ValidTime   time.Time `json:"valid_time"`
	ContentHash string    `json:"content_hash,omitempty"`
	Deleted     bool      `json:"deleted,omitempty"`
	// Shown lists the runs of consecutive calls that showed this version,
	// per session and way of showing (content, metadata line, collapsed,
	// tool result).
	Shown []Shown `json:"shown,omitempty"`
}

// Shown is a run of calls of one session that showed a version one way.
type Shown struct {
	Session string `json:"session_id"`
	From    int    `json:"from"`
	To      int    `json:"to"`
	As      string `json:"as"`
}

// Object reads an object's history (every version on both time axes) and
// walks the call records of the sessions that index it to find which calls
// showed which version: the first page of those sessions (ObjectFrom).
// Limit the search to one session with only (empty: every allowed one).
func (in *Inspector) Object(ctx context.Context, id, only string) (*Object, error) {
	return in.ObjectFrom(ctx, id, only, "")
}

// ObjectFrom is Object for the page of sessions after session after (in
// id order; empty: from the first). The walk reads the call records of
// the page's sessions that index the object whole.
func (in *Inspector) ObjectFrom(ctx context.Context, id, only, after string) (*Object, error) {
	if only != "" {
		if err := in.exists(ctx, only); err != nil {
			return nil, err
		}
	}
	if _, sid, ok := objects.SessionIDOf(id); ok && !in.allowed(sid) {
		return nil, fmt.Errorf("object %s: %w", id, ErrNotFound) // another session's chat, prompt or head
	}
	h, err := in.st.History(ctx, id, store.HistoryOptions{Order: store.Desc, Limit: objectVersionsShown + 1})
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", id, err)
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("object %s: %w", id, ErrNotFound)
	}
	o := &Object{ID: id}
	if len(h) > objectVersionsShown {
		h, o.OlderVersions = h[:objectVersionsShown], true
	}
	if doc, err := in.st.Entity(ctx, id, store.Basis{}); err == nil {
		o.Kind, o.Nickname = asString(doc["type"]), asString(doc["nickname"])
		if src, ok := doc["source"].(map[string]any); ok && o.Nickname == "" {
			o.Nickname = asString(src["path"]) // a file: its path
		}
		if objects.Kind(o.Kind).Valid() {
			ob, err := objects.FromDoc(doc)
			if err == nil {
				err = ob.VerifyHashes()
			}
			if err != nil {
				o.Invalid = err.Error()
			}
		}
	}
	for _, e := range h {
		o.Versions = append(o.Versions, Version{Tx: e.TxID, TxTime: e.TxTime, ValidTime: e.ValidTime, ContentHash: e.ContentHash, Deleted: e.Deleted})
	}
	sort.SliceStable(o.Versions, func(i, j int) bool { return o.Versions[i].Tx < o.Versions[j].Tx })
	if only != "" {
		if err := in.objectSession(ctx, only, o); err != nil {
			return nil, err
		}
	} else if err := in.objectSessions(ctx, after, o); err != nil {
		return nil, err
	}
	if in.o.Allowed != nil && len(o.Sessions) == 0 {
		// a limited grant sees only objects its sessions use
		return nil, fmt.Errorf("object %s: %w", id, ErrNotFound)
	}
	return o, nil
}

// objectSessions looks at the sessions after after, in id order, for
// those whose index holds o, a page at a time (ObjectSessionsRead,
// ObjectSessionsShown), listing their ids a batch at a time.
func (in *Inspector) objectSessions(ctx context.Context, after string, o *Object) error {
	o.After = after
	read, last := 0, after
	for {
		where := []store.Pred{store.Where("type", string(objects.KindSession))}
		if last != "" {
			where = append(where, store.Pred{Field: "session_id", Op: store.Gt, Value: last})
		}
		docs, err := in.st.Query(ctx, store.Query{Where: where, Find: []string{"session_id"},
			OrderBy: []store.Order{{Field: "session_id"}}, Limit: objectSessionBatch})
		if err != nil {
			return fmt.Errorf("listing sessions: %w", err)
		}
		for _, d := range docs {
			sid, _ := d["session_id"].(string)
			if sid == "" {
				continue
			}
			if !in.allowed(sid) {
				last = sid
				continue
			}
			full := read >= ObjectSessionsRead || len(o.Sessions) >= ObjectSessionsShown
			if full && (in.o.Allowed == nil || len(o.Sessions) > 0) {
				o.More = last
				return nil
			}
			read++
			if err := in.objectSession(ctx, sid, o); err != nil {
				return err
			}
			last = sid
		}
		if len(docs) < objectSessionBatch {
			return nil
		}
	}
}

// objectSession reads session sid's state and, when its index holds o,
// walks its call records for o.
func (in *Inspector) objectSession(ctx context.Context, sid string, o *Object) error {
	if !in.allowed(sid) {
		return nil
	}
	_, st, err := session.ReadState(ctx, in.st, sid, store.Basis{})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// One damaged session never fails the page of an object others
		// use: it is named, and the rest is read.
		o.Unreadable = append(o.Unreadable, Unreadable{Session: sid, Error: err.Error()})
		return nil
	}
	if !st.Indexed(o.ID) {
		return nil
	}
	o.Sessions = append(o.Sessions, sid)
	return in.shown(ctx, sid, o)
}

// shown walks a session's call records and records, for each call, the
// versions of o it showed.
func (in *Inspector) shown(ctx context.Context, sid string, o *Object) error {
	n, err := assemble.Calls(ctx, in.st, sid)
	if err != nil {
		return err
	}
	var list []assemble.ItemDoc
	type key struct {
		v  int
		as string
	}
	open := map[key]int{} // run start per (version, way) still going at the previous call
	if n > objectCallsWalked {
		o.CallsCut = append(o.CallsCut, CallsCut{Session: sid, Walked: objectCallsWalked, Calls: n})
		n = objectCallsWalked
	}
	for k := 1; k <= n; k++ {
		c, err := assemble.ReadCommit(ctx, in.st, sid, k)
		if err != nil {
			return err
		}
		if c.Base > len(list) {
			return fmt.Errorf("%s keeps %d items, its parent has %d", c.ID, c.Base, len(list))
		}
		list = append(list[:c.Base:c.Base], c.Items...)
		now := map[key]bool{}
		for _, it := range list {
			if it.Ref == "" {
				continue
			}
			r, err := objects.ParseRef(it.Ref)
			if err != nil || r.ID != o.ID {
				continue
			}
			k := string(it.K)
			if it.K == "toolref" && it.Out == "inline" {
				k = "content" // rendering 3: a live output is its tool result
			}
			v := versionAt(o.Versions, r.Tx, o.OlderVersions)
			if v < 0 {
				continue // a version older than the page shows
			}
			now[key{v, KindLabel(k)}] = true
		}
		for kk, start := range open {
			if !now[kk] {
				o.Versions[kk.v].Shown = append(o.Versions[kk.v].Shown, Shown{Session: sid, From: start, To: k - 1, As: kk.as})
				delete(open, kk)
			}
		}
		for kk := range now {
			if _, ok := open[kk]; !ok {
				open[kk] = k
			}
		}
	}
	for kk, start := range open {
		o.Versions[kk.v].Shown = append(o.Versions[kk.v].Shown, Shown{Session: sid, From: start, To: n, As: kk.as})
	}
	for i := range o.Versions {
		sort.Slice(o.Versions[i].Shown, func(a, b int) bool {
			x, y := o.Versions[i].Shown[a], o.Versions[i].Shown[b]
			if x.Session != y.Session {
				return x.Session < y.Session
			}
			if x.From != y.From {
				return x.From < y.From
			}
			return x.As < y.As
		})
	}
	return nil
}

// versionAt returns the index of the version visible as of tx: the last one
// written at or before it; the first for a tx before every version of a
// whole history, -1 for one before the versions a page shows when older
// ones were left out (o.OlderVersions).
func versionAt(vs []Version, tx int64, older bool) int {
	i := sort.Search(len(vs), func(i int) bool { return vs[i].Tx > tx })
	if i == 0 && older {
		return -1
	}
	return max(i-1, 0)
}
