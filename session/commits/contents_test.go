package commits_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/session/commits"
)

// TestContents: the contents read together are the ones Content reads
// one at a time, keyed by hash, a content shared by two commits once,
// across more than one query's worth of contents.
func TestContents(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		s := commits.New(e.Store, commits.Options{})
		sid := e.ID("contents")
		var cs []*commits.Commit
		parent := ""
		for i := range 300 {
			body := fmt.Sprintf(`[{"type":"prompt","text":"p%d"}]`, i%290) // the last ten repeat earlier contents
			c := checkpoint(t, s, commits.CheckpointRequest{Parent: parent, Provenance: commits.Provenance{Session: sid}, Created: t0, Content: []byte(body)})
			cs = append(cs, c)
			parent = c.ID
		}
		got, err := s.Contents(ctx, cs)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 290 {
			t.Errorf("%d contents, want 290", len(got))
		}
		for _, c := range cs {
			want, err := s.Content(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if b, ok := got[c.Content]; !ok || !bytes.Equal(b, want) {
				t.Fatalf("commit %s: %q, Content reads %q", c.ID, b, want)
			}
		}
		if none, err := s.Contents(ctx, nil); err != nil || len(none) != 0 {
			t.Errorf("no commits: %v, %v", none, err)
		}
	})
}
