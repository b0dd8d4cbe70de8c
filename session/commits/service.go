package commits

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/store"
	"github.com/google/uuid"
)

// Service runs the commit operations on a store. It is safe for
// concurrent use, and several processes may share one store.
type Service struct {
	st  store.Store
	reg *Registry
	now func() time.Time
}

// Options configure a Service.
type Options struct {
	// Registry is the set of known formats (default: NewRegistry, the
	// built-in formats without the harness codecs; harness/formats gives
	// one with them).
	Registry *Registry
	// Now is the clock for commits made without a time (default time.Now).
	Now func() time.Time
}

// New returns a Service over st.
func New(st store.Store, o Options) *Service {
	if o.Registry == nil {
		o.Registry = NewRegistry()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{st: st, reg: o.Registry, now: o.Now}
}

// Registry returns the service's formats.
func (s *Service) Registry() *Registry { return s.reg }

// Store returns the service's store.
func (s *Service) Store() store.Store { return s.st }

// CheckpointRequest is what Checkpoint records.
type CheckpointRequest struct {
	// Parent is the parent commit; empty for a root.
	Parent string `json:"parent,omitempty"`
	// Type is delta (default), compaction or snapshot.
	Type Type `json:"type,omitempty"`
	// Format is the content's format (default events-v1).
	Format string `json:"format,omitempty"`
	// Content is the artifact. Events, if set instead, is encoded as
	// events-v1.
	Content []byte         `json:"-"`
	Events  []events.Event `json:"events,omitempty"`
	Provenance
	// Summary and Tags are the first version of the mutable metadata.
	Summary string   `json:"summary,omitempty"`
	Tags    []string `json:"tags,omitempty"`
	// MessageCount and TokenCount, when 0, are computed from the content
	// (tokens approximated as bytes/4).
	MessageCount int64 `json:"message_count,omitempty"`
	TokenCount   int64 `json:"token_count,omitempty"`
	// Created is the commit time (default: now), kept to the millisecond.
	Created time.Time `json:"created,omitzero"`

	snapshotOf, stop, tier string
}

// Checkpoint records a commit and returns it. Everything is checked before
// anything is written: the type, the format (registered, not output-only,
// the content valid in it), the trigger, the parent (it must exist and be
// a well-formed commit). The commit, its content (unless a commit already
// stored the same bytes) and the principal's and session's timelines are
// written in one transaction guarded by a match asserting the id is new.
// The same request twice (same parent, type, content, time and template)
// gives the same id: the second call returns the stored commit.
func (s *Service) Checkpoint(ctx context.Context, r CheckpointRequest) (*Commit, error) {
	c, content, err := s.prepare(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.write(ctx, c, content)
}

func (s *Service) prepare(ctx context.Context, r CheckpointRequest) (*Commit, []byte, error) {
	return s.prepareWith(ctx, r, func(ctx context.Context, id string) (*Commit, error) { return s.get(ctx, id, store.Basis{}) })
}

// prepareWith is prepare reading parents through get (a batch looks in
// its own commits first).
func (s *Service) prepareWith(ctx context.Context, r CheckpointRequest, get func(context.Context, string) (*Commit, error)) (*Commit, []byte, error) {
	const op = "checkpoint"
	if r.Type == "" {
		r.Type = Delta
	}
	switch r.Type {
	case Delta, Compaction, Snapshot:
	default:
		return nil, nil, errf(op, store.ErrInvalid, "", "type", nil, "unknown commit type %q (delta, compaction, snapshot)", r.Type)
	}
	if r.Format == "" {
		r.Format = FormatEvents
	}
	content := r.Content
	// Events are validated one by one as they are encoded, and counted as
	// they are: the format's Validate and Count would decode the encoded
	// whole again, twice, each holding another copy of it (a log's
	// outputs) at once.
	fromEvents := r.Events != nil
	if fromEvents {
		if r.Content != nil {
			return nil, nil, errf(op, store.ErrInvalid, "", "events", nil, "give content or events, not both")
		}
		if r.Format != FormatEvents {
			return nil, nil, errf(op, store.ErrInvalid, "", "format", nil, "events are stored as %s, not %s", FormatEvents, r.Format)
		}
		var err error
		if content, err = events.Encode(r.Events); err != nil {
			return nil, nil, errf(op, store.ErrInvalid, "", "events", err, "bad event")
		}
	}
	if content == nil {
		content = []byte{}
	}
	f, ok := s.reg.Lookup(r.Format)
	if !ok {
		return nil, nil, errf(op, store.ErrInvalid, "", "format", ErrUnknownFormat, "%q (known: %v)", r.Format, s.reg.Names())
	}
	if f.OutputOnly {
		return nil, nil, errf(op, store.ErrInvalid, "", "format", nil, "%s is an output format; commits cannot hold it", r.Format)
	}
	if f.Validate != nil && !fromEvents {
		if err := f.Validate(content); err != nil {
			return nil, nil, errf(op, store.ErrInvalid, "", "content", err, "content is not valid %s", r.Format)
		}
	}
	if r.Trigger != "" && !slices.Contains(Triggers, r.Trigger) {
		return nil, nil, errf(op, store.ErrInvalid, "", "trigger", nil, "unknown trigger %q (%v)", r.Trigger, Triggers)
	}
	if r.Parent != "" && !IsCommitID(r.Parent) {
		return nil, nil, errf(op, store.ErrInvalid, r.Parent, "parent", nil, "not a commit id (ctx- and %d hex digits)", idHexLen)
	}
	created := r.Created
	if created.IsZero() {
		created = s.now()
	}
	created = created.UTC().Truncate(time.Millisecond)
	c := &Commit{Parent: r.Parent, Type: r.Type, Format: r.Format, Content: ContentHash(content),
		ContentBytes: int64(len(content)), Provenance: r.Provenance, Created: created,
		Summary: r.Summary, Tags: r.Tags, MessageCount: r.MessageCount, TokenCount: r.TokenCount,
		SnapshotOf: r.snapshotOf, Stop: r.stop, Tier: r.tier}
	switch {
	case c.MessageCount != 0:
	case fromEvents:
		c.MessageCount = countMessages(r.Events)
	case f.Count != nil:
		c.MessageCount = f.Count(content)
	}
	if c.TokenCount == 0 {
		c.TokenCount = int64((len(content) + 3) / 4)
	}
	if r.Parent != "" {
		p, err := get(ctx, r.Parent)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, nil, errf(op, store.ErrInvalid, r.Parent, "parent", ErrUnknownParent, "no such commit in this store")
			}
			return nil, nil, err
		}
		if (p.Parent == "") != (p.Depth == 0) || p.Parent == p.ID {
			return nil, nil, errf(op, store.ErrInvalid, r.Parent, "parent", ErrCycle, "parent %s has depth %d and parent %q", p.ID, p.Depth, p.Parent)
		}
		if p.Parent != "" {
			// One link further: every link of a chain must lower the depth
			// by one, which no loop can do; walks check every link, a
			// checkpoint the two it extends.
			g, err := get(ctx, p.Parent)
			if err != nil {
				return nil, nil, errf(op, store.ErrInvalid, r.Parent, "parent", nil, "the parent's parent %s cannot be read: %v", p.Parent, err)
			}
			if g.Depth != p.Depth-1 {
				return nil, nil, errf(op, store.ErrInvalid, r.Parent, "parent", ErrCycle, "parent %s (depth %d) names %s (depth %d)", p.ID, p.Depth, g.ID, g.Depth)
			}
		}
		c.Depth = p.Depth + 1
	}
	c.ID = CommitID(c.Parent, c.Type, c.Content, c.Created, c.Template)
	return c, content, nil
}

