//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package bitemporal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockInit serializes the check and migration of the store at path across
// processes: an exclusive flock on the file's directory (a lock on the
// database file itself would be unsafe: closing any descriptor of it drops
// SQLite's own POSIX locks; a lock file would be left behind). Openers of
// other stores in the same directory wait for the few milliseconds an
// up-to-date store's check takes. The wait polls, so ctx and timeout end
// it. A directory that cannot be opened is not locked (the busy timeout
// and the migration's own transaction still apply).
func lockInit(ctx context.Context, path string, timeout time.Duration) (func(), error) {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return func() {}, nil
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
				_ = d.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = d.Close()
			return func() {}, nil // a file system without flock
		}
		if time.Now().After(deadline) {
			_ = d.Close()
			return nil, errors.New("another process has been creating or migrating a store in " + filepath.Dir(path) + " for longer than the busy timeout")
		}
		select {
		case <-ctx.Done():
			_ = d.Close()
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
