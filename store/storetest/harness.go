package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// Harness is what a backend's tests hand to Run.
//
// The suite never assumes a store is empty or private: every case uses
// entity ids and field values under its own random prefix, compares tx ids
// only with its own receipts, and reads the tx log filtered by its own tx
// ids, so New may return a client of a shared, long-lived server. Cases run
// one after another, never in parallel.
type Harness struct {
	// Name names the backend in logs.
	Name string
	// New returns the store a case runs against, once per case: a fresh
	// store, or a new client of a shared server. The harness owns its
	// release (t.Cleanup). The suite calls Close only in the case that
	// tests calls after Close, so each call must return a Store value no
	// other case uses, and a harness cleanup must tolerate a store that is
	// already closed.
	New func(t *testing.T) store.Store
	// SetClock, if the backend allows it, freezes the clock that the stores
	// made by New use for tx times and for the default valid time; the zero
	// time restores the real clock. Since tx times never go back, it is
	// only meaningful when New returns fresh stores. Nil when the backend
	// cannot (a real XTDB server): the cases that use it then check what
	// they can without it. The suite restores the real clock at the end of
	// every case that sets it.
	SetClock func(time.Time)
	// Capabilities, if not nil, lists the optional capabilities
	// (store/capabilities.go, by interface name: "TxTimeSubmitter",
	// "CanonicalTxLogger", "Searcher") the backend is meant to have: Run fails if the
	// stores New returns have others, so a capability cannot be lost
	// silently. Nil: whatever the stores have is checked, nothing more.
	Capabilities []string
	// LongStringRanges says order comparisons (lt, lte, gt, gte) hold on
	// strings of any length. XTDB 1.x keeps a long value in its indexes
	// by hash, so there they never hold on a long string (a backend
	// difference, docs/architecture.md); the SQLite backend holds them.
	LongStringRanges bool
	// Quarantine names cases (by their name, e.g.
	// "test-history-api") that this backend skips, each
	// with the reason: a known intermittent failure under investigation,
	// written down where the backend's docs list what does not work. The
	// skip is reported with the reason; it never passes silently.
	Quarantine map[string]string
}

// Run runs every conformance case against h as subtests, grouped by
// feature: bitemporal (range semantics), match_evict, history, basis,
// query, txlog and errors; then the cases of every optional capability
// (store/capabilities.go) the backend implements. Case names are those of the XTDB 1.24.5 tests
// they port, where there is one.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("storetest: Harness.New is nil")
	}
	t.Logf("storetest: conformance of %q (settable clock: %v)", h.Name, h.SetClock != nil)
	groups := []struct {
		name  string
		cases []testCase
	}{
		{"bitemporal", bitemporalCases()},
		{"match_evict", matchEvictCases()},
		{"history", historyCases()},
		{"basis", basisCases()},
		{"query", queryCases()},
		{"txlog", txLogCases()},
		{"errors", errorCases()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					if why, ok := h.Quarantine[c.name]; ok {
						t.Skipf("quarantined on %s: %s", h.Name, why)
					}
					c.run(newEnv(t, h))
				})
			}
		})
	}
	t.Run("capabilities", func(t *testing.T) { runCapabilities(t, h) })
}

// testCase is one conformance case.
type testCase struct {
	name string
	run  func(e *env)
}

// env is what a case works with: its store, a context and a unique prefix
// for everything it names.
type env struct {
	t   *testing.T
	h   Harness
	s   store.Store
	ctx context.Context
	pfx string
}

func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	s := h.New(t)
	if s == nil {
		t.Fatal("storetest: Harness.New returned nil")
	}
	return &env{t: t, h: h, s: s, ctx: context.Background(), pfx: randomPrefix("st")}
}

// sub runs f as a subtest with the same store and a new prefix.
func (e *env) sub(name string, f func(e *env)) {
	e.t.Run(name, func(t *testing.T) {
		f(&env{t: t, h: e.h, s: e.s, ctx: e.ctx, pfx: randomPrefix("st")})
	})
}

// randomPrefix returns tag, a dash, 12 random hex digits and a dash.
func randomPrefix(tag string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return tag + "-" + hex.EncodeToString(b[:]) + "-"
}

// setClock freezes the store clock at tm for the rest of the case; it
// reports false if the harness cannot.
func (e *env) setClock(tm time.Time) bool {
	if e.h.SetClock == nil {
		return false
	}
	e.h.SetClock(tm)
	e.t.Cleanup(func() { e.h.SetClock(time.Time{}) })
	return true
}

