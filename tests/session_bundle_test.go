package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/sessionbundle/sessionbundletest"
	"github.com/ctxstore/ctxstore/xtdb"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// sbImport is the part of session import --json the tests read.
type sbImport struct {
	Session  string `json:"session"`
	Applied  int64  `json:"applied"`
	Skipped  int64  `json:"skipped"`
	Rebuilt  int64  `json:"rebuilt"`
	Complete bool   `json:"complete"`
	Commits  int64  `json:"commits"`
}

// sbCheck opens the imported session in st and rebuilds every call of the
// source session s from it.
func sbCheck(t *testing.T, st store.Store, s *sessionbundletest.Session, state session.State) {
	t.Helper()
	ctx := context.Background()
	got, err := session.Open(ctx, st, s.ID)
	if err != nil {
		t.Fatalf("opening the imported session: %v", err)
	}
	if !reflect.DeepEqual(got.State(), state) {
		t.Fatalf("imported state %+v, want %+v", got.State(), state)
	}
	for _, c := range s.Calls {
		r, err := assemble.Rebuild(ctx, st, s.ID, c.N)
		if err != nil || !bytes.Equal(r.Bytes, c.Bytes) {
			t.Fatalf("rebuilding call %d from the imported session: %v", c.N, err)
		}
	}
}

