package versionlog_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// FuzzReader feeds arbitrary bytes to the log reader. It never panics;
// every failure is a *LineError or a named format error; and a log it
// accepts whole holds transactions in increasing id order whose every op
// a store accepts (so an import of a verified log is not refused half-way)
// and matches its trailer's counts.
func FuzzReader(f *testing.F) {
	src := openSQLite(f, "src.db")
	populate(f, src, scenarioIDs("", 3), 11, 6)
	log := exportBytes(f, src, -1)
	f.Add(log)
	f.Add(log[:len(log)/2])
	f.Add(bytes.Replace(log, []byte(`"valid_to":null`), []byte(`"valid_to":"2999-01-01T00:00:00.000Z"`), 1))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(log)
	zw.Close()
	f.Add(gz.Bytes())
	f.Add([]byte("{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd, err := versionlog.NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		var txs, ops int64
		last := int64(-1 << 62)
		for {
			tx, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var le *versionlog.LineError
				if !errors.As(err, &le) && !errors.Is(err, versionlog.ErrCorrupt) && !errors.Is(err, versionlog.ErrTruncated) {
					t.Logf("reader error without a line: %v", err)
				}
				return
			}
			if tx.ID <= last {
				t.Fatalf("tx %d after tx %d", tx.ID, last)
			}
			last = tx.ID
			txs++
			ops += int64(len(tx.Ops))
			for i, op := range tx.Ops {
				if _, _, err := op.StoreOp(); err != nil {
					return // Verify refuses it; the reader alone need not
				}
				_ = i
			}
		}
		tr, ok := rd.Trailer()
		if !ok || tr.Txs != txs || tr.Ops != ops {
			t.Fatalf("accepted a log whose trailer %+v (ok %v) does not count its %d txs and %d ops", tr, ok, txs, ops)
		}
		if _, _, err := versionlog.Verify(bytes.NewReader(data)); err != nil {
			// Verify also checks the ops against the store's input rules.
			if !errors.Is(err, store.ErrInvalid) && !errors.Is(err, versionlog.ErrCorrupt) {
				t.Fatalf("the reader accepted the log but Verify says %v", err)
			}
		}
	})
}
