package recall

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/store"
)

func TestReferences(t *testing.T) {
	got := References("see @@confirm-button-refactor, and @@abc:def; mail a@@b.\n@@payments: why did retries fail?\nagain @@confirm-button-refactor")
	want := []Reference{{Ref: "confirm-button-refactor"}, {Ref: "abc:def"}, {Ref: "payments", Question: "why did retries fail?"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("References: %+v, want %+v", got, want)
	}
	if r := References("no refs @@ here"); len(r) != 0 {
		t.Errorf("bare @@: %+v", r)
	}
}

func TestResolve(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		ids := map[string]string{}
		for _, n := range []string{"a", "b", "c"} {
			ids[n] = newSession(t, e, n, nil).ID()
		}
		tag := e.ID("x") // names unique to this test on a shared XTDB
		names := map[string]string{"a": "payment-retries-" + tag, "b": "payment-webhooks-" + tag, "c": "Confirm-Button-" + tag}
		var ops []store.Op
		for k, n := range names {
			m := &Meta{SessionID: ids[k], Name: n, Description: "d", Summary: "s", Tags: []string{"t"}, Generator: "offline"}
			ops = append(ops, store.Put(m.doc()))
		}
		if _, err := store.SubmitWait(ctx, e.Store, ops); err != nil {
			t.Fatal(err)
		}
		check := func(ref, want string, sc Scope) {
			t.Helper()
			got, err := Resolve(ctx, e.Store, ref, sc)
			if err != nil || got != want {
				t.Errorf("Resolve(%q) = %q, %v; want %q", ref, got, err, want)
			}
		}
		check(ids["a"], ids["a"], Scope{})               // exact id
		check("confirm-button-"+tag, ids["c"], Scope{})  // case-insensitive name
		check("payment-retries-"+tag, ids["a"], Scope{}) // exact name beats the fuzzy one
		check("payment-retrie-"+tag, ids["a"], Scope{})  // one edit away
		check("webhooks-"+tag, ids["b"], Scope{})        // words contained
		_, err := Resolve(ctx, e.Store, "payment-"+tag, Scope{})
		var amb *AmbiguousError
		if !errors.As(err, &amb) || len(amb.Candidates) != 2 {
			t.Errorf("ambiguous: %v", err)
		}
		check("payment-"+tag, ids["b"], SessionScope(ids["b"])) // a scope narrows the candidates
		if _, err := Resolve(ctx, e.Store, ids["a"], SessionScope(ids["b"])); !errors.Is(err, ErrNoSession) {
			t.Errorf("id outside the scope: %v", err)
		}
		if _, err := Resolve(ctx, e.Store, "nothing-like-it-"+tag, Scope{}); !errors.Is(err, ErrNoSession) {
			t.Errorf("unknown: %v", err)
		}
	})
}
