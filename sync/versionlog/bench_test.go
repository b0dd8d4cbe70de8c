package versionlog_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
	"github.com/ctxstore/ctxstore/xtdb"
	"github.com/ctxstore/ctxstore/xtdb/xtdbserver"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// The benchmarks use transactions of benchBatch puts of ~300-byte
// documents (the shape of bitemporal's benchmarks): every version is a
// new document, a third of them re-putting an earlier entity.
const benchBatch = 100

func benchTx(tx int) []store.Op {
	ops := make([]store.Op, benchBatch)
	for j := range ops {
		v := tx*benchBatch + j
		ops[j] = store.Put(store.Doc{"xt/id": "e" + strconv.Itoa(v-v/3), "type": "toolcall", "tool": "read",
			"status": "ok", "n": json.Number(strconv.Itoa(v)), "content": strings.Repeat("x", 200)})
	}
	return ops
}

// benchSource fills a new SQLite store with txs transactions.
func benchSource(b *testing.B, txs int) *bitemporal.Store {
	b.Helper()
	s := openSQLite(b, "src.db")
	for i := range txs {
		if _, err := s.Submit(context.Background(), benchTx(i)); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// writeLog writes a log of txs synthetic transactions (as benchSource
// would export them) to path, without a store.
func writeLog(tb testing.TB, path string, txs int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	w, err := versionlog.NewWriter(f, versionlog.Header{Source: versionlog.Source{ID: "bench", Backend: "sqlite", Version: "1"}, After: -1, Upto: int64(txs - 1)})
	if err != nil {
		tb.Fatal(err)
	}
	t0 := base
	for i := range txs {
		tx, err := versionlog.FromLogged(store.LoggedTx{Tx: store.Tx{ID: int64(i), Time: t0.Add(time.Duration(i) * time.Millisecond)}, Ops: benchTx(i)})
		if err != nil {
			tb.Fatal(err)
		}
		if err := w.WriteTx(tx); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkExport: export throughput from SQLite, in MB/s of log and
// versions (ops) per second.
func BenchmarkExport(b *testing.B) {
	src := benchSource(b, 200)
	var sum versionlog.ExportSummary
	b.ResetTimer()
	for b.Loop() {
		var err error
		if sum, err = versionlog.Export(context.Background(), src, io.Discard, versionlog.ExportOptions{After: -1}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(sum.Bytes)
	b.ReportMetric(float64(sum.Ops)*float64(b.N)/b.Elapsed().Seconds(), "versions/s")
}

// BenchmarkExportViaTxLog: the same export through store.Store.TxLog only
// (documents decoded, then canonicalized again), the path of a store
// without store.CanonicalTxLogger.
func BenchmarkExportViaTxLog(b *testing.B) {
	src := benchSource(b, 200)
	var sum versionlog.ExportSummary
	b.ResetTimer()
	for b.Loop() {
		var err error
		if sum, err = versionlog.Export(context.Background(), struct{ store.Store }{src}, io.Discard, versionlog.ExportOptions{After: -1}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(sum.Bytes)
	b.ReportMetric(float64(sum.Ops)*float64(b.N)/b.Elapsed().Seconds(), "versions/s")
}

// BenchmarkImportSQLite: ImportFile (verify, then apply) of a log into a
// new SQLite store, against the SQLite backend's own Submit of the same
// batches into a new store in the same run; x-batched is import time over
// batched-put time.
func BenchmarkImportSQLite(b *testing.B) {
	const txs = 200
	dir := b.TempDir()
	log := filepath.Join(dir, "log.jsonl")
	writeLog(b, log, txs)
	ctx := context.Background()
	var raw, imp time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		s, err := bitemporal.Open(ctx, filepath.Join(dir, fmt.Sprintf("raw%d.db", i)), bitemporal.Options{})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for j := range txs {
			if _, err := s.Submit(ctx, benchTx(j)); err != nil {
				b.Fatal(err)
			}
		}
		raw += time.Since(t0)
		s.Close()
		d, err := bitemporal.Open(ctx, filepath.Join(dir, fmt.Sprintf("imp%d.db", i)), bitemporal.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 = time.Now()
		if _, err := versionlog.ImportFile(ctx, d, log, versionlog.ImportOptions{}); err != nil {
			b.Fatal(err)
		}
		imp += time.Since(t0)
		b.StopTimer()
		d.Close()
		b.StartTimer()
	}
	versions := float64(txs * benchBatch * b.N)
	b.ReportMetric(versions/imp.Seconds(), "versions/s")
	b.ReportMetric(versions/raw.Seconds(), "raw-versions/s")
	b.ReportMetric(imp.Seconds()/raw.Seconds(), "x-batched")
}

// rssChildEnv makes the test binary a child that runs one import or
// export and prints its peak RSS (see TestMain).
const rssChildEnv = "VERSIONLOG_RSS_CHILD"

// rssChild runs mode "import LOG DB", "export DB" or "export-xtdb URL"
// and prints VmHWM in kB (and, for export-xtdb, the ops and seconds).
func rssChild(mode string) int {
	ctx := context.Background()
	args := strings.Fields(mode)
	if args[0] == "export-xtdb" {
		return xtdbExportChild(ctx, args[1])
	}
	s, err := bitemporal.Open(ctx, args[len(args)-1], bitemporal.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	switch args[0] {
	case "import":
		_, err = versionlog.ImportFile(ctx, s, args[1], versionlog.ImportOptions{})
	case "export":
		_, err = versionlog.Export(ctx, s, io.Discard, versionlog.ExportOptions{After: -1})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kb, err := peakRSS()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(kb)
	return 0
}

// peakRSS reads this process's VmHWM (kB) from /proc/self/status.
func peakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

// childRSS runs the test binary as an rss child and returns its VmHWM.
func childRSS(tb testing.TB, mode string) int64 {
	tb.Helper()
	out := childOutput(tb, mode)
	kb, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		tb.Fatalf("rss child %q printed %q", mode, out)
	}
	return kb
}

// childOutput runs the test binary as an rss child and returns what it
// printed, trimmed.
func childOutput(tb testing.TB, mode string) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), rssChildEnv+"="+mode)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tb.Fatalf("rss child %q: %v\n%s", mode, err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// BenchmarkPeakRSS imports a log and a 10x larger one into new SQLite
// stores, then exports both stores, each in a child process, and reports
// the children's peak RSS and the 10x/1x ratios (the aim: within 1.5).
func BenchmarkPeakRSS(b *testing.B) {
	dir := b.TempDir()
	sizes := map[string]int{"1x": 100, "10x": 1000}
	rss := map[string]int64{}
	for range b.N {
		for name, txs := range sizes {
			log, db := filepath.Join(dir, name+".jsonl"), filepath.Join(dir, name+".db")
			if _, err := os.Stat(log); err != nil {
				writeLog(b, log, txs)
			}
			os.Remove(db)
			rss["import-"+name] = childRSS(b, "import "+log+" "+db)
			rss["export-"+name] = childRSS(b, "export "+db)
		}
	}
	for _, k := range []string{"import", "export"} {
		b.ReportMetric(float64(rss[k+"-1x"])/1024, k+"-1x-MB")
		b.ReportMetric(float64(rss[k+"-10x"])/1024, k+"-10x-MB")
		b.ReportMetric(float64(rss[k+"-10x"])/float64(rss[k+"-1x"]), k+"-rss-ratio")
	}
}

// xtdbExportChild exports the whole XTDB store at url with a new client
// and prints its peak RSS (kB), the ops exported and the seconds taken.
func xtdbExportChild(ctx context.Context, url string) int {
	x, err := xtdb.Open(ctx, url, xtdb.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer x.Close()
	start := time.Now()
	var scan unresolvedScan
	sum, err := versionlog.Export(ctx, x, &scan, versionlog.ExportOptions{After: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	secs := time.Since(start).Seconds()
	kb, err := peakRSS()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if scan.found {
		fmt.Fprintln(os.Stderr, "an id was not resolved")
		return 1
	}
	fmt.Println(kb, sum.Ops, secs)
	return 0
}

// unresolvedScan is an io.Writer that notes whether xtdb.UnknownIDPrefix
// went through it.
type unresolvedScan struct {
	tail  []byte
	found bool
}

func (w *unresolvedScan) Write(p []byte) (int, error) {
	buf := append(w.tail, p...)
	if bytes.Contains(buf, []byte(xtdb.UnknownIDPrefix)) {
		w.found = true
	}
	w.tail = append(w.tail[:0], buf[max(0, len(buf)-len(xtdb.UnknownIDPrefix)):]...)
	return len(p), nil
}

// BenchmarkExportXTDB exports an XTDB store of N entities and one of 10N,
// each on a node of its own and by a new client in a child process, and
// reports the children's peak RSS, their ratio (the aim: within 1.5, as
// for SQLite) and the export rate. Each entity is put once (txs of 50
// puts), then deleted (txs of 50 deletes, oldest first): XTDB logs deletes
// by id hash only, so every delete makes the driver find its entity's id,
// most of them far behind in the log. With N = 5,000 (the default, set by
// CTXSTORE_BENCH_XTDB_ENTITIES) both logs are whole pages of the export
// (100 txs): a page is the same size in both, and only the number of
// entities differs.
func BenchmarkExportXTDB(b *testing.B) {
	const batch = 50
	n := 5000
	if v := os.Getenv("CTXSTORE_BENCH_XTDB_ENTITIES"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	xtdbtest.ForTest(b) // skips (or fails on CI) where no node can run
	ctx := context.Background()
	res := map[string][3]float64{}
	for range b.N {
		for _, sz := range []struct {
			name     string
			entities int
		}{{"1x", n}, {"10x", 10 * n}} {
			srv, err := xtdbserver.Start(ctx, xtdbserver.Options{})
			if err != nil {
				b.Fatal(err)
			}
			func() {
				defer srv.Stop()
				x, err := xtdb.Open(ctx, srv.URL(), xtdb.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer x.Close()
				var last store.Tx
				for _, kind := range []store.OpKind{store.OpPut, store.OpDelete} {
					for lo := 0; lo < sz.entities; lo += batch {
						var ops []store.Op
						for i := lo; i < min(lo+batch, sz.entities); i++ {
							id := "e" + strconv.Itoa(i)
							if kind == store.OpDelete {
								ops = append(ops, store.Delete(id))
								continue
							}
							ops = append(ops, store.Put(store.Doc{"xt/id": id, "type": "toolcall", "tool": "read",
								"status": "ok", "n": json.Number(strconv.Itoa(i)), "content": strings.Repeat("x", 200)}))
						}
						if last, err = x.Submit(ctx, ops); err != nil {
							b.Fatal(err)
						}
					}
				}
				if _, err := x.AwaitTx(ctx, last.ID, 30*time.Minute); err != nil {
					b.Fatal(err)
				}
				out := childOutput(b, "export-xtdb "+srv.URL())
				var kb, ops, secs float64
				if _, err := fmt.Sscan(out, &kb, &ops, &secs); err != nil {
					b.Fatalf("child printed %q", out)
				}
				res[sz.name] = [3]float64{kb, ops, secs}
			}()
		}
	}
	for _, k := range []string{"1x", "10x"} {
		b.ReportMetric(res[k][0]/1024, "rss-"+k+"-MB")
		b.ReportMetric(res[k][1]/res[k][2], "versions/s-"+k)
	}
	b.ReportMetric(res["10x"][0]/res["1x"][0], "rss-ratio")
}
