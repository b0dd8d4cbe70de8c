package bitemporal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/store"
)

// headVersion is version n of a document that grows by a little each
// version, as a session head or a session chunk does.
func headVersion(n int) store.Doc {
	var items []any
	for i := range n + 8 {
		items = append(items, map[string]any{"id": fmt.Sprintf("toolu_%04d_abcdefghij", i), "tokens": float64(100 + i), "kind": "toolcall"})
	}
	return store.Doc{store.IDKey: "session:s1", "type": "session", "session_id": "s1", "calls": float64(n), "tool": "bash", "items": items}
}

// TestPackDelta: a document packed against an earlier version is smaller
// than packed alone and unpacks, with that version, to the same bytes;
// without it, or against a delta, it is an error; a split document and a
// delta base are not packed as deltas.
func TestPackDelta(t *testing.T) {
	jsonbOf := func(d store.Doc) []byte {
		t.Helper()
		st, err := Open(context.Background(), ":memory:", Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		c, _ := store.Canonical(d)
		var b []byte
		if err := st.w.Get(&b, "SELECT jsonb(?)", string(c)); err != nil {
			t.Fatal(err)
		}
		return b
	}
	v1, v2 := jsonbOf(headVersion(1)), jsonbOf(headVersion(2))
	base := pack(v1)
	d, err := packAgainst(v2, base)
	if err != nil || !isPacked(d) || d[1] != packDelta || len(d) >= len(pack(v2))/2 {
		t.Fatalf("packed against v1: %x..., %d bytes (alone %d), %v", d[:2], len(d), len(pack(v2)), err)
	}
	got, err := unpack(d, base)
	if err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("unpacked: %v", err)
	}
	if _, err := unpack(d, nil); err == nil {
		t.Error("a delta unpacked without its base")
	}
	if _, err := unpack(d, d); err == nil {
		t.Error("a delta unpacked against a delta")
	}
	if again, err := packAgainst(v2, d); err != nil || again[1] == packDelta {
		t.Errorf("packed against a delta: %x, %v", again[:2], err)
	}
	file := jsonbOf(store.Doc{store.IDKey: "f", "content": strings.Repeat("some file line\n", 100), "type": "file"})
	if f, err := packAgainst(file, pack(file)); err != nil || f[1] != packSplit {
		t.Errorf("a split document packed as %x (%v), want split", f[:2], err)
	}
}

