package commits

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/internal/jsontext"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/store"
)

// The stop strategies of Materialize.
const (
	// StopCompaction starts the conversation at the nearest compaction
	// commit (its summary is the prefix), or at the root.
	StopCompaction = "compaction"
	// StopRoot starts at the root and leaves compaction summaries out: the
	// full original conversation.
	StopRoot = "root"
)

// The translation tiers (docs/commits.md, "Materialize"),
// best first; a materialization reports the worst tier any part needed.
const (
	TierNative    = "native"
	TierField     = "field"
	TierNarrative = "narrative"
	TierRaw       = "raw"
)

var tierRank = map[string]int{TierNative: 0, TierField: 1, TierNarrative: 2, TierRaw: 3}

// MaterializeRequest asks for the conversation at a commit.
type MaterializeRequest struct {
	// ID is the commit.
	ID string `json:"id"`
	// Format is the output format (default: the commit's own).
	Format string `json:"format,omitempty"`
	// Stop is "compaction" (default), "root", or the id of an ancestor
	// (inclusive: the output starts with its content; compaction commits
	// after it are left out, as with root).
	Stop string `json:"stop,omitempty"`
	// NoCache neither reads nor writes the snapshot cache.
	NoCache bool `json:"no_cache,omitempty"`
}

// Materialized is a materialized conversation.
type Materialized struct {
	// Commit is the commit materialized; From the first commit whose
	// content it holds; Commits how many commits it concatenates.
	Commit  string `json:"commit"`
	From    string `json:"from,omitempty"`
	Commits int    `json:"commits"`
	Format  string `json:"format"`
	Stop    string `json:"stop"`
	// Tier is the worst translation tier used.
	Tier string `json:"tier"`
	// Content is the conversation in Format.
	Content      []byte `json:"-"`
	MessageCount int64  `json:"message_count"`
	TokenCount   int64  `json:"token_count"`
	// Snapshot is the snapshot commit caching this result; Cached tells
	// that the result was read from it.
	Snapshot string `json:"snapshot,omitempty"`
	Cached   bool   `json:"cached"`
	// ContentSHA256 is the SHA-256 of Content.
	ContentSHA256 string `json:"content_sha256"`
}

// ContentJSON returns Content as JSON can carry it: as text when it is
// valid UTF-8, else base64 (exactly one of the two is set).
func (m *Materialized) ContentJSON() (text, base64Text *string) {
	if utf8.Valid(m.Content) {
		s := string(m.Content)
		return &s, nil
	}
	s := base64.StdEncoding.EncodeToString(m.Content)
	return nil, &s
}

