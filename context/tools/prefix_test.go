package tools

import (
	"errors"
	"testing"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
)

// Contexts show 64-hex ids shortened (objects.DisplayID); the tools take
// them, and any unique prefix of at least 8 digits.
func TestShortenedIDs(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{})
		p := e.file("a.txt", "alpha")
		r, err := e.tools.Read(e.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.tools.Deactivate(e.ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		for _, ref := range []string{objects.DisplayID(r.ID), r.ID[:8], r.ID[:40]} {
			got, err := e.tools.Activate(e.ctx, ref)
			if err != nil || got.ID != r.ID {
				t.Fatalf("activate(%q) = %v, %v", ref, got.ID, err)
			}
		}
		for _, ref := range []string{r.ID[:7], "ffffffffffffffff"} {
			if _, err := e.tools.Activate(e.ctx, ref); !errors.Is(err, ErrUnknownObject) {
				t.Fatalf("activate(%q): %v, want ErrUnknownObject", ref, err)
			}
		}
	})
}
