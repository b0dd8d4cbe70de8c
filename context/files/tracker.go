package files

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long a tracker waits after the last event before
// it indexes what changed.
const DefaultDebounce = 50 * time.Millisecond

// Tracker watches indexed files with fsnotify and keeps their objects up to
// date: a change becomes a new version, a deletion a
// null-content version, and a rename a deletion version for the old path
// plus an indexed (and from then on tracked) new path. It watches the
// parent directories, not the files, so editors that save by renaming a
// temporary file over the original are seen. Events are debounced: each
// event restarts a timer, and when it fires every pending path is synced
// against the disk (Indexer.Sync), so what counts is the state on disk, not
// the event kinds. A watcher overflow (events lost) rescans every tracked
// path. It is safe for concurrent use.
type Tracker struct {
	ix       *Indexer
	w        *fsnotify.Watcher
	debounce time.Duration
	onResult func(Result)
	onError  func(error)

	mu      sync.Mutex
	tracked map[string]bool // clean slash paths
	dirs    map[string]int  // watched directory -> tracked files in it
	pending map[string]bool
	renamed bool // a tracked path was renamed away in the pending batch
	created map[string]bool
	timer   *time.Timer
	closed  bool
	done    chan struct{}
	wg      sync.WaitGroup // the event loop
	flushes sync.WaitGroup // syncs in progress
}

// TrackerOptions configure NewTracker.
type TrackerOptions struct {
	// Debounce is the quiet period before pending paths are synced
	// (DefaultDebounce when zero).
	Debounce time.Duration
	// OnResult, if set, is called after each path is synced, also for
	// unchanged files (from the tracker's goroutine; it must not block
	// for long).
	OnResult func(Result)
	// OnError, if set, receives errors from syncing and from the watcher.
	OnError func(error)
}

// NewTracker starts a tracker indexing through ix. Close it when done.
func NewTracker(ix *Indexer, o TrackerOptions) (*Tracker, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("files: starting a watcher: %w", err)
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	t := &Tracker{
		ix: ix, w: w, debounce: o.Debounce, onResult: o.OnResult, onError: o.OnError,
		tracked: map[string]bool{}, dirs: map[string]int{}, pending: map[string]bool{},
		created: map[string]bool{}, done: make(chan struct{}),
	}
	t.wg.Add(1)
	go t.loop()
	return t, nil
}

// Track starts watching the file at p (which need not exist yet). Tracking
// a tracked path is a no-op.
func (t *Tracker) Track(p string) error {
	clean, err := CleanPath(p)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errors.New("files: tracker is closed")
	}
	return t.trackLocked(clean)
}

func (t *Tracker) trackLocked(clean string) error {
	if t.tracked[clean] {
		return nil
	}
	dir := path.Dir(clean)
	if t.dirs[dir] == 0 {
		if err := t.w.Add(filepath.FromSlash(dir)); err != nil {
			return fmt.Errorf("files: watching %s: %w", dir, err)
		}
	}
	t.dirs[dir]++
	t.tracked[clean] = true
	return nil
}

// Untrack stops watching p.
func (t *Tracker) Untrack(p string) error {
	clean, err := CleanPath(p)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.tracked[clean] {
		return nil
	}
	delete(t.tracked, clean)
	dir := path.Dir(clean)
	if t.dirs[dir]--; t.dirs[dir] <= 0 {
		delete(t.dirs, dir)
		if err := t.w.Remove(filepath.FromSlash(dir)); err != nil && !t.closed {
			return fmt.Errorf("files: unwatching %s: %w", dir, err)
		}
	}
	return nil
}

// Tracked returns the tracked paths, sorted.
func (t *Tracker) Tracked() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.tracked))
	for p := range t.tracked {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Rescan syncs every tracked path against the disk now, as after a watcher
// overflow or on resume.
func (t *Tracker) Rescan(ctx context.Context) {
	t.mu.Lock()
	for p := range t.tracked {
		t.pending[p] = true
	}
	t.mu.Unlock()
	t.flush(ctx)
}

// Close stops the watcher and waits for the tracker's goroutine and any
// sync in progress; pending events are dropped.
func (t *Tracker) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	if t.timer != nil {
		t.timer.Stop()
	}
	close(t.done)
	t.mu.Unlock()
	err := t.w.Close()
	t.wg.Wait()
	t.flushes.Wait()
	return err
}

func (t *Tracker) loop() {
	defer t.wg.Done()
	for {
		select {
		case <-t.done:
			return
		case ev, ok := <-t.w.Events:
			if !ok {
				return
			}
			t.event(ev)
		case err, ok := <-t.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				t.Rescan(context.Background())
				continue
			}
			t.report(fmt.Errorf("files: watcher: %w", err))
		}
	}
}

// event records one fsnotify event and restarts the debounce timer.
func (t *Tracker) event(ev fsnotify.Event) {
	p, err := CleanPath(ev.Name)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	switch {
	case t.tracked[p]:
		t.pending[p] = true
		if ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove) {
			t.renamed = true
		}
	case ev.Has(fsnotify.Create):
		// Maybe the new name of a tracked file renamed in this batch.
		t.created[p] = true
	default:
		return
	}
	if t.timer == nil {
		t.timer = time.AfterFunc(t.debounce, func() { t.flush(context.Background()) })
	} else {
		t.timer.Reset(t.debounce)
	}
}

// flush syncs the pending batch. An untracked path created in the same
// batch as a tracked path vanished is taken as its new name: it is indexed
// and tracked from then on.
func (t *Tracker) flush(ctx context.Context) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.flushes.Add(1)
	defer t.flushes.Done()
	paths := make([]string, 0, len(t.pending))
	for p := range t.pending {
		paths = append(paths, p)
	}
	var adopted []string
	if t.renamed {
		for p := range t.created {
			if !t.tracked[p] {
				adopted = append(adopted, p)
			}
		}
	}
	t.pending, t.created, t.renamed = map[string]bool{}, map[string]bool{}, false
	t.mu.Unlock()
	sort.Strings(paths)
	sort.Strings(adopted)
	for _, p := range paths {
		t.sync(ctx, p)
	}
	for _, p := range adopted {
		r, err := t.ix.Index(ctx, p)
		if err != nil {
			continue // gone again, or a directory: not a file rename
		}
		t.mu.Lock()
		if !t.closed {
			err = t.trackLocked(p)
		}
		t.mu.Unlock()
		if err != nil {
			t.report(err)
		}
		if t.onResult != nil {
			t.onResult(r)
		}
	}
}

func (t *Tracker) sync(ctx context.Context, p string) {
	r, err := t.ix.Sync(ctx, p)
	if err != nil {
		t.report(fmt.Errorf("files: syncing %s: %w", p, err))
		return
	}
	if t.onResult != nil {
		t.onResult(r)
	}
}

func (t *Tracker) report(err error) {
	if t.onError != nil {
		t.onError(err)
	}
}
