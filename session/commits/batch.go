package commits

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxstore/ctxstore/store"
)

// Batch records many commits in one transaction (an import writes a
// file's new commits, and its cursor, at once: all or nothing). A
// request's parent may be a commit added earlier to the same batch. Each
// commit is checked as Checkpoint checks it; a commit already in the
// store (the same request again) is returned as stored and not written
// again. A Batch is not safe for concurrent use.
type Batch struct {
	s        *Service
	commits  map[string]*Commit
	order    []*Commit
	contents map[string][]byte // new content by hash
	stored   map[string]bool   // ids already in the store
	bytes    int64
}

// NewBatch starts a batch.
func (s *Service) NewBatch() *Batch {
	return &Batch{s: s, commits: map[string]*Commit{}, contents: map[string][]byte{}, stored: map[string]bool{}}
}

// Len is the number of commits added; Bytes the new content bytes held.
func (b *Batch) Len() int     { return len(b.order) }
func (b *Batch) Bytes() int64 { return b.bytes }

// Add checks a commit and adds it to the batch; the commit returned has
// its id (TxID and TxTime are set by Write, or are the stored ones).
func (b *Batch) Add(ctx context.Context, r CheckpointRequest) (*Commit, error) {
	get := func(ctx context.Context, id string) (*Commit, error) {
		if c, ok := b.commits[id]; ok {
			return c, nil
		}
		return b.s.get(ctx, id, store.Basis{})
	}
	c, content, err := b.s.prepareWith(ctx, r, get)
	if err != nil {
		return nil, err
	}
	if old, ok := b.commits[c.ID]; ok {
		return b.s.same(old, c)
	}
	if old, err := b.s.get(ctx, c.ID, store.Basis{}); err == nil {
		old, err := b.s.same(old, c)
		if err != nil {
			return nil, err
		}
		b.commits[c.ID] = old
		b.stored[c.ID] = true
		return old, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if _, ok := b.contents[c.Content]; !ok {
		if _, err := b.s.st.Entity(ctx, ContentPrefix+c.Content, store.Basis{}); errors.Is(err, store.ErrNotFound) {
			b.contents[c.Content] = content
			b.bytes += int64(len(content))
		} else if err != nil {
			return nil, err
		}
	}
	b.commits[c.ID] = c
	b.order = append(b.order, c)
	return c, nil
}

// Write submits the batch's new commits, their new contents, the
// principals' timelines and extra ops in one transaction, and waits for
// it. Nothing is written when there is nothing new and no extra op.
func (b *Batch) Write(ctx context.Context, extra ...store.Op) error {
	var ops []store.Op
	var fresh []*Commit
	for _, c := range b.order {
		if b.stored[c.ID] {
			continue
		}
		fresh = append(fresh, c)
		ops = append(ops, store.Match(c.ID, nil), store.Put(c.doc()))
		if content, ok := b.contents[c.Content]; ok {
			ops = append(ops, store.Put(contentDoc(c.Content, content)))
			delete(b.contents, c.Content)
		}
		if c.Principal != "" && c.Trigger != MaterializeTrig {
			ops = append(ops, store.PutAt(store.Doc{store.IDKey: PrincipalPrefix + c.Principal, "commit": c.ID}, c.Created))
		}
	}
	ops = append(ops, extra...)
	if len(ops) == 0 {
		return nil
	}
	tx, err := store.SubmitWait(ctx, b.s.st, ops)
	if err != nil {
		return fmt.Errorf("commits: writing a batch of %d commits: %w", len(fresh), err)
	}
	for _, c := range fresh {
		c.TxID, c.TxTime = tx.ID, tx.Time
	}
	b.commits, b.order, b.contents, b.stored, b.bytes = map[string]*Commit{}, nil, map[string][]byte{}, map[string]bool{}, 0
	return nil
}