// TestDeltaVersions: successive versions of an entity are stored against
// an earlier one (docs.base), and every read gives what was put: each
// row's JSON hashes to its content hash, history with documents, queries
// reading a field the index does not hold, and the same content put again
// reuses its row; Down (to schema 10) stores every row alone and reads
// the same, and Up (migration 00011) writes deltas again.
func TestDeltaVersions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	put := func(n int) {
		t.Helper()
		if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(headVersion(n))}); err != nil {
			t.Fatal(err)
		}
	}
	for n := 1; n <= 12; n++ {
		put(n)
	}
	put(3) // the same content again: its row is reused
	deltas := func() int {
		t.Helper()
		var n int
		if err := st.w.Get(&n, "SELECT count(*) FROM docs WHERE substr(doc, 1, 2) = x'0d03' AND base IS NOT NULL"); err != nil {
			t.Fatal(err)
		}
		return n
	}
	checkRows := func() {
		t.Helper()
		var rows []struct {
			Hash string `db:"hash"`
			Text string `db:"text"`
		}
		if err := st.w.Select(&rows, "SELECT lower(hex(hash)) AS hash, json(ctxs_doc(d.doc, "+baseOf("d")+")) AS text FROM docs d"); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 12 {
			t.Fatalf("%d docs rows, want 12", len(rows))
		}
		for _, r := range rows {
			if sum := sha256.Sum256([]byte(r.Text)); hex.EncodeToString(sum[:]) != r.Hash {
				t.Fatalf("row %s reads as text hashing otherwise: %s", r.Hash, r.Text)
			}
		}
	}
	reads := func() string {
		t.Helper()
		h, err := st.History(ctx, "session:s1", store.HistoryOptions{WithDocs: true, WithCorrections: true})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i, e := range h {
			c, _ := store.Canonical(e.Doc)
			fmt.Fprintf(&b, "%d %s\n", i, c)
		}
		for _, q := range []store.Query{
			{Where: []store.Pred{store.Where("tool", "bash")}, Find: []string{"calls", "items"}},
			{Where: []store.Pred{{Field: "calls", Op: store.Gte, Value: 3.0}}, OrderBy: []store.Order{{Field: "calls"}}},
		} {
			got, err := st.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "query: %v\n", got)
		}
		return b.String()
	}
	if n := deltas(); n < 6 {
		t.Fatalf("%d of 12 versions stored as deltas", n)
	}
	checkRows()
	before := reads()
	want, _ := store.Canonical(headVersion(3))
	if d, err := st.Entity(ctx, "session:s1", store.Basis{}); err != nil || !strings.Contains(before, string(want)) {
		t.Fatalf("the version put last is not read: %v, %v\n%s", d, err, before)
	} else if c, _ := store.Canonical(d); string(c) != string(want) {
		t.Fatalf("entity reads %s, want %s", c, want)
	}
	migrateDown(t, st.w.DB, 10)
	var cols int
	if err := st.w.Get(&cols, "SELECT count(*) FROM pragma_table_info('docs') WHERE name = 'base'"); err != nil || cols != 0 {
		t.Fatalf("after Down docs still has base (%d, %v)", cols, err)
	}
	st.Close()
	if st, err = Open(ctx, path, Options{}); err != nil { // migrates
		t.Fatal(err)
	}
	if n := deltas(); n != 0 {
		t.Fatalf("%d deltas after Down and Up (rows written before stay whole)", n)
	}
	checkRows()
	if after := reads(); after != before {
		t.Fatalf("after Down and Up\n%s\nbefore\n%s", after, before)
	}
	put(13)
	if n := deltas(); n != 1 {
		t.Fatalf("%d deltas after one more version, want 1", n)
	}
}

// TestEvictDeltas: evicting an entity whose versions are deltas on each
// other and have search units (a small file edited again and again)
// removes them all and their words, although a delta's base row goes in
// the same statement.
func TestEvictDeltas(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for n := range 6 {
		lines := strings.Repeat(fmt.Sprintf("wombat line %d of the notes file\n", n), 12)
		d := store.Doc{store.IDKey: "file:notes", "type": "file", "content": lines[:300], "source": map[string]any{"path": "/notes.txt"}, "rev": float64(n)}
		if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(d)}); err != nil {
			t.Fatal(err)
		}
	}
	var deltas int
	if err := st.w.Get(&deltas, "SELECT count(*) FROM docs WHERE base IS NOT NULL"); err != nil || deltas == 0 {
		t.Fatalf("%d deltas (%v): the test needs some", deltas, err)
	}
	if hits, err := st.Search(ctx, store.SearchQuery{Text: "wombat"}); err != nil || len(hits) != 1 {
		t.Fatalf("search before the evict: %v, %v", hits, err)
	}
	if _, err := store.SubmitWait(ctx, st, []store.Op{store.Evict("file:notes")}); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := st.w.Get(&left, "SELECT (SELECT count(*) FROM docs) + (SELECT count(*) FROM search_units) + (SELECT count(*) FROM search_fts WHERE search_fts MATCH 'wombat')"); err != nil || left != 0 {
		t.Fatalf("%d rows left after the evict (%v)", left, err)
	}
}

// noteDoc is a new entity n of a family whose documents resemble each
// other, as a session's context commits or toolcalls do.
func noteDoc(n int) store.Doc {
	var refs []any
	for i := range 12 {
		refs = append(refs, fmt.Sprintf("toolu_%04d_abcdefghij@%d#c=%064d", i, i+n, i))
	}
	return store.Doc{store.IDKey: fmt.Sprintf("note:s1-%d", n), "type": "note", "session_id": "s1",
		"content": fmt.Sprintf("wombat note %d", n), "refs": refs, "call": float64(n)}
}

