package sessionbundle

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/sessionbundle/sessionbundletest"
)

// A bundle of one session never writes, overwrites or evicts another
// session's objects: a bundle of session sa that
// carries session sb's head (and evicts it), sb's toolcall, or a document
// saying it is sb's is refused whole, before anything is written, and sb
// is intact.
func TestForeignEntitiesRefused(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testForeignEntitiesRefused(t, openSQLite(t, "dst.db"), "sb") })
	// XTDB: one database for the whole test process, so the victim's ids
	// are unique to this run.
	t.Run("xtdb", func(t *testing.T) {
		testForeignEntitiesRefused(t, openXTDB(t), fmt.Sprintf("sb%d", time.Now().UnixNano()))
	})
}

func testForeignEntitiesRefused(t *testing.T, dst store.Store, sb string) {
	b := sessionbundletest.New(t, dst, sb, "")
	b.Turns(1)
	victimTool := fmt.Sprintf("toolu_%s_0002", sb)
	if _, err := dst.EntityTx(ctx, victimTool, store.Basis{}); err != nil {
		t.Fatalf("the victim's toolcall: %v", err)
	}

	// hostile builds, in a scratch store, a session sa whose index names
	// id, written by ops, and returns its bundle.
	hostile := func(name string, ops func(st store.Store) []store.Op, after func(st store.Store)) []byte {
		src := openSQLite(t, name+".db")
		a := sessionbundletest.New(t, src, "sa", "")
		a.Turns(1)
		s, err := session.Open(ctx, src, "sa")
		if err != nil {
			t.Fatal(err)
		}
		ex := ops(src)
		if _, _, err := s.Update(ctx, ex, func(st *session.State) error {
			for _, op := range ex {
				id, _ := store.DocID(op.Doc)
				st.AddToIndex(id)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if after != nil {
			after(src)
		}
		out, _ := exportBytes(t, src, "sa")
		return out
	}
	cases := map[string][]byte{
		"evicts sb's head": hostile("evict", func(store.Store) []store.Op {
			return []store.Op{store.Put(store.Doc{"xt/id": "session:" + sb, "type": "x"})}
		}, func(src store.Store) {
			if _, err := store.SubmitWait(ctx, src, []store.Op{{Kind: store.OpEvict, ID: "session:" + sb}}); err != nil {
				t.Fatal(err)
			}
		}),
		"overwrites sb's toolcall": hostile("tool", func(store.Store) []store.Op {
			return []store.Op{store.Put(store.Doc{"xt/id": victimTool, "content": "pwned"})}
		}, nil),
		"writes a document of sb": hostile("doc", func(store.Store) []store.Op {
			return []store.Op{store.Put(store.Doc{"xt/id": "note-of-" + sb, "session_id": sb, "content": "pwned"})}
		}, nil),
	}
	cases["names another session's source"] = rewriteManifest(t, hostile("src", func(store.Store) []store.Op { return nil }, nil),
		func(h *Header, ents []Entity) []Entity { h.Source.ID = "session:" + sb + "@elsewhere"; return ents })

	before := latestTx(t, dst)
	for name, bundle := range cases {
		_, err := ImportFile(ctx, dst, writeFile(t, bundle), ImportOptions{})
		if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: %v, want ErrForeign naming a line", name, err)
		}
		if latestTx(t, dst) != before {
			t.Fatalf("%s: the refused import wrote", name)
		}
	}
	if _, err := session.Open(ctx, dst, sb); err != nil {
		t.Fatalf("sb after the imports: %v", err)
	}
	doc, err := dst.Entity(ctx, victimTool, store.Basis{})
	if err != nil || doc["content"] == "pwned" {
		t.Fatalf("sb's toolcall after the imports: %v %v", doc, err)
	}
}

// An entity an earlier import of a source carried (a file, a toolcall)
// that the target wrote since, not for that import (another session read
// the file), is no longer the import's alone: a later bundle of the same
// source that would write it again is refused whole, and the other
// writer's version stays.
func TestLaterImportKeepsOthersWrites(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testLaterImportKeepsOthersWrites(t, openSQLite(t, "dst.db"), "sa") })
	t.Run("xtdb", func(t *testing.T) { testLaterImportKeepsOthersWrites(t, openXTDB(t), uniqueID("sa")) })
}

func testLaterImportKeepsOthersWrites(t *testing.T, dst store.Store, sid string) {
	src := openSQLite(t, "src.db")
	dir := t.TempDir()
	s := sessionbundletest.New(t, src, sid, dir)
	f := s.File("f.go", "package f\n")
	s.Read(f)
	s.Call()
	b1, _ := exportBytes(t, src, sid)
	importBytes(t, dst, b1, ImportOptions{})
	fid := fileID(t, s, "f.go")

	// Another writer of the target (session sb reading the same path).
	if _, err := store.SubmitWait(ctx, dst, []store.Op{store.Put(store.Doc{"xt/id": fid, "type": "file", "content": "sb's version"})}); err != nil {
		t.Fatal(err)
	}
	s.File("f.go", "package f // changed\n")
	s.Read(f)
	s.Call()
	b2, _ := exportBytes(t, src, sid)
	before := latestTx(t, dst)
	_, err := ImportFile(ctx, dst, writeFile(t, b2), ImportOptions{})
	if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), fid) {
		t.Fatalf("later import over another writer's version: %v", err)
	}
	if latestTx(t, dst) != before {
		t.Fatal("the refused import wrote")
	}
	doc, err := dst.Entity(ctx, fid, store.Basis{})
	if err != nil || doc["content"] != "sb's version" {
		t.Fatalf("the other writer's version after the import: %v %v", doc, err)
	}
}
