package bitemporal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxstore/ctxstore/store"
)

// fakeRows yields rows, then ends with err (as a connection failing
// mid-scan does): a fake only to inject that fault.
type fakeRows struct {
	rows []loggedRow
	err  error
	i    int
}

func (f *fakeRows) Next() bool { f.i++; return f.i <= len(f.rows) }
func (f *fakeRows) Scan(dest ...any) error {
	r := f.rows[f.i-1]
	*dest[0].(*int64), *dest[1].(*string) = r.id, r.ops
	return nil
}
func (f *fakeRows) Err() error   { return f.err }
func (f *fakeRows) Close() error { return nil }

// TestScrubScanErrorFails: an error that ends the scan of logged matches
// early fails the evict instead of committing it with the rows not read
// still holding the evicted content.
func TestScrubScanErrorFails(t *testing.T) {
	fault := errors.New("disk I/O error (injected)")
	got, err := loggedRows(&fakeRows{rows: []loggedRow{{1, `[]`}}, err: fault})
	if !errors.Is(err, fault) {
		t.Fatalf("loggedRows = %v, %v; want the scan's error", got, err)
	}
	got, err = loggedRows(&fakeRows{rows: []loggedRow{{1, `[]`}, {2, `[]`}}})
	if err != nil || len(got) != 2 {
		t.Fatalf("loggedRows = %v, %v; want 2 rows", got, err)
	}
}

// TestErrorsClassifiedByCode: SQLite failures are classified by result
// code: a corrupt file is ErrInvalid; an error that merely says
// "malformed" or "not a database" in its text is not.
func TestErrorsClassifiedByCode(t *testing.T) {
	for _, err := range []error{
		errors.New(`decoding "malformed" id: not a database id`),
		context.DeadlineExceeded,
	} {
		if k := store.KindOf(dbErr("read", "x", err)); k != store.ErrUnavailable {
			t.Errorf("dbErr(%q) kind %v, want ErrUnavailable", err, k)
		}
		if k := store.KindOf(openErr("p", err)); k != store.ErrUnavailable {
			t.Errorf("openErr(%q) kind %v, want ErrUnavailable", err, k)
		}
	}
	// A real corrupt file: a store whose pages after the first are all
	// overwritten.
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := store.SubmitWait(ctx, s, []store.Op{store.Put(store.Doc{store.IDKey: "e" + string(rune('a'+i%26)), "i": i})}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes", len(data))
	for i := 4096; i < len(data); i++ {
		data[i] = 0x5a
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	s, err = Open(ctx, path, Options{})
	if err == nil {
		_, err = s.Status(ctx)
		if err == nil {
			_, err = s.TxLog(ctx, -1, 0)
		}
		s.Close()
	}
	var se interface{ Code() int }
	if !errors.As(err, &se) || !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("reading a corrupt file: %v; want a SQLite error classified ErrInvalid", err)
	}
	t.Logf("corrupt file: %v (code %d)", err, se.Code())
}
