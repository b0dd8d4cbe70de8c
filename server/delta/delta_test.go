package delta

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
)

func msgs(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, `{"role":"user","content":"m%d"}`, i)
	}
	return out
}

// TestLogCheck: a delta's base is accepted only when it is the whole log
// held with its digest; a whole log (base 0) always is.
func TestLogCheck(t *testing.T) {
	var l Log
	if err := l.Check(1, Sum(msgs(1)...)); !errors.Is(err, ErrMismatch) {
		t.Fatalf("an empty log accepted base 1: %v", err)
	}
	ms := msgs(4)
	for _, m := range ms[:3] {
		l.Add(m)
	}
	if l.Len() != 3 || l.Sum() != Sum(ms[:3]...) {
		t.Fatalf("len %d sum %s, want 3 and the digest of the three", l.Len(), l.Sum())
	}
	for _, tc := range []struct {
		name string
		base int
		sum  string
		ok   bool
	}{
		{"whole log", 0, "", true},
		{"the log held", 3, Sum(ms[:3]...), true},
		{"another digest", 3, Sum(ms[1:4]...), false},
		{"a shorter base (a replaced log)", 2, Sum(ms[:2]...), false},
		{"a longer base", 4, Sum(ms...), false},
	} {
		err := l.Check(tc.base, tc.sum)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrMismatch)) {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	l.Reset()
	if l.Len() != 0 || l.Sum() != "" || l.Check(3, Sum(ms[:3]...)) == nil {
		t.Errorf("after Reset: len %d sum %q, base 3 accepted", l.Len(), l.Sum())
	}
}

// TestSumIsTheClientsDigest: the digest is SHA-256 over each message's
// JSON followed by "\n", as integrations/client/deltas.ts computes it.
func TestSumIsTheClientsDigest(t *testing.T) {
	h := sha256.New()
	h.Write([]byte("{\"a\":1}\n{\"b\":2}\n"))
	if got, want := Sum([]byte(`{"a":1}`), []byte(`{"b":2}`)), fmt.Sprintf("%x", h.Sum(nil)); got != want {
		t.Fatalf("Sum = %s, want %s", got, want)
	}
}

func digests(texts ...string) [][32]byte {
	out := make([][32]byte, len(texts))
	for i, s := range texts {
		out[i] = sha256.Sum256([]byte(s))
	}
	return out
}

// TestAnswer: what the client keeps of a new answer is the reused stable
// prefix and the messages after it whose digests are the held answer's, up
// to the first that differs; nothing when the client does not hold it.
func TestAnswer(t *testing.T) {
	var a Answer
	if a.Held(1) || a.Reuse("m") != 0 || a.Call() != 0 {
		t.Fatal("an empty answer is held or reused")
	}
	// Call 1: a, b, c, d, of which two stable.
	a.Record(1, 4, 2, "m", 0, digests("a", "b", "c", "d"))
	if !a.Held(1) || a.Held(2) || a.Held(0) {
		t.Errorf("Held: 1 %v, 2 %v, 0 %v", a.Held(1), a.Held(2), a.Held(0))
	}
	if r := a.Reuse("m"); r != 2 {
		t.Errorf("Reuse = %d, want the stable 2", r)
	}
	if r := a.Reuse("other"); r != 0 {
		t.Errorf("Reuse with another model = %d, want 0", r)
	}
	// Call 2: a, b, c, x, y: keeps a, b (reused) and c (same digest).
	if k := a.Keep(2, 5, digests("c", "x", "y")); k != 3 {
		t.Errorf("Keep = %d, want 3", k)
	}
	// The same answer again: all of it.
	if k := a.Keep(2, 4, digests("c", "d")); k != 4 {
		t.Errorf("Keep of the same answer = %d, want 4", k)
	}
	// A shorter answer that differs at once.
	if k := a.Keep(2, 3, digests("z")); k != 2 {
		t.Errorf("Keep = %d, want 2", k)
	}
	// The last message is never reused: with every message stable, Reuse
	// stops one short.
	a.Record(2, 3, 3, "m", 2, digests("z"))
	if r := a.Reuse("m"); r != 2 {
		t.Errorf("Reuse = %d, want 2 (not the last message)", r)
	}
	if from, n := a.Digests(); from != 2 || n != 1 || a.Len() != 3 {
		t.Errorf("Digests = %d, %d; Len %d", from, n, a.Len())
	}
}
