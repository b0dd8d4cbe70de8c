//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package bitemporal

import (
	"context"
	"time"
)

// lockInit does not lock where flock is missing: concurrent creation of
// one new store relies on SQLite's busy timeout there.
func lockInit(ctx context.Context, path string, timeout time.Duration) (func(), error) {
	return func() {}, nil
}
