package inspect

import (
	"context"
	"crypto/sha256"
	"fmt"
)

// Diff compares the contexts of two calls of a session.
type Diff struct {
	A, B Call `json:"-"`
	// From and To are the call numbers compared.
	From int `json:"from"`
	To   int `json:"to"`
	// PrefixBytes is the length of the bytes both contexts begin with;
	// SharedBlocks the number of whole blocks in it.
	PrefixBytes  int `json:"prefix_bytes"`
	SharedBlocks int `json:"shared_blocks"`
	// FirstDiff is the first block of To's context past the common prefix
	// (nil when To's context is From's).
	FirstDiff *Block `json:"first_diff,omitempty"`
	// Entries are the blocks after the shared ones, in To's order, each
	// marked "same" (also in From after its shared blocks), "added" (not in
	// From); then the blocks of From that To does not have, "removed".
	Entries []DiffEntry `json:"entries"`
	// Added, Removed and Same count entries; AddedTokens and RemovedTokens
	// sum their tokens.
	Added         int `json:"added"`
	Removed       int `json:"removed"`
	Same          int `json:"same"`
	AddedTokens   int `json:"added_tokens"`
	RemovedTokens int `json:"removed_tokens"`
}

// DiffEntry is one block of a diff.
type DiffEntry struct {
	Op    string `json:"op"` // same, added, removed
	Block Block  `json:"block"`
}

// Diff rebuilds calls from and to of a session and compares them block by
// block: the common prefix, then every later block as kept, added or
// removed (blocks are matched by their bytes, so a block that moved counts
// as kept).
func (in *Inspector) Diff(ctx context.Context, sid string, from, to int) (*Diff, error) {
	a, err := in.Call(ctx, sid, from)
	if err != nil {
		return nil, err
	}
	b, err := in.Call(ctx, sid, to)
	if err != nil {
		return nil, err
	}
	return diff(a, b), nil
}

func diff(a, b *CallView) *Diff {
	d := &Diff{A: a.Call, B: b.Call, From: a.Call.N, To: b.Call.N}
	n := min(len(a.Raw), len(b.Raw))
	for d.PrefixBytes < n && a.Raw[d.PrefixBytes] == b.Raw[d.PrefixBytes] {
		d.PrefixBytes++
	}
	shared := 0
	for shared < len(a.Blocks) && shared < len(b.Blocks) && a.Blocks[shared].End <= d.PrefixBytes && b.Blocks[shared].End <= d.PrefixBytes {
		shared++
	}
	d.SharedBlocks = shared
	if shared < len(b.Blocks) {
		fb := b.Blocks[shared]
		d.FirstDiff = &fb
	}
	key := func(x Block) [32]byte { return sha256.Sum256([]byte(x.Kind + "\x00" + x.Text)) }
	left := map[[32]byte]int{}
	for _, x := range a.Blocks[shared:] {
		left[key(x)]++
	}
	for _, x := range b.Blocks[shared:] {
		k := key(x)
		op := "added"
		if left[k] > 0 {
			left[k]--
			op = "same"
			d.Same++
		} else {
			d.Added++
			d.AddedTokens += x.Tokens
		}
		d.Entries = append(d.Entries, DiffEntry{Op: op, Block: x})
	}
	for _, x := range a.Blocks[shared:] {
		k := key(x)
		if left[k] > 0 {
			left[k]--
			d.Removed++
			d.RemovedTokens += x.Tokens
			d.Entries = append(d.Entries, DiffEntry{Op: "removed", Block: x})
		}
	}
	return d
}

// String summarizes a diff on one line.
func (d *Diff) String() string {
	return fmt.Sprintf("call %d -> %d: %d bytes and %d blocks in common, then %d blocks added (%d tokens), %d removed (%d tokens), %d kept",
		d.From, d.To, d.PrefixBytes, d.SharedBlocks, d.Added, d.AddedTokens, d.Removed, d.RemovedTokens, d.Same)
}
