// Package filelock is an exclusive lock on a file between processes
// (flock), waited for under a context: the SQLite store's check and
// migration, the XTDB node's artifact cache and the replay's working
// directory use it. It imports nothing of the project.
package filelock

import (
	"context"
	"errors"
	"os"
	"time"
)

// ErrUnsupported is Hold's error where flock is missing (the platform, or
// the file system).
var ErrUnsupported = errors.New("filelock: flock is not supported here")

// Lock opens file (creating it) and holds an exclusive lock on it
// (Hold, trying every 200 ms). Where flock is missing it does not lock:
// callers that race are not kept apart.
func Lock(ctx context.Context, file string) (func(), error) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	unlock, err := Hold(ctx, f, 200*time.Millisecond)
	if errors.Is(err, ErrUnsupported) {
		return func() {}, ctx.Err()
	}
	return unlock, err
}