// TestCLISessionBundle moves a session with the CLI: SQLite -> bundle ->
// SQLite (from a file and from stdin, gzip), a second import that changes
// nothing, session list, damaged bundles refused with the line named, and
// SQLite -> XTDB -> SQLite; every call rebuilds byte for byte at each
// step.
func TestCLISessionBundle(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	id := fmt.Sprintf("cli-%d", time.Now().UnixNano()) // unique on a shared XTDB node
	src := vlOpen(t, c.path("src.db"))
	s := sessionbundletest.New(t, src, id, "")
	s.Turns(10)
	ss, err := session.Open(ctx, src, id)
	if err != nil {
		t.Fatal(err)
	}
	state := ss.State()
	src.Close()

	var list []struct {
		Session string `json:"session"`
		Calls   int    `json:"calls"`
		Turn    int    `json:"turn"`
	}
	c.jsonOut(&list, "", "--store", "src.db", "session", "list")
	if len(list) != 1 || list[0].Session != id || list[0].Calls != 10 || list[0].Turn != 10 {
		t.Fatalf("session list: %+v", list)
	}
	var ex struct {
		Commits int64 `json:"commits"`
		Bytes   int64 `json:"bytes"`
		Log     struct {
			Txs int64 `json:"txs"`
		} `json:"log"`
	}
	c.jsonOut(&ex, "", "--store", "src.db", "session", "export", id, "-o", "s.bundle")
	c.ok("", "--store", "src.db", "session", "export", id, "-o", "s.bundle.gz")
	bundle := c.read("s.bundle")
	if ex.Commits != 10 || ex.Bytes != int64(len(bundle)) {
		t.Fatalf("export: %+v, %d bytes", ex, len(bundle))
	}
	if out := c.ok("", "--store", "src.db", "session", "export", id); out != string(bundle) {
		t.Fatal("export to stdout differs from export -o")
	}
	c.fail(2, "", []string{"--json", "--store", "src.db", "session", "export", id}, "--json needs -o FILE")
	c.fail(1, "", []string{"--store", "src.db", "session", "export", "nope"}, "session nope")
	if out := c.ok("", "session", "verify", "s.bundle.gz"); !strings.Contains(out, "10 calls") || !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("verify: %q", out)
	}

	var im sbImport
	c.jsonOut(&im, "", "--store", "dst.db", "session", "import", "--rebuild", "s.bundle")
	if im.Session != id || im.Applied != ex.Log.Txs || im.Rebuilt != 10 || !im.Complete {
		t.Fatalf("import: %+v", im)
	}
	c.jsonOut(&im, "", "--store", "dst.db", "session", "import", "s.bundle.gz")
	if im.Applied != 0 || im.Skipped != ex.Log.Txs {
		t.Fatalf("second import: %+v", im)
	}
	c.jsonOut(&im, string(c.read("s.bundle.gz")), "--store", "stdin.db", "session", "import", "-")
	if im.Applied != ex.Log.Txs {
		t.Fatalf("import from stdin: %+v", im)
	}
	if out := c.ok("", "--store", "dst.db", "session", "list"); !strings.Contains(out, id) || !strings.Contains(out, "session:"+id+"@sqlite:") {
		t.Fatalf("session list of the target: %q", out)
	}
	var imported []struct {
		Imported []struct {
			Source   string `json:"source"`
			Complete bool   `json:"complete"`
		} `json:"imported"`
	}
	c.jsonOut(&imported, "", "--store", "dst.db", "session", "list")
	if len(imported) != 1 || len(imported[0].Imported) != 1 || !imported[0].Imported[0].Complete {
		t.Fatalf("session list --json of the target: %+v", imported)
	}

	// Damaged bundles: refused, the line named, the target untouched.
	lines := strings.SplitAfter(string(bundle), "\n")
	c.write("cut.bundle", strings.Join(lines[:len(lines)/2], ""))
	c.fail(1, "", []string{"--store", "bad.db", "session", "import", "cut.bundle"}, "cut.bundle: line", "truncated")
	damaged := strings.Replace(string(bundle), `"role":"chat"`, `"role":"chot"`, 1)
	c.write("damaged.bundle", damaged)
	c.fail(1, "", []string{"--store", "bad.db", "session", "import", "damaged.bundle"}, "line ", "unknown role")
	c.fail(1, damaged, []string{"--store", "bad.db", "session", "import", "-"}, "stdin: line ", "unknown role")
	c.fail(1, "", []string{"session", "verify", "damaged.bundle"}, "damaged.bundle: line ")
	c.fail(1, "", []string{"--store", "dst.db", "session", "import", "nothing.bundle"}, "nothing.bundle")
	var st struct {
		Latest *struct{} `json:"latest_completed"`
	}
	c.jsonOut(&st, "", "--store", "bad.db", "status")
	if st.Latest != nil {
		t.Fatal("a refused import wrote to the store")
	}
	c.fail(1, "", []string{"--store", "src.db", "session", "import", "s.bundle"}, "exported from the target itself")

	dst := vlOpen(t, c.path("dst.db"))
	sbCheck(t, dst, s, state)
	dst.Close()

	// SQLite -> XTDB -> SQLite.
	url := xtdbtest.ForTest(t)
	c.jsonOut(&im, "", "--store", url, "session", "import", "--rebuild", "s.bundle")
	if im.Applied != ex.Log.Txs || im.Rebuilt != 10 {
		t.Fatalf("import into XTDB: %+v", im)
	}
	c.ok("", "--store", url, "session", "export", id, "-o", "x.bundle")
	c.jsonOut(&im, "", "--store", "back.db", "session", "import", "--rebuild", "x.bundle")
	if im.Applied != ex.Log.Txs || im.Rebuilt != 10 {
		t.Fatalf("import back from XTDB: %+v", im)
	}
	x, err := xtdb.Open(ctx, url, xtdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	sbCheck(t, x, s, state)
	back := vlOpen(t, c.path("back.db"))
	defer back.Close()
	sbCheck(t, back, s, state)

	var v struct {
		Header struct {
			Session string `json:"session"`
			Source  struct {
				Backend string `json:"backend"`
			} `json:"source"`
		} `json:"header"`
	}
	out := c.ok("", "--json", "session", "verify", "x.bundle")
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Header.Session != id || v.Header.Source.Backend != "xtdb" {
		t.Fatalf("verify --json of the XTDB bundle: %q %v", out, err)
	}
}
