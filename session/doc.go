package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// How a session is stored (docs/context-manager.md, "Documents: a head and
// chunks").
//
// The session object "session:{id}" (the head) holds the small fields and,
// for each of the five lists (index, pool, active, pinned, toolcalls), its
// length and its tail: the entries after the last full chunk. The entries
// before the tail live in chunk documents "session-chunk:{id}:{list}:{n}",
// each holding exactly chunk_size entries [n·size, (n+1)·size). A change
// writes a new head version and only the chunks whose entries changed, in
// one transaction guarded by a match on the head; appending to a list
// rewrites nothing but the head until its tail fills a chunk.

// DefaultChunkSize is the number of list entries per chunk document of new
// sessions. A session keeps the chunk size it was created with (it is
// recorded in its head).
//
// Why 8: a head holds
// up to chunk size - 1 entries per list and is written at every change,
// while a chunk is written once per chunk size entries with a document's
// fixed cost, so per appended entry the bytes written are about
// size·e/2 + O/size (e an entry's bytes, O a document's overhead): with
// e ≈ 60-100 and O ≈ 300-500, the least is near 3-4; 8 keeps chunk
// documents few. Sessions created with another size keep it.
const DefaultChunkSize = 8

// chunkSize is the chunk size given to new sessions (tests lower it).
var chunkSize = DefaultChunkSize

// The head's fields (kept in the session object's Extra).
const (
	fieldSessionID    = "session_id"
	fieldChatRef      = "chat_ref"
	fieldSystemPrompt = "system_prompt_ref"
	fieldHarness      = "harness"
	fieldTurn         = "turn"
	fieldSeq          = "seq"
	fieldRev          = "rev"
	fieldChunkSize    = "chunk_size"
	// fieldTails holds the lists' tails, {list: entries}: one object, so
	// the store's field index (top-level scalars and array elements) does
	// not copy every tail entry of every head version. Heads
	// written before kept each tail at the top level, {list}_tail.
	fieldTails = "tails"
)

// The lists of a State, in the order they are stored. Each has the head
// fields {name}_len and {name}_tail.
const (
	listIndex     = "index"
	listPool      = "pool"
	listActive    = "active"
	listPinned    = "pinned"
	listToolcalls = "toolcalls"
)

var listNames = []string{listIndex, listPool, listActive, listPinned, listToolcalls}

// chunkType is the "type" of chunk documents.
const chunkType = "session_chunk"

// chunkPrefix starts every chunk id. It is not "session:", so no chunk id
// can be the head of another session, whatever ':' session ids contain.
const chunkPrefix = "session-chunk:"

// chunkID returns the id of chunk n of a session's list.
func chunkID(sessionID, list string, n int) string {
	return chunkPrefix + sessionID + ":" + list + ":" + strconv.Itoa(n)
}

// entries returns entries [lo, hi) of a list of s as JSON values.
func entries(s *State, list string, lo, hi int) []any {
	switch list {
	case listIndex:
		return strs(s.Index[lo:hi])
	case listPool:
		return strs(s.Pool[lo:hi])
	case listActive:
		return strs(s.Active[lo:hi])
	case listPinned:
		return strs(s.Pinned[lo:hi])
	case listToolcalls:
		out := make([]any, hi-lo)
		for i, t := range s.Toolcalls[lo:hi] {
			out[i] = toolcallValue(t)
		}
		return out
	}
	panic("session: unknown list " + list)
}

func listLen(s *State, list string) int {
	switch list {
	case listIndex:
		return len(s.Index)
	case listPool:
		return len(s.Pool)
	case listActive:
		return len(s.Active)
	case listPinned:
		return len(s.Pinned)
	case listToolcalls:
		return len(s.Toolcalls)
	}
	panic("session: unknown list " + list)
}

