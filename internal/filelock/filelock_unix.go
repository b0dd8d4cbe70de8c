//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package filelock

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// Hold takes an exclusive flock on the open file (or directory) f,
// trying every poll until ctx ends. The returned func releases the lock
// and closes f; on an error f is closed too. A file system without flock
// gives ErrUnsupported.
func Hold(ctx context.Context, f *os.File, poll time.Duration) (func(), error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, ErrUnsupported
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}
