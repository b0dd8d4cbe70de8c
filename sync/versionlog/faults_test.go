package versionlog_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// logLines splits a log into its lines, newlines kept.
func logLines(log []byte) [][]byte {
	ls := bytes.SplitAfter(log, []byte("\n"))
	return ls[:len(ls)-1]
}

// lineIndex returns the 0-based index of the n-th line (0-based) that
// contains sub.
func lineIndex(t *testing.T, lines [][]byte, sub string, n int) int {
	t.Helper()
	for i, l := range lines {
		if bytes.Contains(l, []byte(sub)) {
			if n == 0 {
				return i
			}
			n--
		}
	}
	t.Fatalf("no line %d containing %q", n, sub)
	return -1
}

// targetState is what a fault must leave unchanged.
func targetState(t *testing.T, s store.Store) string {
	t.Helper()
	st, err := s.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("txs %d latest %+v detail %v", txCount(t, s), st.LatestCompleted, st.Detail)
}

// TestFaults damages a log in each way the format guards against; each
// import fails with an error naming the line, and the target is unchanged.
func TestFaults(t *testing.T) {
	src := openSQLite(t, "src.db")
	populate(t, src, scenarioIDs("", 4), 5, 40)
	log := exportBytes(t, src, -1)
	lines := logLines(log)
	end := len(lines) - 1
	join := func(ls ...[]byte) []byte { return bytes.Join(ls, nil) }
	replaced := func(i int, old, new string) []byte {
		c := bytes.Clone(log)
		ls := logLines(c)
		if !bytes.Contains(ls[i], []byte(old)) {
			t.Fatalf("line %d lacks %q", i+1, old)
		}
		ls[i] = bytes.Replace(ls[i], []byte(old), []byte(new), 1)
		return join(ls...)
	}
	tx5 := lineIndex(t, lines, `{"t":"tx"`, 5)
	doc3 := lineIndex(t, lines, `{"t":"doc"`, 3)
	del := lineIndex(t, lines, `{"op":"delete","id":"e`, 0)
	delID := string(bytes.SplitN(bytes.SplitN(lines[del], []byte(`{"op":"delete","id":"`), 2)[1], []byte(`"`), 2)[0])
	// The first tx line using the document of doc line doc3.
	hash := string(bytes.SplitN(bytes.SplitN(lines[doc3], []byte(`"hash":"`), 2)[1], []byte(`"`), 2)[0])
	use := lineIndex(t, lines[doc3:], `"doc":"`+hash+`"`, 0) + doc3
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(log)
	zw.Close()

	cases := []struct {
		name string
		log  []byte
		want error
		line int // 1-based line the error must name
	}{
		{"truncated mid-line", join(join(lines[:tx5]...), lines[tx5][:len(lines[tx5])/2]), versionlog.ErrTruncated, tx5 + 1},
		{"truncated before the end line", join(lines[:end]...), versionlog.ErrTruncated, end + 1},
		{"truncated gzip", gz.Bytes()[:gz.Len()*2/3], versionlog.ErrTruncated, 0},
		{"empty", nil, versionlog.ErrTruncated, 1},
		{"malformed line", join(join(lines[:tx5]...), []byte("{\"t\":\"tx\",#garbage\n"), join(lines[tx5+1:]...)), versionlog.ErrCorrupt, tx5 + 1},
		{"document altered", replaced(doc3, `"n":`, `"m":`), versionlog.ErrCorrupt, doc3 + 1},
		{"unknown line type", replaced(tx5, `{"t":"tx"`, `{"t":"tz"`), versionlog.ErrCorrupt, tx5 + 1},
		{"reserved id", replaced(del, `"id":"`+delID+`"`, `"id":"ctxstore:sync-cursor:x"`), versionlog.ErrCorrupt, del + 1},
		{"document missing", join(join(lines[:doc3]...), join(lines[doc3+1:]...)), versionlog.ErrCorrupt, use},
		{"op altered (checksum)", replaced(del, `"id":"`+delID+`"`, `"id":"other"`), versionlog.ErrChecksum, end + 1},
		{"checksum altered", replaced(end, `"sha256":"`, `"sha256":"0`), versionlog.ErrChecksum, end + 1},
		{"tx removed (counts)", join(join(lines[:tx5]...), join(lines[tx5+1:]...)), versionlog.ErrChecksum, end},
		{"data after the end line", join(log, []byte("{}\n")), versionlog.ErrCorrupt, end + 1},
		{"unknown format version", replaced(0, `"version":1,"source"`, `"version":2,"source"`), versionlog.ErrVersion, 1},
		{"not a version log", []byte("hello\n"), versionlog.ErrVersion, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dst := openSQLite(t, "dst.db")
			if _, err := store.SubmitWait(ctx, dst, []store.Op{store.Put(store.Doc{"xt/id": "mine"})}); err != nil {
				t.Fatal(err)
			}
			before := targetState(t, dst)
			path := filepath.Join(t.TempDir(), "log.jsonl")
			if err := os.WriteFile(path, c.log, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := versionlog.ImportFile(ctx, dst, path, versionlog.ImportOptions{})
			if !errors.Is(err, c.want) {
				t.Fatalf("import: %v, want %v", err, c.want)
			}
			var le *versionlog.LineError
			if !errors.As(err, &le) {
				t.Fatalf("import: %v is not a *LineError", err)
			}
			if c.line > 0 && le.Line != int64(c.line) {
				t.Errorf("error names line %d, want %d: %v", le.Line, c.line, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("line %d", le.Line)) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file and line", err)
			}
			if after := targetState(t, dst); after != before {
				t.Errorf("target changed: %s, was %s", after, before)
			}
		})
	}
}

