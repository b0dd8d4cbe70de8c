package filelock

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A second Lock on the same file waits until the first is released, and
// gives up when its context ends.
func TestLockExcludes(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no flock on " + runtime.GOOS)
	}
	file := filepath.Join(t.TempDir(), "lock")
	unlock, err := Lock(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, file); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second lock while the first is held: %v, want the context's deadline", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := Lock(context.Background(), file)
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("the lock after the release: %v", err)
	}
}
