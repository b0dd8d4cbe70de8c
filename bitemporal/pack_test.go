package bitemporal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/ctxstore/ctxstore/migrations"
	"github.com/ctxstore/ctxstore/store"
)

// TestPackRoundTrip: pack gives back small or incompressible JSONB as it
// is, compresses the rest behind the header, and unpack restores the bytes;
// a packed blob cut short or of an unknown format is an error, never a
// wrong document.
func TestPackRoundTrip(t *testing.T) {
	var noise []byte // SHA-256 chained: nothing for DEFLATE to find
	for sum := sha256.Sum256(nil); len(noise) < 600; sum = sha256.Sum256(sum[:]) {
		noise = append(noise, sum[:]...)
	}
	for _, c := range []struct {
		name   string
		in     []byte
		packed bool
	}{
		{"small", []byte{0x8c, 'a'}, false},
		{"just below the minimum", bytes.Repeat([]byte{'x'}, packMin-1), false},
		{"repetitive", append([]byte{0xcc, 0x10}, bytes.Repeat([]byte("wombat "), 100)...), true},
		{"incompressible", noise, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := pack(c.in)
			if isPacked(p) != c.packed {
				t.Fatalf("packed %v, want %v (%d -> %d bytes)", isPacked(p), c.packed, len(c.in), len(p))
			}
			if c.packed && len(p) >= len(c.in) {
				t.Fatalf("packed to %d bytes from %d", len(p), len(c.in))
			}
			if again := pack(p); !bytes.Equal(again, p) {
				t.Fatal("packing a packed blob changed it")
			}
			got, err := unpack(p, nil)
			if err != nil || !bytes.Equal(got, c.in) {
				t.Fatalf("unpack: %v, %q", err, got)
			}
		})
	}
	p := pack(append([]byte{0xcc, 0x10}, bytes.Repeat([]byte("quokka "), 100)...))
	for name, bad := range map[string][]byte{
		"cut short":      p[:len(p)/2],
		"unknown format": append([]byte{packMagic, 0x7f}, p[2:]...),
	} {
		if got, err := unpack(bad, nil); err == nil {
			t.Errorf("%s: unpacked without error to %q", name, got)
		}
	}
}

// TestPackSplit: a document whose long top-level strings are its bulk is
// packed as a skeleton and its long values; unpacking gives a JSONB whose
// json() is the canonical text byte for byte (escapes, non-ASCII text, a
// long value whose key needs escaping stays in the skeleton), a field
// other than the long ones reads the same from the skeleton, and a blob
// whose parts do not fit together is an error.
func TestPackSplit(t *testing.T) {
	if err := registerFuncs(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	long := strings.Repeat("line \"quoted\" \t é 😀 <x>\n", 40)
	for _, c := range []struct {
		name  string
		doc   store.Doc
		form  byte
		field string // read from the skeleton
	}{
		{"file", store.Doc{store.IDKey: "f", "content": long, "source": map[string]any{"path": "/a"}, "type": "file"}, packSplit, "source"},
		{"two long strings", store.Doc{store.IDKey: "t", "a": long, "m": 1.5, "z": long + "z"}, packSplit, "m"},
		{"escaped key", store.Doc{store.IDKey: "k", "a\"b": long, "n": 1.0}, packFlate, ""},
		{"long strings not the bulk", store.Doc{store.IDKey: "b", "content": long, "items": []any{long[:400], long[:400], long[:400], long[:400]}}, packFlate, ""},
		{"no long string", store.Doc{store.IDKey: "s", "items": []any{long[:300], long[:300]}}, packFlate, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			canon, err := store.Canonical(c.doc)
			if err != nil {
				t.Fatal(err)
			}
			var jsonb []byte
			if err := db.QueryRow("SELECT jsonb(?)", string(canon)).Scan(&jsonb); err != nil {
				t.Fatal(err)
			}
			p := pack(jsonb)
			if !isPacked(p) || p[1] != c.form || len(p) >= len(jsonb) {
				t.Fatalf("packed as %x, %d bytes from %d; want form %d", p[:2], len(p), len(jsonb), c.form)
			}
			var text string
			if err := db.QueryRow("SELECT json(ctxs_doc(?))", p).Scan(&text); err != nil || text != string(canon) {
				t.Fatalf("unpacked to %s (%v), want %s", text, err, canon)
			}
			if c.field == "" {
				return
			}
			skel, ok := skeletonFor(p, c.field)
			if !ok || len(skel) >= len(jsonb)/2 {
				t.Fatalf("no skeleton for %s (%v, %d bytes)", c.field, ok, len(skel))
			}
			var fromPart, fromWhole string
			path := jsonPath(c.field)
			if err := db.QueryRow("SELECT ctxs_part(?, ?) -> ?, ? -> ?", p, c.field, path, jsonb, path).Scan(&fromPart, &fromWhole); err != nil || fromPart != fromWhole {
				t.Fatalf("%s from the skeleton: %s, from the document: %s (%v)", c.field, fromPart, fromWhole, err)
			}
			var content string
			if err := db.QueryRow("SELECT ctxs_part(?, 'content') ->> '$.content'", p).Scan(&content); c.field == "source" && (err != nil || content != long) {
				t.Fatalf("content through ctxs_part: %q, %v", content, err)
			}
			f, err := parseSplit(p)
			if err != nil {
				t.Fatal(err)
			}
			for name, bad := range map[string][]byte{
				"cut short":       p[:len(p)-len(f.long)/2],
				"no long values":  p[:len(p)-len(f.long)],
				"skeleton cut":    append(append(append([]byte{}, p[:len(p)-len(f.long)-len(f.skeleton)]...), f.skeleton[:len(f.skeleton)-1]...), f.long...),
				"keys miscounted": append([]byte{packMagic, packSplit, p[2] + 1}, p[3:]...),
			} {
				if got, err := unpack(bad, nil); err == nil {
					t.Errorf("%s: unpacked without error to %q", name, got)
				}
			}
		})
	}
}

