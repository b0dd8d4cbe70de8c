// Package delta is the server's half of the delta protocol of the context
// call (docs/service.md, "Deltas"; the client's half is
// integrations/client/deltas.ts). A harness hands its whole message log to
// every context call, and the context grows with the session; so the client
// sends only the messages its log gained since the previous call, and gets
// back only the messages of the answer that changed.
//
// Two types hold what the server keeps of one session, each without the
// messages themselves:
//
//   - Log is the log the client sent: how many messages, and the running
//     SHA-256 of their JSON as sent. A request names its base (the first
//     base messages of the previous log) by count and digest; Log.Check
//     accepts it or answers ErrMismatch, and the client sends the whole log.
//   - Answer is the last answer: the digest of each of its messages from
//     the first one a later answer may share. Answer.Keep says how many
//     leading messages of a new answer the client already holds.
//
// The caller (server/httpapi) converts and encodes the messages; this
// package only counts and compares them.
package delta

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
)

// ErrMismatch is the error of a request whose base the server does not
// hold: the client then sends the whole log. Log.Check's errors match it
// (errors.Is) and say why.
var ErrMismatch = errors.New("delta: the server does not hold the base of this log")

type mismatch string

func (m mismatch) Error() string        { return string(m) }
func (m mismatch) Is(target error) bool { return target == ErrMismatch }

// Log is the log a client sent as deltas: its length and running digest
// (the SHA-256 of each message's JSON followed by "\n"). The zero value is
// an empty log.
type Log struct {
	n   int
	sum [32]byte
	h   hash.Hash
}

// Len is the number of messages held.
func (l *Log) Len() int { return l.n }

// Sum is the digest of the messages held, in hex, as a request's
// base_sha256 names it.
func (l *Log) Sum() string {
	if l.h == nil {
		return ""
	}
	return hex.EncodeToString(l.sum[:])
}

// Check reports whether a request whose log begins with the first base
// messages of the log held (sum: their digest, in hex) can be applied. A
// base of 0 is a whole log, always accepted. Otherwise the base must be the
// whole log held, with the same digest: a base shorter than the log held is
// a replaced or shortened log, which the server cannot take up again since
// it keeps no digest of each prefix. The error matches ErrMismatch.
func (l *Log) Check(base int, sum string) error {
	switch {
	case base <= 0:
		return nil
	case base < l.n:
		return mismatch(fmt.Sprintf("the log was replaced or shortened: the client holds %d messages of the %d the server holds", base, l.n))
	case base > l.n || l.Sum() != sum:
		return mismatch(fmt.Sprintf("the server does not hold the first %d messages of this log (it holds %d)", base, l.n))
	}
	return nil
}

// Add appends one message, as sent (its JSON bytes).
func (l *Log) Add(raw []byte) {
	if l.h == nil {
		l.h = sha256.New()
	}
	l.h.Write(raw)
	l.h.Write([]byte{'\n'})
	l.h.Sum(l.sum[:0])
	l.n++
}

// Answer is what the server keeps of its last answer to a client that
// holds answers: its call number, its length, how many of its leading
// messages no later answer changes (its Stable mark, assemble.Assembled's),
// what its messages were encoded with (a model: a change re-encodes them)
// and the digest of each message from its reuse mark on. The zero value
// holds no answer.
type Answer struct {
	call   int
	n      int
	stable int
	model  string
	from   int        // sums[i] is the digest of message from+i
	sums   [][32]byte // the encoded messages' SHA-256
}

// Held reports whether a client that says it holds the answer to call
// have (have_call) holds the one kept here: the new answer can then be a
// delta over it.
func (a *Answer) Held(have int) bool { return have > 0 && have == a.call }

// Reuse is how many leading messages of the next answer are, by the Stable
// contract, those of the answer held, encoded with the same model: they
// need not be encoded again. The last message is never reused (items
// appended since may have joined it). 0 without an answer, or when model
// differs from the one it was encoded with.
func (a *Answer) Reuse(model string) int {
	if a.call == 0 || a.model != model {
		return 0
	}
	return max(0, min(a.stable, a.n-1))
}

// Keep is how many leading messages of a new answer of n messages the
// client keeps from the answer held: the first reuse (Reuse's), and after
// them each message whose digest is the held one's, up to the first that
// differs. sums are the new answer's digests from reuse on.
func (a *Answer) Keep(reuse, n int, sums [][32]byte) int {
	keep := reuse
	for keep >= a.from && keep < min(n, a.n) && keep-reuse < len(sums) && sums[keep-reuse] == a.sums[keep-a.from] {
		keep++
	}
	return keep
}

// Record makes a new answer the one held: call, n messages of which
// stable are stable, encoded with model, and the digests of its messages
// from reuse on (the next answer compares only from its own reuse mark,
// which does not go back while the model stays the same).
func (a *Answer) Record(call, n, stable int, model string, reuse int, sums [][32]byte) {
	*a = Answer{call: call, n: n, stable: stable, model: model, from: reuse, sums: sums}
}

// Digests is how many message digests the answer holds, and from which
// message on (for tests of what the server keeps).
func (a *Answer) Digests() (from, count int) { return a.from, len(a.sums) }

// Len is the number of messages of the answer held.
func (a *Answer) Len() int { return a.n }