func (s *Service) write(ctx context.Context, c *Commit, content []byte) (*Commit, error) {
	if old, err := s.get(ctx, c.ID, store.Basis{}); err == nil {
		return s.same(old, c)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	ops := []store.Op{store.Match(c.ID, nil), store.Put(c.doc())}
	if _, err := s.st.Entity(ctx, ContentPrefix+c.Content, store.Basis{}); errors.Is(err, store.ErrNotFound) {
		ops = append(ops, store.Put(contentDoc(c.Content, content)))
	} else if err != nil {
		return nil, err
	}
	if c.Trigger != MaterializeTrig {
		if c.Principal != "" {
			ops = append(ops, store.PutAt(store.Doc{store.IDKey: PrincipalPrefix + c.Principal, "commit": c.ID}, c.Created))
		}
	}
	tx, err := store.SubmitWait(ctx, s.st, ops)
	if errors.Is(err, store.ErrConflict) {
		// Another writer stored the same id first.
		old, gerr := s.get(ctx, c.ID, store.Basis{})
		if gerr != nil {
			return nil, err
		}
		return s.same(old, c)
	}
	if err != nil {
		return nil, fmt.Errorf("commits: writing %s: %w", c.ID, err)
	}
	c.TxID, c.TxTime = tx.ID, tx.Time
	return c, nil
}

// same returns old if it records what c would, else a conflict.
func (s *Service) same(old, c *Commit) (*Commit, error) {
	if old.Parent == c.Parent && old.Type == c.Type && old.Content == c.Content && old.Format == c.Format &&
		old.Template == c.Template && old.Session == c.Session && old.Created.Equal(c.Created) {
		return old, nil
	}
	return nil, errf("checkpoint", store.ErrConflict, c.ID, "", nil, "a different commit has this id")
}

// get reads a commit at basis b.
func (s *Service) get(ctx context.Context, id string, b store.Basis) (*Commit, error) {
	d, err := s.st.Entity(ctx, id, b)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errf("read", store.ErrNotFound, id, "", nil, "no such commit")
		}
		return nil, err
	}
	return fromDoc(d)
}