// chunkEqual reports whether entries [lo, hi) of a list are the same in a
// and b (both must hold them).
func chunkEqual(a, b *State, list string, lo, hi int) bool {
	switch list {
	case listIndex:
		return slices.Equal(a.Index[lo:hi], b.Index[lo:hi])
	case listPool:
		return slices.Equal(a.Pool[lo:hi], b.Pool[lo:hi])
	case listActive:
		return slices.Equal(a.Active[lo:hi], b.Active[lo:hi])
	case listPinned:
		return slices.Equal(a.Pinned[lo:hi], b.Pinned[lo:hi])
	case listToolcalls:
		return slices.Equal(a.Toolcalls[lo:hi], b.Toolcalls[lo:hi])
	}
	panic("session: unknown list " + list)
}

func toolcallValue(t Toolcall) map[string]any {
	m := map[string]any{"id": t.ID, "turn": int64(t.Turn), "seq": t.Seq}
	if t.Management {
		m["management"] = true
	}
	if t.Target != "" {
		m["target"] = t.Target
	}
	if t.Tokens > 0 {
		m["tokens"] = int64(t.Tokens)
	}
	return m
}

func strs(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// stored is what a Session knows about its stored form: the chunk size and
// the revision of the head it last read or wrote, and whether that head is
// in the old single-document form (no chunks exist yet).
type stored struct {
	size   int
	rev    int64
	legacy bool
}

// encodeHead builds the head document of state s at revision rev.
func encodeHead(info Info, s *State, size int, rev int64) (store.Doc, error) {
	fields := map[string]any{
		fieldSessionID:    info.ID,
		fieldChatRef:      info.ChatID,
		fieldSystemPrompt: info.SystemPromptID,
		fieldTurn:         int64(s.Turn),
		fieldSeq:          s.Seq,
		fieldRev:          rev,
		fieldChunkSize:    int64(size),
	}
	if info.Harness != "" {
		fields[fieldHarness] = info.Harness
	}
	tails := make(map[string]any, len(listNames))
	for _, l := range listNames {
		n := listLen(s, l)
		fields[l+"_len"] = int64(n)
		tails[l] = entries(s, l, n/size*size, n)
	}
	fields[fieldTails] = tails
	o, err := objects.NewSession(info.ID, fields)
	if err != nil {
		return nil, fmt.Errorf("session %s: session object: %w", info.ID, err)
	}
	doc, err := o.Doc()
	if err != nil {
		return nil, fmt.Errorf("session %s: session document: %w", info.ID, err)
	}
	return doc, nil
}

// chunkOps returns the puts of the chunks of next whose entries differ from
// prev's (or that prev lacks), and the deletes of prev's chunks next lacks.
// With legacy set, no chunk is taken to exist yet. from, when not nil,
// gives for each list the first entry that may differ (State.firstChange):
// the chunks before it are not compared.
func chunkOps(sessionID string, prev, next *State, st stored, from map[string]int) []store.Op {
	var ops []store.Op
	size := st.size
	for _, l := range listNames {
		oldN, newN := listLen(prev, l)/size, listLen(next, l)/size
		if st.legacy {
			oldN = 0
		}
		first := 0
		if f, ok := from[l]; ok && !st.legacy {
			first = min(f/size, oldN)
		}
		for n := first; n < newN; n++ {
			if n < oldN && chunkEqual(prev, next, l, n*size, (n+1)*size) {
				continue
			}
			ops = append(ops, store.Put(store.Doc{
				store.IDKey:    chunkID(sessionID, l, n),
				"type":         chunkType,
				fieldSessionID: sessionID,
				"list":         l,
				"n":            int64(n),
				"entries":      entries(next, l, n*size, (n+1)*size),
			}))
		}
		for n := newN; n < oldN; n++ {
			ops = append(ops, store.Delete(chunkID(sessionID, l, n)))
		}
	}
	return ops
}

// head is a decoded head document.
type head struct {
	SessionID    string `json:"session_id"`
	ChatRef      string `json:"chat_ref"`
	SystemPrompt string `json:"system_prompt_ref"`
	Harness      string `json:"harness"`
	Turn         int    `json:"turn"`
	Seq          int64  `json:"seq"`
	Rev          int64  `json:"rev"`
	ChunkSize    int    `json:"chunk_size"`

	IndexLen      int        `json:"index_len"`
	IndexTail     []string   `json:"index_tail"`
	PoolLen       int        `json:"pool_len"`
	PoolTail      []string   `json:"pool_tail"`
	ActiveLen     int        `json:"active_len"`
	ActiveTail    []string   `json:"active_tail"`
	PinnedLen     int        `json:"pinned_len"`
	PinnedTail    []string   `json:"pinned_tail"`
	ToolcallsLen  int        `json:"toolcalls_len"`
	ToolcallsTail []Toolcall `json:"toolcalls_tail"`

	Tails *struct {
		Index     []string   `json:"index"`
		Pool      []string   `json:"pool"`
		Active    []string   `json:"active"`
		Pinned    []string   `json:"pinned"`
		Toolcalls []Toolcall `json:"toolcalls"`
	} `json:"tails"`

	legacyLists *legacyLists // set for a head in the old form
}

// legacyLists are the whole lists of the old single-document form.
type legacyLists struct {
	Index     []string   `json:"session_index"`
	Pool      []string   `json:"metadata_pool"`
	Active    []string   `json:"active_set"`
	Pinned    []string   `json:"pinned_set"`
	Toolcalls []Toolcall `json:"toolcalls"`
}

// decodeHead reads a stored head document.
func decodeHead(doc store.Doc) (*head, error) {
	o, err := objects.FromDoc(doc)
	if err != nil {
		return nil, fmt.Errorf("decoding session object: %w", err)
	}
	if o.Kind() != objects.KindSession {
		return nil, fmt.Errorf("object %s is a %s, not a session", o.ID(), o.Kind())
	}
	raw, err := json.Marshal(o.Extra)
	if err != nil {
		return nil, fmt.Errorf("session fields: %w", err)
	}
	var h head
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("session fields: %w", err)
	}
	if h.SessionID == "" || h.ChatRef == "" || h.SystemPrompt == "" {
		return nil, fmt.Errorf("session object %s lacks session_id, chat_ref or system_prompt_ref", o.ID())
	}
	if _, ok := o.Extra[fieldChunkSize]; !ok {
		// The old form: every list whole in the session object.
		var l legacyLists
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("session fields: %w", err)
		}
		h.legacyLists = &l
		return &h, nil
	}
	if h.ChunkSize <= 0 {
		return nil, fmt.Errorf("session object %s: chunk_size %d", o.ID(), h.ChunkSize)
	}
	if t := h.Tails; t != nil {
		h.IndexTail, h.PoolTail, h.ActiveTail, h.PinnedTail, h.ToolcallsTail = t.Index, t.Pool, t.Active, t.Pinned, t.Toolcalls
	}
	return &h, nil
}

