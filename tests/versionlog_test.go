package tests

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
	"github.com/ctxstore/ctxstore/sync/versionlog/versionlogtest"
	"github.com/ctxstore/ctxstore/xtdb"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// importOut is the part of import --json the tests read.
type importOut struct {
	Applied int64 `json:"applied"`
	Skipped int64 `json:"skipped"`
}

// TestCLIExportImportSync runs export, import and sync over the CLI:
// byte-identical exports (plain and gzip), an import that keeps every
// history and tx time, a second import and a second sync that change
// nothing.
func TestCLIExportImportSync(t *testing.T) {
	c := newCLI(t)
	src, ids := vlSource(t, c.dir, "src.db", "", 60, 1)
	c.ok("", "--store", src, "export", "-o", "a.jsonl")
	c.ok("", "--store", src, "export", "-o", "b.jsonl")
	c.ok("", "--store", src, "export", "-o", "a.jsonl.gz")
	c.ok("", "--store", src, "export", "--gzip", "-o", "b.gz")
	a, b := c.read("a.jsonl"), c.read("b.jsonl")
	if !bytes.Equal(a, b) || !bytes.Equal(c.read("a.jsonl.gz"), c.read("b.gz")) {
		t.Fatal("two exports of the same store differ")
	}
	if out := c.ok("", "--store", src, "export"); out != string(a) {
		t.Error("export to stdout differs from export -o")
	}
	var ex struct {
		Txs    int64  `json:"txs"`
		SHA256 string `json:"sha256"`
	}
	c.jsonOut(&ex, "", "--store", src, "export", "-o", "c.jsonl")
	c.fail(2, "", []string{"--json", "--store", src, "export"}, "--json needs -o FILE")

	var im importOut
	c.jsonOut(&im, "", "--store", "dst.db", "import", "a.jsonl.gz")
	if im.Applied != ex.Txs || ex.Txs == 0 {
		t.Fatalf("import applied %d of %d txs", im.Applied, ex.Txs)
	}
	c.jsonOut(&im, "", "--store", "dst.db", "import", "a.jsonl")
	if im.Applied != 0 || im.Skipped != ex.Txs {
		t.Errorf("second import applied %d, skipped %d", im.Applied, im.Skipped)
	}
	var sy struct {
		Import importOut `json:"import"`
	}
	c.jsonOut(&sy, "", "sync", "--from", src, "--to", "synced.db")
	c.jsonOut(&sy, "", "sync", "--from", src, "--to", "synced.db")
	if sy.Import.Applied != 0 {
		t.Errorf("second sync applied %d", sy.Import.Applied)
	}
	c.fail(1, "", []string{"sync", "--from", src, "--to", src}, "same store")
	c.fail(1, "", []string{"--store", src, "import", "a.jsonl"}, "exported from the target itself")
	c.fail(1, "", []string{"--store", "missing.db", "export"}, "no store at")

	s, d, y := vlOpen(t, src), vlOpen(t, c.path("dst.db")), vlOpen(t, c.path("synced.db"))
	defer s.Close()
	defer d.Close()
	defer y.Close()
	for _, target := range []store.Store{d, y} {
		m := versionlogtest.Mapping(t, target, "sqlite:"+src)
		if len(m) != len(vlCommitted(t, s)) {
			t.Fatalf("%d of %d source txs applied", len(m), len(vlCommitted(t, s)))
		}
		vlSameHistories(t, s, target, ids, m, true, 1)
	}
}

