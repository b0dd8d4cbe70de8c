package commits_test

import (
	"context"
	"testing"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/session/commits"
)

// TestListCommits: the commits of the sessions asked for, parents before
// children per session, and none of another session.
func TestListCommits(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		s := commits.New(e.Store, commits.Options{})
		a, b := e.ID("list-a"), e.ID("list-b")
		a1 := checkpoint(t, s, commits.CheckpointRequest{Provenance: commits.Provenance{Session: a}, Created: t0.Add(10), Content: []byte(`[]`)})
		a2 := checkpoint(t, s, commits.CheckpointRequest{Parent: a1.ID, Provenance: commits.Provenance{Session: a}, Created: t0, Content: []byte(`[{"type":"prompt","text":"x"}]`)})
		b1 := checkpoint(t, s, commits.CheckpointRequest{Provenance: commits.Provenance{Session: b}, Created: t0, Content: []byte(`[{"type":"prompt","text":"y"}]`)})
		got, err := s.ListCommits(context.Background(), []string{a, b})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range got {
			ids = append(ids, c.ID)
		}
		want := []string{a1.ID, a2.ID, b1.ID} // by session, then depth (a2 is older than a1 but deeper)
		if a > b {
			want = []string{b1.ID, a1.ID, a2.ID}
		}
		if len(ids) != 3 || ids[0] != want[0] || ids[1] != want[1] || ids[2] != want[2] {
			t.Fatalf("got %v, want %v", ids, want)
		}
		only, err := s.ListCommits(context.Background(), []string{b})
		if err != nil || len(only) != 1 || only[0].ID != b1.ID || only[0].Session != b {
			t.Fatalf("one session: %v %+v", err, only)
		}
		if none, err := s.ListCommits(context.Background(), []string{e.ID("list-none")}); err != nil || len(none) != 0 {
			t.Fatalf("no such session: %v %d", err, len(none))
		}
	})
}
