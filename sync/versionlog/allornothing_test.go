package versionlog_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// craftedLog writes a well-formed log (checksums right) whose tx 1 puts
// doc, a document no store accepts.
func craftedLog(t *testing.T, doc string) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := versionlog.NewWriter(&b, versionlog.Header{Source: versionlog.Source{ID: "crafted", Backend: "sqlite", Location: "/elsewhere/crafted.db"}, After: -1, Upto: 1})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	put := func(id int64, d string) versionlog.Tx {
		sum := sha256.Sum256([]byte(d))
		return versionlog.Tx{Tx: store.Tx{ID: id, Time: at.Add(time.Duration(id) * time.Second)},
			Ops: []versionlog.Op{{Kind: store.OpPut, ID: mustID(t, d), DocHash: hex.EncodeToString(sum[:]), Doc: json.RawMessage(d), ValidFrom: at}}}
	}
	for _, tx := range []versionlog.Tx{put(0, `{"v":1,"xt/id":"ok"}`), put(1, doc)} {
		if err := w.WriteTx(tx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func mustID(t *testing.T, doc string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m["xt/id"].(string)
}

// TestImportFileChecksOpsFirst: a log whose tx 1 holds a document the
// store refuses (a number beyond 2^53, a repeated key) fails ImportFile
// and Verify naming the line and tx, and tx 0 is not applied.
func TestImportFileChecksOpsFirst(t *testing.T) {
	ctx := context.Background()
	for name, doc := range map[string]string{
		"integer beyond 2^53": `{"n":9007199254740993,"xt/id":"bad"}`,
		"duplicate key":       `{"xt/id":"bad","xt/id":"worse"}`,
	} {
		t.Run(name, func(t *testing.T) {
			log := craftedLog(t, doc)
			if _, _, err := versionlog.Verify(bytes.NewReader(log)); err == nil || !strings.Contains(err.Error(), "tx 1") {
				t.Errorf("Verify = %v, want an error naming tx 1", err)
			}
			path := filepath.Join(t.TempDir(), "crafted.log")
			if err := os.WriteFile(path, log, 0o644); err != nil {
				t.Fatal(err)
			}
			dst := openSQLite(t, "dst.db")
			_, err := versionlog.ImportFile(ctx, dst, path, versionlog.ImportOptions{})
			var le *versionlog.LineError
			if !errors.As(err, &le) || le.TxID != 1 || !errors.Is(err, store.ErrInvalid) && !errors.Is(err, versionlog.ErrCorrupt) {
				t.Fatalf("ImportFile = %v, want a *LineError of tx 1", err)
			}
			if n := txCount(t, dst); n != 0 {
				t.Errorf("the target holds %d transactions after a refused import, want 0", n)
			}
		})
	}
}
