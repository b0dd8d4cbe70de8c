//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package filelock

import (
	"context"
	"os"
	"time"
)

// Hold cannot lock on this platform: it closes f and gives ErrUnsupported.
func Hold(ctx context.Context, f *os.File, poll time.Duration) (func(), error) {
	_ = f.Close()
	return nil, ErrUnsupported
}