// Materialize returns the conversation at a commit: the contents of the
// chain from the stop point to the commit, concatenated in chain order by
// the format's rule and translated to the requested format (native,
// field-level, narrative or raw, docs/commits.md). The result is stored as
// a snapshot commit and a cache document keyed by (commit, format, stop);
// a repeat reads it back (two store reads). Nothing is written when the
// request is bad: an unknown commit or format, a stop that is not an
// ancestor, a chain that loops.
func (s *Service) Materialize(ctx context.Context, r MaterializeRequest) (*Materialized, error) {
	const op = "materialize"
	if !IsCommitID(r.ID) {
		return nil, errf(op, store.ErrInvalid, r.ID, "id", nil, "not a commit id")
	}
	stop := r.Stop
	if stop == "" {
		stop = StopCompaction
	}
	if stop != StopCompaction && stop != StopRoot && !IsCommitID(stop) {
		return nil, errf(op, store.ErrInvalid, r.ID, "stop", nil, "stop %q is not compaction, root or a commit id", stop)
	}
	w := newWalker(s)
	tip, err := w.load(ctx, r.ID, nil)
	if err != nil {
		return nil, err
	}
	format := r.Format
	if format == "" {
		format = tip.Format
	}
	target, ok := s.reg.Lookup(format)
	if !ok {
		return nil, errf(op, store.ErrInvalid, r.ID, "format", ErrUnknownFormat, "%q (known: %v)", format, s.reg.Names())
	}
	key := cacheKey(tip.ID, format, stop, s.reg.Signature())
	if !r.NoCache {
		if m, err := s.cached(ctx, key); err == nil {
			return m, nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	chain, err := w.chain(ctx, tip, stop)
	if err != nil {
		return nil, err
	}
	m := &Materialized{Commit: tip.ID, From: chain[0].ID, Format: format, Stop: stop}
	var parts []part
	for i, c := range chain {
		if c.Type == Compaction && i > 0 && stop != StopCompaction {
			continue // root and ancestor stops read the original conversation
		}
		parts = append(parts, part{c: c})
	}
	m.Commits = len(chain)
	if err := w.contents(ctx, parts); err != nil {
		return nil, err
	}
	out, tier, err := s.translate(parts, target)
	if err != nil {
		return nil, errf(op, store.ErrInvalid, r.ID, "format", err, "materializing as %s", format)
	}
	m.Content, m.Tier = out, tier
	if tier == TierRaw {
		m.Format = FormatRaw
	}
	m.ContentSHA256 = ContentHash(out)
	if tier == TierNative {
		for _, p := range parts {
			m.MessageCount += p.c.MessageCount
		}
	} else if f, ok := s.reg.Lookup(m.Format); ok && f.Count != nil {
		m.MessageCount = f.Count(out)
	}
	m.TokenCount = int64((len(out) + 3) / 4)
	if !r.NoCache {
		if err := s.cache(ctx, key, tip, m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

type part struct {
	c    *Commit
	data []byte
}

func cacheKey(id, format, stop, registry string) string {
	h := sha256.Sum256([]byte(id + "\x00" + format + "\x00" + stop + "\x00" + registry))
	return CachePrefix + hex.EncodeToString(h[:16])
}

// cached reads a cached materialization: the cache document, then the
// content. ErrNotFound when there is none.
func (s *Service) cached(ctx context.Context, key string) (*Materialized, error) {
	d, err := s.st.Entity(ctx, key, store.Basis{})
	if err != nil {
		return nil, err
	}
	str := func(k string) string { v, _ := d[k].(string); return v }
	num := func(k string) int64 { f, _ := store.Num(d[k]); return int64(f) }
	cd, err := s.st.Entity(ctx, ContentPrefix+str("content"), store.Basis{})
	if err != nil {
		return nil, err
	}
	b, _, err := contentBytes(cd)
	if err != nil {
		return nil, err
	}
	return &Materialized{Commit: str("commit"), From: str("from"), Commits: int(num("commits")), Format: str("format"),
		Stop: str("stop"), Tier: str("tier"), Content: b, MessageCount: num("message_count"), TokenCount: num("token_count"),
		Snapshot: str("snapshot"), Cached: true, ContentSHA256: str("content")}, nil
}

// cache stores m as a snapshot commit (no parent, trigger materialize,
// created at the tip's time, so the same materialization has the same id
// in every store) and the cache document pointing at it.
func (s *Service) cache(ctx context.Context, key string, tip *Commit, m *Materialized) error {
	snap := &Commit{Type: Snapshot, Format: m.Format, Content: m.ContentSHA256, ContentBytes: int64(len(m.Content)),
		Provenance: Provenance{Template: tip.Template, Trigger: MaterializeTrig}, MessageCount: m.MessageCount,
		TokenCount: m.TokenCount, Created: tip.Created, SnapshotOf: tip.ID, Stop: m.Stop, Tier: m.Tier}
	// The id covers the key, so that two materializations with equal bytes
	// (another stop giving the same conversation) stay two snapshots.
	snap.ID = CommitID(key, Snapshot, snap.Content, snap.Created, snap.Template)
	m.Snapshot = snap.ID
	var ops []store.Op
	if _, err := s.st.Entity(ctx, snap.ID, store.Basis{}); errors.Is(err, store.ErrNotFound) {
		ops = append(ops, store.Put(snap.doc()))
	}
	if _, err := s.st.Entity(ctx, ContentPrefix+snap.Content, store.Basis{}); errors.Is(err, store.ErrNotFound) {
		ops = append(ops, store.Put(contentDoc(snap.Content, m.Content)))
	}
	ops = append(ops, store.Put(store.Doc{store.IDKey: key, "type": DocMaterialized, "commit": m.Commit, "from": m.From,
		"commits": int64(m.Commits), "format": m.Format, "stop": m.Stop, "tier": m.Tier, "content": m.ContentSHA256,
		"message_count": m.MessageCount, "token_count": m.TokenCount, "snapshot": snap.ID}))
	if _, err := store.SubmitWait(ctx, s.st, ops); err != nil {
		return fmt.Errorf("commits: caching the materialization of %s: %w", m.Commit, err)
	}
	return nil
}

// translate joins the parts' contents in target's format and says which
// tier it took.
func (s *Service) translate(parts []part, target *Format) ([]byte, string, error) {
	native := true
	unknown := false
	for _, p := range parts {
		if p.c.Format != target.Name {
			native = false
		}
		if _, ok := s.reg.Lookup(p.c.Format); !ok {
			unknown = true
		}
	}
	if native {
		datas := make([][]byte, len(parts))
		for i, p := range parts {
			datas[i] = p.data
		}
		out, err := target.Concat(datas)
		return out, TierNative, err
	}
	if unknown {
		out, err := rawArtifacts(parts)
		return out, TierRaw, err
	}
	if target.Encode == nil {
		return nil, "", fmt.Errorf("%s can only be materialized from %s commits (it has no encoder)", target.Name, target.Name)
	}
	tier := TierNative
	var evs []events.Event
	for _, p := range parts {
		f, _ := s.reg.Lookup(p.c.Format)
		if f.Decode != nil {
			e, err := f.Decode(p.data)
			if err != nil {
				return nil, "", fmt.Errorf("commit %s: decoding %s: %w", p.c.ID, f.Name, err)
			}
			evs = append(evs, e...)
			if f.Name != target.Name && tierRank[tier] < tierRank[TierField] {
				tier = TierField
			}
			continue
		}
		text := ""
		if f.Text != nil {
			text = f.Text(p.data)
		} else {
			text = genericText(p.data)
		}
		evs = append(evs, events.Event{Type: events.System, Subtype: events.SubtypeNarrative, ID: p.c.ID,
			Text: fmt.Sprintf("Here is what an earlier session knew (commit %s, rendered from %s):\n\n%s", p.c.ID, f.Name, text)})
		tier = TierNarrative
	}
	if target.Family == "narrative" {
		tier = TierNarrative
	}
	out, err := target.Encode(evs)
	return out, tier, err
}

// rawArtifacts is the raw tier: the stored artifacts as they are, each
// with its commit and format, as a JSON array (format raw-v1).
func rawArtifacts(parts []part) ([]byte, error) {
	arr := make([]map[string]any, len(parts))
	for i, p := range parts {
		e := map[string]any{"commit": p.c.ID, "format": p.c.Format, "type": string(p.c.Type)}
		if utf8.Valid(p.data) {
			e["text"] = string(p.data)
		} else {
			e["base64"] = base64.StdEncoding.EncodeToString(p.data)
		}
		arr[i] = e
	}
	return jsontext.Marshal(arr)
}

// walker reads chains with few store reads: a commit's session's commits
// are read a window of depths at a time by one query, and contents in
// batches.
type walker struct {
	s       *Service
	cache   map[string]*Commit
	covered map[string]int64 // session -> lowest depth read by a window query
}

// Window and batch sizes of the walker's queries.
const (
	walkWindow   = 512
	contentBatch = 256
)

func newWalker(s *Service) *walker {
	return &walker{s: s, cache: map[string]*Commit{}, covered: map[string]int64{}}
}

// load returns commit id, the parent of child (nil for the first).
func (w *walker) load(ctx context.Context, id string, child *Commit) (*Commit, error) {
	c, ok := w.cache[id]
	if !ok && child != nil && child.Session != "" {
		lo, seen := w.covered[child.Session]
		if !seen || child.Depth <= lo {
			from := max(child.Depth-walkWindow, 0)
			docs, err := w.s.st.Query(ctx, store.Query{Where: []store.Pred{
				store.Where("type", DocCommit), store.Where("session", child.Session),
				{Field: "depth", Op: store.Gte, Value: from}, {Field: "depth", Op: store.Lt, Value: child.Depth},
			}})
			if err != nil {
				return nil, err
			}
			for _, d := range docs {
				if x, err := fromDoc(d); err == nil {
					if _, dup := w.cache[x.ID]; !dup {
						w.cache[x.ID] = x
					}
				}
			}
			w.covered[child.Session] = from
		}
		c, ok = w.cache[id]
	}
	if !ok {
		d, err := w.s.st.Entity(ctx, id, store.Basis{})
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				if child != nil {
					return nil, errf("walk", store.ErrNotFound, id, "parent", nil, "parent of %s is missing", child.ID)
				}
				return nil, errf("walk", store.ErrNotFound, id, "", nil, "no such commit")
			}
			return nil, err
		}
		if c, err = fromDoc(d); err != nil {
			return nil, err
		}
		w.cache[id] = c
	}
	if child != nil && c.Depth != child.Depth-1 {
		return nil, errf("walk", store.ErrInvalid, child.ID, "parent", ErrCycle, "%s (depth %d) names parent %s (depth %d)", child.ID, child.Depth, c.ID, c.Depth)
	}
	if child == nil && (c.Parent == "") != (c.Depth == 0) {
		return nil, errf("walk", store.ErrInvalid, c.ID, "depth", ErrCycle, "depth %d with parent %q", c.Depth, c.Parent)
	}
	return c, nil
}

// chain returns the commits from the stop point to tip, oldest first.
func (w *walker) chain(ctx context.Context, tip *Commit, stop string) ([]*Commit, error) {
	out := []*Commit{tip}
	seen := map[string]bool{tip.ID: true}
	for cur := tip; ; {
		if stop == cur.ID {
			break
		}
		if cur.Type == Snapshot {
			if IsCommitID(stop) {
				return nil, errf("materialize", store.ErrInvalid, tip.ID, "stop", ErrNotAncestor, "%s is not after snapshot %s on the chain of %s", stop, cur.ID, tip.ID)
			}
			break
		}
		if cur.Type == Compaction && stop == StopCompaction {
			break
		}
		if cur.Parent == "" {
			if IsCommitID(stop) {
				return nil, errf("materialize", store.ErrInvalid, tip.ID, "stop", ErrNotAncestor, "%s is not on the chain of %s", stop, tip.ID)
			}
			break
		}
		p, err := w.load(ctx, cur.Parent, cur)
		if err != nil {
			return nil, err
		}
		if seen[p.ID] {
			return nil, errf("walk", store.ErrInvalid, p.ID, "parent", ErrCycle, "the chain of %s passes %s twice", tip.ID, p.ID)
		}
		seen[p.ID] = true
		out = append(out, p)
		cur = p
	}
	slices.Reverse(out)
	return out, nil
}

// contents fills the parts' data, reading the contents in batches.
func (w *walker) contents(ctx context.Context, parts []part) error {
	need := map[string][]byte{}
	var order []string
	for _, p := range parts {
		if _, ok := need[p.c.Content]; !ok {
			need[p.c.Content] = nil
			order = append(order, p.c.Content)
		}
	}
	for lo := 0; lo < len(order); lo += contentBatch {
		batch := order[lo:min(lo+contentBatch, len(order))]
		var docs []store.Doc
		if len(batch) == 1 {
			d, err := w.s.st.Entity(ctx, ContentPrefix+batch[0], store.Basis{})
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if d != nil {
				docs = append(docs, d)
			}
		} else {
			vals := make([]any, len(batch))
			for i, h := range batch {
				vals[i] = h
			}
			var err error
			docs, err = w.s.st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", DocContent), {Field: "sha256", Op: store.In, Values: vals}}})
			if err != nil {
				return err
			}
		}
		for _, d := range docs {
			b, h, err := contentBytes(d)
			if err != nil {
				return err
			}
			need[h] = b
		}
	}
	for i, p := range parts {
		b := need[p.c.Content]
		if b == nil && p.c.ContentBytes > 0 {
			return errf("materialize", store.ErrNotFound, p.c.ID, "content", nil, "content %s is missing", p.c.Content)
		}
		if b == nil {
			b = []byte{}
		}
		parts[i].data = b
	}
	return nil
}