// needsChunks reports whether any list has entries outside the head.
func (h *head) needsChunks() bool {
	if h.legacyLists != nil {
		return false
	}
	for _, n := range []int{h.IndexLen, h.PoolLen, h.ActiveLen, h.PinnedLen, h.ToolcallsLen} {
		if n >= h.ChunkSize {
			return true
		}
	}
	return false
}

// state assembles the State from the head and its chunks (the documents
// of type session_chunk of this session visible at the head's basis).
func (h *head) state(chunks []store.Doc) (Info, State, stored, error) {
	info := Info{ID: h.SessionID, ChatID: h.ChatRef, SystemPromptID: h.SystemPrompt, Harness: h.Harness}
	if l := h.legacyLists; l != nil {
		st := State{Index: nilIfEmpty(l.Index), Pool: nilIfEmpty(l.Pool), Active: nilIfEmpty(l.Active),
			Pinned: nilIfEmpty(l.Pinned), Turn: h.Turn, Seq: h.Seq, Toolcalls: nilIfEmpty(l.Toolcalls)}
		return info, st, stored{size: chunkSize, rev: h.Rev, legacy: true}, nil
	}
	byList := map[string]map[int][]byte{}
	for _, c := range chunks {
		l, _ := c["list"].(string)
		nf, ok := store.Num(c["n"])
		if !ok || byList[l] != nil && byList[l][int(nf)] != nil {
			return Info{}, State{}, stored{}, fmt.Errorf("chunk %v: bad or repeated chunk number", c[store.IDKey])
		}
		raw, err := json.Marshal(c["entries"])
		if err != nil {
			return Info{}, State{}, stored{}, fmt.Errorf("chunk %v: %w", c[store.IDKey], err)
		}
		if byList[l] == nil {
			byList[l] = map[int][]byte{}
		}
		byList[l][int(nf)] = raw
	}
	var st State
	st.Turn, st.Seq = h.Turn, h.Seq
	var err error
	get := func(list string, n int, tail any, dst any) {
		if err != nil {
			return
		}
		err = h.assemble(byList[list], list, n, tail, dst)
	}
	get(listIndex, h.IndexLen, h.IndexTail, &st.Index)
	get(listPool, h.PoolLen, h.PoolTail, &st.Pool)
	get(listActive, h.ActiveLen, h.ActiveTail, &st.Active)
	get(listPinned, h.PinnedLen, h.PinnedTail, &st.Pinned)
	get(listToolcalls, h.ToolcallsLen, h.ToolcallsTail, &st.Toolcalls)
	if err != nil {
		return Info{}, State{}, stored{}, err
	}
	intern(&st)
	st.Index, st.Pool, st.Active, st.Pinned = nilIfEmpty(st.Index), nilIfEmpty(st.Pool), nilIfEmpty(st.Active), nilIfEmpty(st.Pinned)
	st.Toolcalls = nilIfEmpty(st.Toolcalls)
	return info, st, stored{size: h.ChunkSize, rev: h.Rev}, nil
}

