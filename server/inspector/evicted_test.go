package inspector_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/server/inspector"
	"github.com/ctxstore/ctxstore/store"
)

// TestCallPageOfEvictedVersion: the page of a call whose context showed a
// tool output a context edit evicted since says so (410 Gone, the
// reason), rather than failing as a server error.
func TestCallPageOfEvictedVersion(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	live := inspecttest.NewLive(t, se.Store, "edited")
	live.Turn("Show the environment")
	live.Bash("env", "TOKEN=SECRET-41d7\n")
	live.Call(0)
	id := "toolu_" + live.SID + "_0001"
	if _, err := store.SubmitWait(context.Background(), se.Store, []store.Op{store.Evict(id)}); err != nil {
		t.Fatal(err)
	}
	h, err := inspector.New(inspector.Options{Store: se.Store, Prefix: "/inspect",
		Authorize: func(*http.Request) (inspector.Grant, error) { return inspector.Grant{All: true}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	got := httptestGet(h, "/inspect/s/"+live.SID+"/c/1")
	if got.code != http.StatusGone || !strings.Contains(got.body, "evicted by a context edit") {
		t.Fatalf("the call page: %d, want 410 saying the version was evicted by a context edit:\n%s", got.code, got.body)
	}
	if strings.Contains(got.body, "SECRET-41d7") {
		t.Fatalf("the page shows the evicted output")
	}
}
