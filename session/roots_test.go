package session

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/store"
)

// Roots are recorded per session, read back, and a write guarded by an
// older read is refused (a second server's recording in between).
func TestRootsRecorded(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		rootsRecorded(t, e.Store, e.ID("s"), e.ID("s2"))
	})
}

func rootsRecorded(t *testing.T, st store.Store, s, s2 string) {
	ctx := context.Background()
	r, err := ReadRoots(ctx, st, s)
	if err != nil || r.Dirs != nil {
		t.Fatalf("ReadRoots of a session without roots = %v, %v", r.Dirs, err)
	}
	if _, err := WriteRoots(ctx, st, s, r, []string{"/a", "/b"}); err != nil {
		t.Fatal(err)
	}
	// A second writer that read before the first wrote is refused.
	if _, err := WriteRoots(ctx, st, s, r, []string{"/"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a write guarded by a stale read: %v, want ErrConflict", err)
	}
	r2, err := ReadRoots(ctx, st, s)
	if err != nil || !slices.Equal(r2.Dirs, []string{"/a", "/b"}) {
		t.Fatalf("ReadRoots = %v, %v; want [/a /b]", r2.Dirs, err)
	}
	if _, err := WriteRoots(ctx, st, s, r2, []string{"/a"}); err != nil {
		t.Fatal(err)
	}
	if r3, err := ReadRoots(ctx, st, s); err != nil || !slices.Equal(r3.Dirs, []string{"/a"}) {
		t.Fatalf("ReadRoots = %v, %v; want [/a]", r3.Dirs, err)
	}
	if r4, err := ReadRoots(ctx, st, s2); err != nil || r4.Dirs != nil {
		t.Fatalf("another session's roots: %v, %v", r4.Dirs, err)
	}
	if owner, derived := Namespace(RootsID(s)); owner != s || !derived {
		t.Errorf("Namespace(%s) = %q, %v", RootsID(s), owner, derived)
	}
}
