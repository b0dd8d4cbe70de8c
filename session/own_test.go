package session

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

func TestNamespace(t *testing.T) {
	for _, c := range []struct {
		id      string
		owner   string
		derived bool
	}{
		{"call_1", "", false},
		{"toolu_01ABC", "", false},
		{"fs-1:/x", "", false},
		{"session:a", "a", true},
		{"chat:a:b", "a:b", true},
		{"system_prompt:a-1", "a-1", true},
		{"session-meta:a", "a", true},
		{"session-roots:a:b", "a:b", true},
		{"session-chunk:a:turn:3", "a", true},
		{"session-chunk:a:turn:turn:3", "a:turn", true}, // session "a:turn"
		{"session-chunk:a", "", true},
		{"session-index-attempt:a:b:0190", "a:b", true},
		{"ctx-a-7", "a", true},
		{"ctx-a-1-7", "a-1", true},
		{"ctx-a:b-12", "a:b", true},
		{"ctx-0123456789abcdef0123", "", true},
		{"ctx-content:ff", "", true},
		{"ctx-a-", "", true},
		{"ctx-a-x", "", true},
		{"ctxstore:sync-cursor:x", "", true},
		{"import-cursor:ab", "", true},
		{"xtdb-eid-hash:1", "", true},
	} {
		owner, derived := Namespace(c.id)
		if owner != c.owner || derived != c.derived {
			t.Errorf("Namespace(%q) = %q, %v; want %q, %v", c.id, owner, derived, c.owner, c.derived)
		}
	}
}

func TestCheckID(t *testing.T) {
	for _, c := range []struct {
		sid, id string
		o       Origin
		ok      bool
	}{
		{"a", "call_1", FromClient, true},
		{"a", "call_1", FromBundle, true},
		{"a", "ctx-a-1", FromClient, false}, // a client never names its own derived ids either
		{"a", "ctx-a-1", FromBundle, true},
		{"a", "ctx-b-1", FromBundle, false},
		{"a", "ctx-a-1-1", FromBundle, false}, // session a-1's
		{"a", "session-chunk:a:turn:turn:0", FromBundle, false},
		{"a", "session-chunk:a:turn:0", FromBundle, true},
		{"a", "chat:a", FromBundle, true},
		{"a", "chat:ab", FromBundle, false},
		{"a", "ctx-content:ff", FromBundle, false},
		{"a", "ctxstore:sync-x", FromBundle, false},
		{"a", "session-roots:a", FromBundle, false}, // the server's, not the bundle's
		{"a", "session-roots:a", FromClient, false},
		{"a", "session-roots:b", FromBundle, false},
	} {
		err := CheckID(c.sid, c.id, c.o)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrForeignID)) {
			t.Errorf("CheckID(%q, %q, %d) = %v, want ok=%v", c.sid, c.id, c.o, err, c.ok)
		}
	}
	// A client's id decoded from a lone surrogate escape is refused as
	// invalid (400), not kept as U+FFFD.
	if err := CheckID("a", "call_\uFFFD", FromClient); !errors.Is(err, objects.ErrInvalid) {
		t.Errorf("CheckID of an id with U+FFFD: %v", err)
	}
}

// Claim refuses an id the store holds from elsewhere, and takes one the
// session holds already (mine) or nobody does.
func TestClaim(t *testing.T) {
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(store.Doc{"xt/id": "call_b", "type": "x"})}); err != nil {
		t.Fatal(err)
	}
	mine := func(id string) bool { return id == "call_a" }
	for _, c := range []struct {
		id string
		ok bool
	}{{"call_new", true}, {"call_b", false}, {"call_a", true}, {"ctx-b-3", false},
		{RenamedID("z", "call_b"), false},  // session z's copy of call_b (a fork)
		{RenamedID("a", "call_b"), true},   // a's own
		{RenamedID("z", "call_new"), true}, // nobody holds call_new: a plain id
	} {
		err := Claim(ctx, st, "a", c.id, FromClient, mine)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrForeignID)) {
			t.Errorf("Claim(%q) = %v, want ok=%v", c.id, err, c.ok)
		}
	}
}
