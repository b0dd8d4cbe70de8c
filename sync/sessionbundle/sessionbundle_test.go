package sessionbundle

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/sessionbundle/sessionbundletest"
	"github.com/ctxstore/ctxstore/xtdb"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := xtdbtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the XTDB server:", err)
	}
	os.Exit(code)
}

var ctx = context.Background()

func openSQLite(t testing.TB, path string) *bitemporal.Store {
	t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(t.TempDir(), path)
	}
	st, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openXTDB connects to the test XTDB node, shared by every test of the
// process: ids must be unique. With CI=true a missing node fails.
func openXTDB(t *testing.T) store.Store {
	t.Helper()
	x, err := xtdb.Open(ctx, xtdbtest.ForTest(t), xtdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func exportBytes(t *testing.T, st store.Store, id string) ([]byte, ExportSummary) {
	t.Helper()
	var b bytes.Buffer
	sum, err := Export(ctx, st, id, &b, ExportOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Bytes != int64(b.Len()) || sum.Lines != int64(bytes.Count(b.Bytes(), []byte("\n"))) {
		t.Fatalf("summary says %d bytes, %d lines; the bundle has %d, %d", sum.Bytes, sum.Lines, b.Len(), bytes.Count(b.Bytes(), []byte("\n")))
	}
	return b.Bytes(), sum
}

func writeFile(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bundle.jsonl")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func importBytes(t *testing.T, st store.Store, b []byte, o ImportOptions) ImportSummary {
	t.Helper()
	sum, err := ImportFile(ctx, st, writeFile(t, b), o)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func latestTx(t *testing.T, st store.Store) int64 {
	t.Helper()
	s, err := st.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.LatestSubmitted == nil {
		return -1
	}
	return s.LatestSubmitted.ID
}

// checkImported: the session opens in dst with the source's State and
// Info, and every call rebuilds from dst byte for byte.
func checkImported(t *testing.T, dst store.Store, s *sessionbundletest.Session) {
	t.Helper()
	a, err := session.Open(ctx, s.Store, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := session.Open(ctx, dst, s.ID)
	if err != nil {
		t.Fatalf("opening the imported session: %v", err)
	}
	if !reflect.DeepEqual(a.State(), b.State()) || a.Info() != b.Info() {
		t.Fatalf("imported session differs:\n%+v\n%+v", b.State(), a.State())
	}
	for _, c := range s.Calls {
		r, err := assemble.Rebuild(ctx, dst, s.ID, c.N)
		if err != nil {
			t.Fatalf("rebuilding call %d in the target: %v", c.N, err)
		}
		if !bytes.Equal(r.Bytes, c.Bytes) || fmt.Sprint(r.Messages()) != fmt.Sprint(c.Messages()) {
			t.Fatalf("call %d rebuilt differently in the target", c.N)
		}
	}
}

// SQLite to SQLite: deterministic exports that hold only the session's
// entities (a file shared with another session comes with its whole
// history), an import that rebuilds every call and opens the same State,
// a second import that changes nothing, and an import into a store with
// history of its own (other tx ids, the target's clock).
func TestSQLiteToSQLite(t *testing.T) {
	src := openSQLite(t, "src.db")
	dir := t.TempDir()
	other := sessionbundletest.New(t, src, "other", dir)
	other.Turns(3) // reads a.go and b.go first
	s := sessionbundletest.New(t, src, "s1", dir)
	s.Turns(24)
	other.Turns(2)

	b1, sum := exportBytes(t, src, "s1")
	b2, _ := exportBytes(t, src, "s1")
	if !bytes.Equal(b1, b2) {
		t.Fatal("two exports of the same session differ")
	}
	info, err := Verify(bytes.NewReader(b1))
	if err != nil {
		t.Fatal(err)
	}
	if info.Header.Commits != 24 || sum.Commits != 24 || info.Trailer.Txs == 0 || info.Lines != sum.Lines {
		t.Fatalf("bundle: %+v, summary %+v", info, sum)
	}
	roles := map[Role]int{}
	for _, e := range info.Entities {
		roles[e.Role]++
		if strings.Contains(e.ID, "other") {
			t.Errorf("the bundle of s1 holds %s", e.ID)
		}
	}
	if roles[RoleSession] != 1 || roles[RoleChat] != 1 || roles[RoleSystemPrompt] != 1 || roles[RoleCommit] != 24 || roles[RoleObject] < 70 {
		t.Fatalf("roles: %v", roles)
	}
	// The shared file carries its whole history, the other session's
	// first read included.
	aID := fileID(t, s, "a.go")
	hist, err := src.History(ctx, aID, store.HistoryOptions{Order: store.Asc})
	if err != nil {
		t.Fatal(err)
	}
	if first := hist[0].TxID; *info.Trailer.FirstTx > first {
		t.Fatalf("the log starts at tx %d, after a.go's first version (tx %d)", *info.Trailer.FirstTx, first)
	}

	dst := openSQLite(t, "dst.db")
	im := importBytes(t, dst, b1, ImportOptions{Rebuild: true})
	if im.Applied != info.Trailer.Txs || im.KeptTxTimes != im.Applied || !im.Complete || im.Rebuilt != 24 {
		t.Fatalf("import: %+v", im)
	}
	checkImported(t, dst, s)
	before := latestTx(t, dst)
	again := importBytes(t, dst, b1, ImportOptions{})
	if again.Applied != 0 || again.Skipped != info.Trailer.Txs || latestTx(t, dst) != before {
		t.Fatalf("second import: %+v (latest tx %d, was %d)", again, latestTx(t, dst), before)
	}
	list, err := ListImported(ctx, dst)
	if err != nil || len(list) != 1 || list[0].Session != "s1" || !list[0].Complete || list[0].Commits != 24 {
		t.Fatalf("imported: %+v %v", list, err)
	}

	// A store with a history of its own: every tx id differs, tx times are
	// the target's.
	busy := openSQLite(t, "busy.db")
	for i := range 50 {
		if _, err := store.SubmitWait(ctx, busy, []store.Op{store.Put(store.Doc{store.IDKey: fmt.Sprintf("x%d", i)})}); err != nil {
			t.Fatal(err)
		}
	}
	im = importBytes(t, busy, b1, ImportOptions{})
	if im.Applied != info.Trailer.Txs || im.KeptTxTimes != 0 {
		t.Fatalf("import into a busy store: %+v", im)
	}
	checkImported(t, busy, s)
	if n := movedRefs(t, busy, s); n == 0 {
		t.Fatal("no static reference names another version (or nothing) as of its tx in the busy store: the test does not exercise portable resolution")
	}
}

// movedRefs counts the static references of the session's last commit
// that, as of their tx in st, find nothing or another version: those that
// only resolve by their hashes.
func movedRefs(t *testing.T, st store.Store, s *sessionbundletest.Session) int {
	t.Helper()
	var n int
	for k := 1; k <= len(s.Calls); k++ {
		c, err := assemble.ReadCommit(ctx, st, s.ID, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range c.Items {
			if it.Ref == "" {
				continue
			}
			ref, err := objects.ParseRef(it.Ref)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := st.Entity(ctx, ref.ID, store.AtTx(ref.Tx, time.Time{}))
			if err != nil || doc["content_hash"] != ref.ContentHash {
				n++
			}
		}
	}
	return n
}

func fileID(t *testing.T, s *sessionbundletest.Session, name string) string {
	t.Helper()
	r, err := s.Ix.Index(ctx, filepath.Join(s.Dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return r.Object.ID()
}

// SQLite -> XTDB -> SQLite: the session imported into XTDB rebuilds every
// call and opens with the same State; exported from XTDB (where it has
// XTDB's tx ids and times) and imported into SQLite, it still does.
func TestSQLiteToXTDBToSQLite(t *testing.T) {
	x := openXTDB(t)
	src := openSQLite(t, "src.db")
	id := uniqueID("rt")
	s := sessionbundletest.New(t, src, id, "")
	s.Turns(12)
	b1, _ := exportBytes(t, src, id)

	im := importBytes(t, x, b1, ImportOptions{Rebuild: true})
	if im.Applied == 0 || im.KeptTxTimes != 0 || !im.Complete || im.Rebuilt != 12 {
		t.Fatalf("import into XTDB: %+v", im)
	}
	checkImported(t, x, s)
	before := latestTx(t, x)
	if again := importBytes(t, x, b1, ImportOptions{}); again.Applied != 0 || latestTx(t, x) != before {
		t.Fatalf("second import into XTDB: %+v", again)
	}

	b2, sum2 := exportBytes(t, x, id)
	b3, _ := exportBytes(t, x, id)
	if !bytes.Equal(b2, b3) {
		t.Fatal("two exports from XTDB differ")
	}
	if sum2.Commits != 12 || sum2.Log.Txs != im.Applied {
		t.Fatalf("export from XTDB: %+v (imported %d txs)", sum2, im.Applied)
	}
	back := openSQLite(t, "back.db")
	im2 := importBytes(t, back, b2, ImportOptions{Rebuild: true})
	if im2.Applied != sum2.Log.Txs || im2.Rebuilt != 12 {
		t.Fatalf("import back into SQLite: %+v", im2)
	}
	checkImported(t, back, s)
}

// uniqueID makes a session id no other test on the shared XTDB node uses.
func uniqueID(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}

// The imported session continues in the target as it would have in the
// source: an assembler resumed there (assemble.Resume) makes the same
// next call.
func TestResumeInTarget(t *testing.T) {
	src := openSQLite(t, "src.db")
	s := sessionbundletest.New(t, src, "s1", "")
	s.Turns(6)
	b, _ := exportBytes(t, src, "s1")
	dst := openSQLite(t, "dst.db")
	importBytes(t, dst, b, ImportOptions{})
	now := time.Date(2026, 1, 1, 12, 3, 0, 0, time.UTC) // within the cache TTL of the last call
	next := func(st store.Store) []byte {
		ss, err := session.Open(ctx, st, "s1")
		if err != nil {
			t.Fatal(err)
		}
		a, err := assemble.Resume(ctx, ss, assemble.Options{Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.User(ctx, "and now?"); err != nil {
			t.Fatal(err)
		}
		c, err := a.Call(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c.Bytes
	}
	got, want := next(dst), next(src)
	if !bytes.Equal(got, want) {
		t.Fatalf("the next call in the target differs from the source's: %d bytes, want %d", len(got), len(want))
	}
}