// id returns the case-unique entity id for name.
func (e *env) id(name string) string { return e.pfx + name }

// doc builds a document for entity name from key/value pairs.
func (e *env) doc(name string, kv ...any) store.Doc {
	d := store.Doc{store.IDKey: e.id(name)}
	for i := 0; i+1 < len(kv); i += 2 {
		d[kv[i].(string)] = kv[i+1]
	}
	return d
}

// submit logs ops with SubmitWait and fails the case on any error.
func (e *env) submit(ops ...store.Op) store.Tx {
	e.t.Helper()
	tx, err := store.SubmitWait(e.ctx, e.s, ops)
	if err != nil {
		e.t.Fatalf("SubmitWait(%s): %v", showOps(ops), err)
	}
	return tx
}

// submitAborting logs ops that must abort: SubmitWait gives ErrConflict.
func (e *env) submitAborting(ops ...store.Op) store.Tx {
	e.t.Helper()
	tx, err := store.SubmitWait(e.ctx, e.s, ops)
	if !errors.Is(err, store.ErrConflict) {
		e.t.Fatalf("SubmitWait(%s) = %v, want an error wrapping ErrConflict", showOps(ops), err)
	}
	return tx
}

// entity reads id at b; a nil doc means ErrNotFound (checked).
func (e *env) entity(id string, b store.Basis) store.Doc {
	e.t.Helper()
	d, err := e.s.Entity(e.ctx, id, b)
	if errors.Is(err, store.ErrNotFound) {
		if !strings.Contains(err.Error(), id) {
			e.t.Errorf("Entity(%q) error %q does not name the id", id, err)
		}
		return nil
	}
	if err != nil {
		e.t.Fatalf("Entity(%q, %s): %v", id, showBasis(b), err)
	}
	return d
}

// wantEntity checks the document of id at b (nil: absent).
func (e *env) wantEntity(id string, b store.Basis, want store.Doc) {
	e.t.Helper()
	got := e.entity(id, b)
	if !store.SameDoc(got, want) {
		e.t.Errorf("Entity(%q, %s) = %s, want %s", id, showBasis(b), showDoc(got), showDoc(want))
	}
}

// hist reads history and fails the case on error.
func (e *env) hist(id string, o store.HistoryOptions) []store.HistoryEntry {
	e.t.Helper()
	rows, err := e.s.History(e.ctx, id, o)
	if err != nil {
		e.t.Fatalf("History(%q): %v", id, err)
	}
	return rows
}

// wantErr checks that err wraps kind.
func (e *env) wantErr(what string, err, kind error) {
	e.t.Helper()
	if !errors.Is(err, kind) {
		e.t.Errorf("%s: error %v, want one wrapping %v", what, err, kind)
	}
}

// Times.

// inst parses a date, a date and hour, or an RFC 3339 time, in UTC.
func inst(s string) time.Time {
	for _, layout := range []string{"2006-01-02", "2006-01-02T15", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	panic("storetest: bad time " + s)
}

func instPtr(s string) *time.Time { t := inst(s); return &t }
func ptr[T any](v T) *T           { return &v }

// endOfTime is the valid time that sees every version.
var endOfTime = inst("9999-12-31")

// allVT is a basis at the latest tx that sees every valid time.
var allVT = store.Basis{ValidTime: endOfTime}

// Rendering for messages.

func showDoc(d store.Doc) string {
	if d == nil {
		return "<absent>"
	}
	c, err := store.Canonical(d)
	if err != nil {
		return fmt.Sprintf("%v", map[string]any(d))
	}
	return string(c)
}

func showBasis(b store.Basis) string {
	var parts []string
	if b.ValidTime.IsZero() {
		parts = append(parts, "vt=now")
	} else {
		parts = append(parts, "vt="+store.FormatTime(b.ValidTime))
	}
	if b.TxID != nil {
		parts = append(parts, fmt.Sprintf("tx=%d", *b.TxID))
	}
	if b.TxTime != nil {
		parts = append(parts, "tt="+store.FormatTime(*b.TxTime))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func showOps(ops []store.Op) string {
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = showOp(op)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func showOp(op store.Op) string {
	s := string(op.Kind) + " " + op.ID
	if op.Doc != nil {
		s += " " + showDoc(op.Doc)
	}
	if op.ValidFrom != nil {
		s += " from " + store.FormatTime(*op.ValidFrom)
	}
	if op.ValidTo != nil {
		s += " to " + store.FormatTime(*op.ValidTo)
	}
	return s
}