// Show returns a commit's metadata as of basis b (zero: now). Reading at an
// earlier transaction gives the summary and tags as they were then.
func (s *Service) Show(ctx context.Context, id string, b store.Basis) (*Commit, error) {
	if !IsCommitID(id) {
		return nil, errf("show", store.ErrInvalid, id, "id", nil, "not a commit id")
	}
	c, err := s.get(ctx, id, b)
	if err != nil {
		return nil, err
	}
	if et, err := s.st.EntityTx(ctx, id, b); err == nil {
		c.TxID, c.TxTime = et.TxID, et.TxTime
	}
	return c, nil
}

// Content returns a commit's content bytes.
func (s *Service) Content(ctx context.Context, c *Commit) ([]byte, error) {
	d, err := s.st.Entity(ctx, ContentPrefix+c.Content, store.Basis{})
	if err != nil {
		return nil, errf("content", store.KindOf(err), c.ID, "content", err, "reading content %s", c.Content)
	}
	b, _, err := contentBytes(d)
	return b, err
}

// History returns the chain from id back toward its root, id first, at
// most limit commits (0: all). A chain that loops is an ErrCycle error.
func (s *Service) History(ctx context.Context, id string, limit int) ([]*Commit, error) {
	if !IsCommitID(id) {
		return nil, errf("history", store.ErrInvalid, id, "id", nil, "not a commit id")
	}
	w := newWalker(s)
	tip, err := w.load(ctx, id, nil)
	if err != nil {
		return nil, err
	}
	out := []*Commit{tip}
	for cur := tip; cur.Parent != "" && (limit <= 0 || len(out) < limit); {
		p, err := w.load(ctx, cur.Parent, cur)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
		cur = p
	}
	return out, nil
}

// Update holds the mutable metadata to change; nil fields stay.
type Update struct {
	Summary *string   `json:"summary,omitempty"`
	Tags    *[]string `json:"tags,omitempty"`
}

// UpdateMetadata writes a new version of a commit's metadata with the
// given summary and tags; the content, parent and provenance never change.
// Earlier versions stay readable (Show at an earlier basis). Concurrent
// updates are serialized by a match on the version read (retried).
func (s *Service) UpdateMetadata(ctx context.Context, id string, u Update) (*Commit, error) {
	if !IsCommitID(id) {
		return nil, errf("update-metadata", store.ErrInvalid, id, "id", nil, "not a commit id")
	}
	if u.Summary == nil && u.Tags == nil {
		return nil, errf("update-metadata", store.ErrInvalid, id, "summary", nil, "nothing to update (summary, tags)")
	}
	for attempt := 0; ; attempt++ {
		d, err := s.st.Entity(ctx, id, store.Basis{})
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, errf("update-metadata", store.ErrNotFound, id, "", nil, "no such commit")
			}
			return nil, err
		}
		c, err := fromDoc(d)
		if err != nil {
			return nil, err
		}
		if u.Summary != nil {
			c.Summary = *u.Summary
		}
		if u.Tags != nil {
			c.Tags = slices.Clone(*u.Tags)
		}
		tx, err := store.SubmitWait(ctx, s.st, []store.Op{store.Match(id, d), store.Put(c.doc())})
		if errors.Is(err, store.ErrConflict) && attempt < 10 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("commits: update-metadata %s: %w", id, err)
		}
		c.TxID, c.TxTime = tx.ID, tx.Time
		return c, nil
	}
}

// Resolve returns the commit of principal at or nearest before t: one
// as-of read of the principal's timeline document, whose versions are
// valid from each commit's creation time.
func (s *Service) Resolve(ctx context.Context, principal string, t time.Time) (*Commit, error) {
	if principal == "" {
		return nil, errf("resolve", store.ErrInvalid, "", "principal", nil, "a principal is required")
	}
	d, err := s.st.Entity(ctx, PrincipalPrefix+principal, store.Basis{ValidTime: t.UTC().Truncate(time.Millisecond)})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errf("resolve", store.ErrNotFound, principal, "principal", nil, "no commit by %s at or before %s", principal, store.FormatTime(t))
		}
		return nil, err
	}
	id, _ := d["commit"].(string)
	return s.get(ctx, id, store.Basis{})
}