// TestFamilyDeltas: an entity's first version is stored against the
// latest row of its type stored whole (migration 00013); evicting that
// row's entity stores the rows compressed against it whole first, so they
// read, hash and search as before; Down (to schema 12) stores every such
// row whole, and after Up again every row reads the same.
func TestFamilyDeltas(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	const n = 10
	for i := range n {
		if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(noteDoc(i))}); err != nil {
			t.Fatal(err)
		}
	}
	// Schema 12 names entities by their text (docs.eid), 14 by ents.id.
	entOf := map[bool]string{true: "(SELECT e.eid FROM ents e WHERE e.id = %s.ent)", false: "%s.eid"}
	interned := true
	crossed := func() (keys []string, deltas int) {
		t.Helper()
		b, d := fmt.Sprintf(entOf[interned], "b"), fmt.Sprintf(entOf[interned], "d")
		if err := st.w.Select(&keys, "SELECT DISTINCT "+b+" FROM docs d JOIN docs b ON b.id = d.base WHERE "+b+" <> "+d); err != nil {
			t.Fatal(err)
		}
		if err := st.w.Get(&deltas, "SELECT count(*) FROM docs d JOIN docs b ON b.id = d.base WHERE "+b+" <> "+d); err != nil {
			t.Fatal(err)
		}
		return keys, deltas
	}
	reads := func() string {
		t.Helper()
		var b strings.Builder
		var rows []struct {
			Hash string `db:"hash"`
			Text string `db:"text"`
		}
		if err := st.w.Select(&rows, "SELECT lower(hex(hash)) AS hash, json(ctxs_doc(d.doc, "+baseOf("d")+")) AS text FROM docs d ORDER BY d.hash"); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if sum := sha256.Sum256([]byte(r.Text)); hex.EncodeToString(sum[:]) != r.Hash {
				t.Fatalf("row %s reads as text hashing otherwise: %s", r.Hash, r.Text)
			}
			fmt.Fprintln(&b, r.Text)
		}
		got, err := st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", "note")}, Find: []string{"content", "refs"}})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "query: %v\n", got)
		hits, err := st.Search(ctx, store.SearchQuery{Text: "wombat", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "search: %d hits\n", len(hits))
		return b.String()
	}
	keys, deltas := crossed()
	if len(keys) == 0 || deltas < n/2 {
		t.Fatalf("%d of %d new entities stored against another's row (bases %v)", deltas, n, keys)
	}
	if !strings.Contains(reads(), fmt.Sprintf("search: %d hits", n)) {
		t.Fatalf("search before the evict:\n%s", reads())
	}
	if _, err := store.SubmitWait(ctx, st, []store.Op{store.Evict(keys[0])}); err != nil {
		t.Fatal(err)
	}
	var dangling int
	if err := st.w.Get(&dangling, "SELECT count(*) FROM docs d WHERE d.base IS NOT NULL AND NOT EXISTS (SELECT 1 FROM docs b WHERE b.id = d.base)"); err != nil || dangling != 0 {
		t.Fatalf("%d rows compressed against a row the evict removed (%v)", dangling, err)
	}
	before := reads() // hashes checked: every row left reads as what was put
	if !strings.Contains(before, fmt.Sprintf("search: %d hits", n-1)) {
		t.Fatalf("search after the evict:\n%s", before)
	}
	if _, err := st.Entity(ctx, keys[0], store.Basis{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the evicted entity reads: %v", err)
	}
	// New entities after the evict still find a base, and Down stores
	// every row whole.
	for i := n; i < n+4; i++ {
		if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(noteDoc(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, d := crossed(); d == 0 {
		t.Fatal("no new entity stored against another's row after the evict")
	}
	before = reads()
	migrateDown(t, st.w.DB, 12)
	interned = false
	if _, d := crossed(); d != 0 {
		t.Fatalf("%d rows against another entity's row after Down", d)
	}
	st.Close()
	if st, err = Open(ctx, path, Options{}); err != nil { // migrates again
		t.Fatal(err)
	}
	if after := reads(); after != before {
		t.Fatalf("after Down and Up\n%s\nbefore\n%s", after, before)
	}
}