// packedDocs are documents large enough to be packed (a file's content, a
// toolcall's output, a chat turn) and small ones stored as JSONB.
func packedDocs() []store.Doc {
	return []store.Doc{
		{store.IDKey: "file:a", "type": "file", "session_id": "s1", "content": strings.Repeat("func wombat() { return \"x\\ty\" } // <é>\n", 200),
			"source": map[string]any{"kind": "filesystem", "path": "/src/a.go"}, "tokens": 900.0, "tags": []any{"go", "src"}},
		{store.IDKey: "tc:1", "type": "toolcall", "session_id": "s1", "tool": "bash", "args": map[string]any{"command": "ls -la"},
			"content": strings.Repeat("drwxr-xr-x quokka\n", 50), "refs": []any{"file:a"}, "ok": true},
		{store.IDKey: "turn:1", "type": "chat_turn", "session_id": "s1", "n": 0.0, "turn": map[string]any{"user": "find the numbat", "assistant": []any{map[string]any{"type": "text", "text": strings.Repeat("the numbat is here. ", 20)}}}},
		{store.IDKey: "n", "type": "note", "content": "tiny", "flag": false},
	}
}

// TestMigrationPackedDocs opens a store whose documents are all JSONB, as
// every release before migration 00009 wrote them (made with today's code
// and migrated down to 8, whose Down unpacks every row; the content hashes
// hex again, as before 00012), and checks the migrations pack the large
// ones and every read answers as before: the
// documents, history with documents, the canonical tx log byte for byte,
// queries on indexed fields, on others (read from the document), with
// projection and order, search with snippets, and an evict after it that
// takes the entity's words out of the index.
func TestMigrationPackedDocs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	docs := packedDocs()
	for _, ops := range [][]store.Op{
		{store.Put(docs[0]), store.Put(docs[1])},
		{store.Match("file:a", docs[0]), store.Put(docs[2]), store.Put(docs[3]),
			store.Put(store.Doc{store.IDKey: "chat:s1", "type": "chat", "turn_count": 1.0})},
		{store.Put(store.Doc{store.IDKey: "file:a", "type": "file", "session_id": "s1", "content": strings.Repeat("second wombat version\n", 80)})},
	} {
		if _, err := store.SubmitWait(ctx, st, ops); err != nil {
			t.Fatal(err)
		}
	}
	w := store.Where
	queries := []store.Query{
		{Where: []store.Pred{w("type", "file")}},
		{Where: []store.Pred{w("tool", "bash")}, Find: []string{"type", "args", "refs"}},
		{Where: []store.Pred{w("session_id", "s1"), {Field: "tokens", Op: store.Exists}}},
		{Where: []store.Pred{{Field: "refs", Op: store.RefBy, Value: "tc:1"}}},
		{Where: []store.Pred{w("ok", true)}, Find: []string{"content"}},
		{Where: []store.Pred{{Field: "type", Op: store.Exists}}, OrderBy: []store.Order{{Field: "type", Desc: true}}, Find: []string{"type"}},
		{Where: []store.Pred{{Field: "content", Op: store.Gt, Value: "s"}}},
	}
	reads := func(s *Store) string {
		t.Helper()
		var b strings.Builder
		for _, id := range []string{"file:a", "tc:1", "turn:1", "n"} {
			d, err := s.Entity(ctx, id, store.Basis{})
			c, _ := store.Canonical(d)
			fmt.Fprintf(&b, "entity %s: %s %v\n", id, c, err)
			h, err := s.History(ctx, id, store.HistoryOptions{WithDocs: true, WithCorrections: true})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "history %s: %+v\n", id, h)
		}
		txs, logged, err := s.TxLogCanonical(ctx, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "log: %+v\n", txs)
		for _, ops := range logged {
			for _, d := range ops {
				fmt.Fprintf(&b, "logged doc: %s\n", d)
			}
		}
		for i, q := range queries {
			got, err := s.Query(ctx, q)
			if err != nil {
				t.Fatalf("query %d: %v", i, err)
			}
			fmt.Fprintf(&b, "query %d: %v\n", i, got)
		}
		for _, q := range []string{"wombat", "numbat", "quokka", "second"} {
			hits, err := s.Search(ctx, store.SearchQuery{Text: q})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "search %s: %+v\n", q, hits)
		}
		return b.String()
	}
	before := reads(st)
	for _, want := range []string{"numbat is here", "quokka", "second wombat", "«numbat»", "«wombat»", "\"command\":\"ls -la\""} {
		if !strings.Contains(before, want) {
			t.Fatalf("the reads hold no %q:\n%s", want, before)
		}
	}
	forms := func() string {
		t.Helper()
		var rows [][]byte
		if err := st.w.SelectContext(ctx, &rows, "SELECT doc FROM docs ORDER BY id"); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			switch {
			case !isPacked(r):
				out = append(out, "jsonb")
			case r[1] == packSplit:
				out = append(out, "split")
			default:
				out = append(out, "flate")
			}
		}
		return strings.Join(out, " ")
	}
	// file:a, tc:1, turn:1, n, chat:s1, file:a again
	const packedForms = "split split flate jsonb jsonb split"
	if f := forms(); f != packedForms {
		t.Fatalf("a new store holds %s, want %s", f, packedForms)
	}
	migrateDown(t, st.w.DB, 8)
	if f := forms(); f != strings.TrimSpace(strings.Repeat("jsonb ", 6)) {
		t.Fatalf("after Down: %s, want JSONB only", f)
	}
	hashes := func(form string) {
		t.Helper()
		var other int
		if err := st.w.GetContext(ctx, &other, "SELECT count(*) FROM docs WHERE typeof(hash) <> ? OR length(hash) <> ?",
			form, map[string]int{"text": 64, "blob": 32}[form]); err != nil || other != 0 {
			t.Fatalf("%d content hashes are not %s (%v)", other, form, err)
		}
	}
	hashes("text") // before migration 00012
	var valid int
	if err := st.w.GetContext(ctx, &valid, "SELECT count(*) FROM docs WHERE json_valid(doc, 8)"); err != nil || valid != 6 {
		t.Fatalf("after Down: %d rows are valid JSONB (%v)", valid, err)
	}
	st.Close()

	st, err = Open(ctx, path, Options{}) // migrates
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if f := forms(); f != packedForms {
		t.Fatalf("after the migration: %s, want %s", f, packedForms)
	}
	hashes("blob")
	if after := reads(st); after != before {
		t.Fatalf("after the migration\n%s\nbefore\n%s", after, before)
	}
	if _, err := store.SubmitWait(ctx, st, []store.Op{store.Evict("tc:1")}); err != nil {
		t.Fatal(err)
	}
	hits, err := st.Search(ctx, store.SearchQuery{Text: "quokka"})
	if err != nil || len(hits) != 0 {
		t.Fatalf("search after the evict: %v, %v", hits, err)
	}
	var left int
	if err := st.w.GetContext(ctx, &left, "SELECT count(*) FROM search_fts WHERE search_fts MATCH 'quokka'"); err != nil || left != 0 {
		t.Fatalf("the evicted toolcall's words are still in the index: %d (%v)", left, err)
	}
	// The field index is keyed by value (migration 00016); the evict's
	// pass over it leaves no row of the evicted documents.
	if err := st.w.GetContext(ctx, &left, "SELECT count(*) FROM fields WHERE doc NOT IN (SELECT id FROM docs) OR value = 'bash'"); err != nil || left != 0 {
		t.Fatalf("%d field rows of evicted documents are left (%v)", left, err)
	}
}

// migrateDown takes the store of db down to schema version v with the
// migrations' own Down, then runs stmts, which fake an older form by hand
// (the migrations after v then run again on their own form).
func migrateDown(t *testing.T, db *sql.DB, v int64, stmts ...string) {
	t.Helper()
	mig, err := fs.Sub(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, mig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
