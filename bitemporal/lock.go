package bitemporal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/ctxstore/ctxstore/internal/filelock"
)

// lockInit serializes the check and migration of the store at path across
// processes: an exclusive flock on the file's directory (a lock on the
// database file itself would be unsafe: closing any descriptor of it drops
// SQLite's own POSIX locks; a lock file would be left behind). Openers of
// other stores in the same directory wait for the few milliseconds an
// up-to-date store's check takes. The wait polls, so ctx and timeout end
// it. A directory that cannot be opened, or a system without flock, is not
// locked (the busy timeout and the migration's own transaction still
// apply).
func lockInit(ctx context.Context, path string, timeout time.Duration) (func(), error) {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return func() {}, nil
	}
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	unlock, err := filelock.Hold(wait, d, 5*time.Millisecond)
	switch {
	case err == nil:
		return unlock, nil
	case errors.Is(err, filelock.ErrUnsupported):
		return func() {}, nil
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return nil, errors.New("another process has been creating or migrating a store in " + filepath.Dir(path) + " for longer than the busy timeout")
	default:
		return nil, err
	}
}