// SessionTip returns the deepest commit of a session (the latest of the
// deepest when it branched): what resuming the session continues from. One
// query.
func (s *Service) SessionTip(ctx context.Context, session string) (*Commit, error) {
	docs, err := s.st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", DocCommit), store.Where("session", session)},
		OrderBy: []store.Order{{Field: "depth", Desc: true}, {Field: "created", Desc: true}}, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, errf("session tip", store.ErrNotFound, session, "session", nil, "session has no commits")
	}
	return fromDoc(docs[0])
}

// ForkMessages returns how many harness-neutral messages a session started
// by Fork begins with, from its first commit (ok false when c is not a
// fork commit).
func (s *Service) ForkMessages(ctx context.Context, c *Commit) (int, bool) {
	if c.Trigger != ForkTrigger || c.Format != FormatEvents {
		return 0, false
	}
	b, err := s.Content(ctx, c)
	if err != nil {
		return 0, false
	}
	evs, err := events.Decode(b)
	if err != nil || len(evs) != 1 || evs[0].Subtype != "fork" {
		return 0, false
	}
	n, ok := store.Num(evs[0].Metadata["messages"])
	return int(n), ok
}

// ForkRequest starts a session from a commit.
type ForkRequest struct {
	// From is the commit to continue from; empty starts fresh.
	From string `json:"from,omitempty"`
	// Session is the new session's id (default: a new UUID).
	Session string `json:"session,omitempty"`
	// Format and Stop are the materialization's (defaults: events-v1,
	// compaction).
	Format string `json:"format,omitempty"`
	Stop   string `json:"stop,omitempty"`
	// Provenance of the new session's first commit (Session and Trigger
	// are set by Fork).
	Provenance
	// Created is the first commit's time (default now).
	Created time.Time `json:"created,omitzero"`
}

// Forked is a new session started from a commit.
type Forked struct {
	Session string `json:"session"`
	// Commit is the new session's first commit: a delta holding one system
	// event (subtype "fork", naming the session and From) whose parent is
	// From, so the branch shows in history before its first turn.
	Commit *Commit `json:"commit"`
	// Materialized is the conversation the new session starts with (nil
	// for a fresh start).
	Materialized *Materialized `json:"materialized,omitempty"`
}

// Fork is fork and resume as one operation (docs/commits.md): it materializes From and starts a new session whose
// first commit's parent is From. Resume is a fork of the session's tip.
func (s *Service) Fork(ctx context.Context, r ForkRequest) (*Forked, error) {
	if r.Format == "" {
		r.Format = FormatEvents
	}
	if r.Session == "" {
		r.Session = uuid.NewString()
	}
	out := &Forked{Session: r.Session}
	messages := 0
	if r.From != "" {
		f, ok := s.reg.Lookup(r.Format)
		if !ok {
			return nil, errf("fork", store.ErrInvalid, r.From, "format", ErrUnknownFormat, "%q (known: %v)", r.Format, s.reg.Names())
		}
		// The conversation as neutral messages: how many the new session
		// starts with (a live session's ingester continues after them).
		ev, err := s.Materialize(ctx, MaterializeRequest{ID: r.From, Format: FormatEvents, Stop: r.Stop})
		if err != nil {
			return nil, err
		}
		if evs, err := events.Decode(ev.Content); err == nil {
			messages = len(events.ToMessages(evs))
		}
		m := ev
		if r.Format != FormatEvents {
			if m, err = s.Materialize(ctx, MaterializeRequest{ID: r.From, Format: r.Format, Stop: r.Stop}); err != nil {
				return nil, err
			}
		}
		if f.ForSession != nil {
			mc := *m
			if mc.Content, err = f.ForSession(m.Content, r.Session); err != nil {
				return nil, errf("fork", store.ErrInvalid, r.From, "format", err, "making a %s session file", r.Format)
			}
			mc.ContentSHA256 = ContentHash(mc.Content)
			m = &mc
		}
		out.Materialized = m
	}
	p := r.Provenance
	p.Session, p.Trigger = r.Session, ForkTrigger
	mark := events.Event{Type: events.System, Subtype: "fork", Metadata: map[string]any{"session": r.Session, "from": r.From, "messages": messages}}
	c, err := s.Checkpoint(ctx, CheckpointRequest{Parent: r.From, Events: []events.Event{mark}, Provenance: p, Created: r.Created})
	if err != nil {
		return nil, err
	}
	out.Commit = c
	return out, nil
}