// assemble decodes list's chunks 0..n/size-1 and its tail into dst (a
// *[]string or *[]Toolcall) and checks the length.
func (h *head) assemble(chunks map[int][]byte, list string, n int, tail any, dst any) error {
	full := n / h.ChunkSize
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < full; i++ {
		raw, ok := chunks[i]
		if !ok {
			return fmt.Errorf("%s: missing (the %s list has %d entries)", chunkID(h.SessionID, list, i), list, n)
		}
		if len(raw) > 2 { // not "[]"
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.Write(raw[1 : len(raw)-1])
		}
	}
	rawTail, err := json.Marshal(tail)
	if err != nil {
		return err
	}
	if len(rawTail) > 2 && string(rawTail) != "null" {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(rawTail[1 : len(rawTail)-1])
	}
	b.WriteByte(']')
	if err := json.Unmarshal([]byte(b.String()), dst); err != nil {
		return fmt.Errorf("session %s: %s list: %w", h.SessionID, list, err)
	}
	var got int
	switch d := dst.(type) {
	case *[]string:
		got = len(*d)
	case *[]Toolcall:
		got = len(*d)
	}
	if got != n {
		return fmt.Errorf("session %s: the %s list has %d entries in its chunks and tail, the head says %d", h.SessionID, list, got, n)
	}
	return nil
}

// intern makes the ids of the other lists share the Index's strings (every
// id of a state is in its index), so a decoded state holds each id once.
func intern(st *State) {
	m := make(map[string]string, len(st.Index))
	for _, id := range st.Index {
		m[id] = id
	}
	same := func(l []string) {
		for i, id := range l {
			if x, ok := m[id]; ok {
				l[i] = x
			}
		}
	}
	same(st.Pool)
	same(st.Active)
	same(st.Pinned)
	for i := range st.Toolcalls {
		if x, ok := m[st.Toolcalls[i].ID]; ok {
			st.Toolcalls[i].ID = x
		}
	}
}

// nilIfEmpty makes a decoded empty list nil, as in a fresh State, so that
// a resumed state equals the one that was saved.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