// read returns a file of the working directory.
func (c *cli) read(name string) []byte {
	c.t.Helper()
	b, err := os.ReadFile(c.path(name))
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

// TestCLIImportFaults: damaged logs and logs that do not continue the
// target's cursor fail with the line named, and the target is unchanged.
func TestCLIImportFaults(t *testing.T) {
	c := newCLI(t)
	src, _ := vlSource(t, c.dir, "src.db", "", 20, 2)
	c.ok("", "--store", src, "export", "-o", "log.jsonl")
	log := c.read("log.jsonl")
	lines := bytes.SplitAfter(log, []byte("\n"))
	lines = lines[:len(lines)-1]
	n := len(lines)
	join := func(ls [][]byte) string { return string(bytes.Join(ls, nil)) }
	c.ok("", "--store", src, "export", "--after", "5", "-o", "later.jsonl")
	cases := []struct {
		name, log string
		says      []string
	}{
		{"truncated", join(lines[:n-1]), []string{"line " + strconv.Itoa(n), "truncated"}},
		{"cut mid-line", join(lines[:3]) + string(lines[3][:20]), []string{"line 4", "truncated"}},
		{"corrupted line", join(lines[:2]) + "{\"t\":\"tx\",oops\n" + join(lines[3:]), []string{"line 3", "corrupt"}},
		{"checksum mismatch", strings.Replace(string(log), `"valid_to":null`, `"valid_to":"2999-01-01T00:00:00.000Z"`, 1), []string{"line " + strconv.Itoa(n), "checksum mismatch"}},
		{"unknown version", strings.Replace(string(log), `"version":1,`, `"version":7,`, 1), []string{"line 1", "unknown format version", "version 7"}},
		{"not continuing", string(c.read("later.jsonl")), []string{"line 1", "does not continue", "after source tx 5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.ok(`{"xt/id":"mine"}`, "--store", "target.db", "put")
			before := c.ok("", "--json", "--store", "target.db", "log")
			file := c.write("bad.jsonl", tc.log)
			c.fail(1, "", []string{"--store", "target.db", "import", file}, append(tc.says, file)...)
			if after := c.ok("", "--json", "--store", "target.db", "log"); after != before {
				t.Errorf("the target changed:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// TestCLIImportKill9 kills `ctxstore import` with SIGKILL at random
// moments, then runs it to the end: every source transaction is applied
// exactly once and every history is the source's, tx times included.
func TestCLIImportKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	c := newCLI(t)
	src, ids := vlSource(t, c.dir, "src.db", "", 1000, 3)
	c.ok("", "--store", src, "export", "-o", "log.jsonl")
	// How long a whole import takes here, to aim the kills inside it.
	start := time.Now()
	c.ok("", "--store", "timing.db", "import", "log.jsonl")
	full := time.Since(start)

	ctx := context.Background()
	sourceID := "sqlite:" + src
	midway := 0
	for round := range 6 {
		cmd := exec.Command(ctxstoreBin, "--store", "dst.db", "import", "log.jsonl")
		cmd.Dir, cmd.Env = c.dir, c.env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(float64(full) * (0.05 + 0.1*rand.Float64())))
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		d := vlOpen(t, c.path("dst.db"))
		cur, err := versionlog.ReadCursor(ctx, d, sourceID)
		if err != nil {
			t.Fatal(err)
		}
		m := versionlogtest.Mapping(t, d, sourceID) // fails on a tx applied twice
		txs := len(vlCommitted(t, d))
		d.Close()
		applied := 0
		if cur != nil {
			applied = len(m)
		}
		if txs != applied {
			t.Fatalf("round %d: target has %d txs, its cursor maps %d", round, txs, applied)
		}
		if applied > 0 && applied < 1000 {
			midway++
		}
		t.Logf("round %d: killed with %d source txs applied", round, applied)
	}
	if midway == 0 {
		t.Fatal("no kill landed in the middle of an import")
	}
	c.ok("", "--store", "dst.db", "import", "log.jsonl")
	s, d := vlOpen(t, src), vlOpen(t, c.path("dst.db"))
	defer s.Close()
	defer d.Close()
	m := versionlogtest.Mapping(t, d, sourceID)
	if srcTxs, dstTxs := len(vlCommitted(t, s)), len(vlCommitted(t, d)); len(m) != srcTxs || dstTxs != srcTxs {
		t.Fatalf("source has %d txs, target %d, %d mapped", srcTxs, dstTxs, len(m))
	}
	vlSameHistories(t, s, d, ids, m, true, 10)
}

// TestCLIFidelityXTDB: SQLite -> log -> XTDB -> log -> SQLite over the
// CLI keeps every entity's history at every basis, mapped by transaction
// order through the cursors' histories.
func TestCLIFidelityXTDB(t *testing.T) {
	url := xtdbtest.ForTest(t)
	ctx := context.Background()
	c := newCLI(t)
	prefix := "clivl" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	src, ids := vlSource(t, c.dir, "src.db", prefix, 80, 4)
	c.ok("", "--store", src, "export", "-o", "one.jsonl.gz")
	c.ok("", "--store", url, "import", "one.jsonl.gz")

	x, err := xtdb.Open(ctx, url, xtdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	m1 := versionlogtest.Mapping(t, x, "sqlite:"+src)
	first := int64(-1)
	for _, v := range m1 {
		if first < 0 || v < first {
			first = v
		}
	}
	after := strconv.FormatInt(first-1, 10)
	c.ok("", "--store", url, "export", "--after="+after, "-o", "two.jsonl")
	c.ok("", "--store", url, "export", "--after="+after, "-o", "two-again.jsonl")
	if !bytes.Equal(c.read("two.jsonl"), c.read("two-again.jsonl")) {
		t.Fatal("two exports of XTDB differ")
	}
	c.ok("", "--store", "dst.db", "import", "--partial", "two.jsonl")

	s, d := vlOpen(t, src), vlOpen(t, c.path("dst.db"))
	defer s.Close()
	defer d.Close()
	m2 := versionlogtest.Mapping(t, d, "xtdb:"+url)
	m := map[int64]int64{}
	for sx, xt := range m1 {
		m[sx] = m2[xt]
	}
	if len(m1) != len(vlCommitted(t, s)) {
		t.Fatalf("XTDB applied %d of %d source txs", len(m1), len(vlCommitted(t, s)))
	}
	vlSameHistories(t, s, x, ids, m1, false, 1)
	vlSameHistories(t, s, d, ids, m, false, 1)
}
