package tools

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// A file the agent read changes on disk: with a tracker, a new version
// appears without any tool call, and the static reference the read
// returned still resolves to what the agent saw.
func TestTrackedReadSeesExternalEdits(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{})
		tr, err := files.NewTracker(e.ix, files.TrackerOptions{Debounce: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		tl := New(e.tools.Session(), e.ix, Options{Tracker: tr})
		p := e.file("doc.md", "v1")
		r, err := tl.Read(e.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		e.file("doc.md", "v2")
		deadline := time.Now().Add(10 * time.Second)
		for {
			o, _, err := expand.Resolve(e.ctx, e.st, objects.DynamicRef(r.ID))
			if err == nil && o.Content != nil && *o.Content == "v2" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no new version after an external edit: %v %v", o, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		o, _, err := expand.Resolve(e.ctx, e.st, r.Ref)
		if err != nil || *o.Content != "v1" {
			t.Fatalf("static ref of the read: %v %v", o, err)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		for {
			o, _, err := expand.Resolve(e.ctx, e.st, objects.DynamicRef(r.ID))
			if err == nil && files.IsDeletedVersion(o) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no deletion version: %v %v", o, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if a, err := tl.Activate(e.ctx, r.ID); err != nil || a.Message[:19] != "Content unavailable" {
			t.Fatalf("activating a deleted file: %+v %v", a, err)
		}
	})
}

// Two processes driving the same session: the stale one gets a conflict,
// not a silent overwrite.
func TestToolsConflict(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{})
		st2 := se.Reopen()
		s2, err := session.Open(e.ctx, st2, e.sid)
		if err != nil {
			t.Fatal(err)
		}
		other := New(s2, files.NewIndexer(st2, e.ix.Resolver(), 0), Options{})
		if _, err := e.tools.Read(e.ctx, e.file("a.txt", "a")); err != nil {
			t.Fatal(err)
		}
		_, err = other.Read(e.ctx, e.file("b.txt", "b"))
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale writer: %v", err)
		}
		if err := s2.Reload(e.ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Read(e.ctx, e.file("b.txt", "b")); err != nil {
			t.Fatal(err)
		}
		if err := e.tools.Session().Reload(e.ctx); err != nil {
			t.Fatal(err)
		}
		if s := e.state(); len(s.Active) != 4 {
			t.Fatalf("active after both reads: %v", s.Active)
		}
	})
}