// TestResumeAfterTruncatedStream: a log cut short, imported as a stream,
// applies what it holds and stops; importing the whole log then applies
// the rest, each transaction once.
func TestResumeAfterTruncatedStream(t *testing.T) {
	ctx := context.Background()
	src := openSQLite(t, "src.db")
	ids := scenarioIDs("", 5)
	populate(t, src, ids, 6, 60)
	log := exportBytes(t, src, -1)
	lines := logLines(log)
	cut := lineIndex(t, lines, `{"t":"tx"`, 20)
	part := bytes.Join(lines[:cut], nil)
	part = append(part, lines[cut][:10]...)
	dst := openSQLite(t, "dst.db")
	m := map[int64]int64{}
	onTx := func(s versionlog.Tx, d store.Tx) { m[s.ID] = d.ID }
	sum, err := versionlog.Import(ctx, dst, bytes.NewReader(part), versionlog.ImportOptions{OnTx: onTx})
	if !errors.Is(err, versionlog.ErrTruncated) || sum.Applied != 20 {
		t.Fatalf("partial import: applied %d, %v; want 20 and ErrTruncated", sum.Applied, err)
	}
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(path, log, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err = versionlog.ImportFile(ctx, dst, path, versionlog.ImportOptions{OnTx: onTx})
	if err != nil {
		t.Fatal(err)
	}
	srcTxs := committed(t, src, -1)
	if sum.Skipped != 20 || int(sum.Applied) != len(srcTxs)-20 || txCount(t, dst) != len(srcTxs) {
		t.Fatalf("resumed import skipped %d, applied %d; target has %d txs, source %d", sum.Skipped, sum.Applied, txCount(t, dst), len(srcTxs))
	}
	sameHistories(t, src, dst, ids, m, true)
}

// TestNotContinuing: logs that do not continue the target's cursor are
// refused before anything is written; one that overlaps it applies only
// what is new.
func TestNotContinuing(t *testing.T) {
	ctx := context.Background()
	src := openSQLite(t, "src.db")
	populate(t, src, scenarioIDs("", 4), 7, 30)
	dst := openSQLite(t, "dst.db")
	sync1, err := versionlog.Sync(ctx, src, dst, versionlog.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := *sync1.Import.LastTx
	populate(t, src, scenarioIDs("", 4), 8, 30)
	srcID := sync1.Import.Source.ID

	// Another store, with another history, exported under src's name.
	other, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "other.db"), bitemporal.Options{Clock: stepClock(base.Add(time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	populate(t, other, scenarioIDs("", 4), 9, 80)
	exportAs := func(s store.Store, after int64, id string) []byte {
		var b bytes.Buffer
		if _, err := versionlog.Export(ctx, s, &b, versionlog.ExportOptions{After: after, SourceID: id}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	cases := []struct {
		name   string
		target store.Store
		log    []byte
		line   int64
		says   string
	}{
		{"gap after the cursor", dst, exportAs(src, last+5, ""), 1, "missing"},
		{"target holds nothing", openSQLite(t, "empty.db"), exportAs(src, 3, ""), 1, "holds nothing"},
		{"other history, from the cursor", dst, exportAs(other, last, srcID), 1, "not the same source history"},
		{"other history, overlapping", dst, exportAs(other, -1, srcID), -1, "not the same source history"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := targetState(t, c.target)
			_, err := versionlog.Import(ctx, c.target, bytes.NewReader(c.log), versionlog.ImportOptions{})
			var le *versionlog.LineError
			if !errors.Is(err, versionlog.ErrNotContinuing) || !errors.As(err, &le) {
				t.Fatalf("import: %v, want ErrNotContinuing", err)
			}
			if (c.line > 0 && le.Line != c.line) || (c.line < 0 && le.Line <= 1) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %q (line %d): want line %d and %q", err, le.Line, c.line, c.says)
			}
			if after := targetState(t, c.target); after != before {
				t.Errorf("target changed: %s, was %s", after, before)
			}
		})
	}
	// An overlapping log of the right history applies only what is new.
	sum, err := versionlog.Import(ctx, dst, bytes.NewReader(exportAs(src, last-3, "")), versionlog.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(committed(t, src, last)); sum.Skipped < 1 || int(sum.Applied) != want {
		t.Errorf("overlapping import skipped %d and applied %d, want >= 1 and %d", sum.Skipped, sum.Applied, want)
	}
}
