package recall

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/context/recall/provider"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// The session index (docs/recall.md): a session's name, description,
// summary and tags live in one document per session, "session-meta:{id}"
// of type session_meta, written anew (a new version) at each indexing, so
// its history holds every earlier name as of its time. Every generation
// attempt is a document of type session_index_attempt.
const (
	MetaType    = "session_meta"
	AttemptType = "session_index_attempt"
	metaPrefix  = "session-meta:"
)

// MetaID returns the id of a session's metadata document.
func MetaID(sessionID string) string { return metaPrefix + sessionID }

// ErrDisabled is returned when the config is invalid or its model cannot
// be used: generation does nothing.
var ErrDisabled = errors.New("session indexing is disabled (see the start-up warning about the recall config)")

// ErrNothingToIndex is returned for a session without user text.
var ErrNothingToIndex = errors.New("the session has no user or assistant text yet")

// Meta is a session's index entry.
type Meta struct {
	SessionID   string   `json:"session_id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Summary     string   `json:"summary"`
	Tags        []string `json:"tags"`
	// Generator is "offline" or the provider's name; Model the model.
	Generator string `json:"generator"`
	Model     string `json:"model,omitempty"`
	// IndexedTurns and UserMessages are what the generation covered.
	IndexedTurns int       `json:"indexed_turns"`
	UserMessages int       `json:"user_messages"`
	UpdatedAt    time.Time `json:"updated_at"`
	// TxID and TxTime are the version's transaction (set when read).
	TxID   int64     `json:"tx_id"`
	TxTime time.Time `json:"tx_time"`
}

func (m *Meta) doc() store.Doc {
	tags := make([]any, len(m.Tags))
	for i, t := range m.Tags {
		tags[i] = t
	}
	d := store.Doc{store.IDKey: MetaID(m.SessionID), "type": MetaType, "session_id": m.SessionID,
		"name": m.Name, "description": m.Description, "summary": m.Summary, "tags": tags,
		"generator": m.Generator, "indexed_turns": m.IndexedTurns, "user_messages": m.UserMessages,
		"updated_at": store.FormatTime(m.UpdatedAt)}
	if m.Model != "" {
		d["model"] = m.Model
	}
	return d
}

func metaFromDoc(d store.Doc) (*Meta, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var m Meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("session metadata %v: %w", d[store.IDKey], err)
	}
	return &m, nil
}

// ReadMeta returns a session's metadata at basis b; ErrNotFound (wrapped)
// if it was never indexed by then.
func ReadMeta(ctx context.Context, st store.Store, sessionID string, b store.Basis) (*Meta, error) {
	id := MetaID(sessionID)
	d, err := st.Entity(ctx, id, b)
	if err != nil {
		return nil, err
	}
	m, err := metaFromDoc(d)
	if err != nil {
		return nil, err
	}
	if et, err := st.EntityTx(ctx, id, b); err == nil {
		m.TxID, m.TxTime = et.TxID, et.TxTime
	}
	return m, nil
}

// MetaHistory lists every version of a session's metadata, oldest first.
func MetaHistory(ctx context.Context, st store.Store, sessionID string) ([]Meta, error) {
	h, err := st.History(ctx, MetaID(sessionID), store.HistoryOptions{Order: store.Asc, WithDocs: true})
	if err != nil {
		return nil, err
	}
	return MetaVersions(h)
}

// MetaVersions turns history entries of a session's metadata (read with
// docs) into its versions, leaving out tombstones; a reader that pages the
// history converts each page.
func MetaVersions(h []store.HistoryEntry) ([]Meta, error) {
	var out []Meta
	for _, e := range h {
		if e.Deleted || e.Doc == nil {
			continue
		}
		m, err := metaFromDoc(e.Doc)
		if err != nil {
			return nil, err
		}
		m.TxID, m.TxTime = e.TxID, e.TxTime
		out = append(out, *m)
	}
	return out, nil
}

// Attempt records one generation attempt (001 telemetry
// "session-index:index": success, model, usage, error).
type Attempt struct {
	SessionID string         `json:"session_id"`
	Generator string         `json:"generator"`
	Model     string         `json:"model,omitempty"`
	N         int            `json:"attempt"`
	Success   bool           `json:"success"`
	Usage     provider.Usage `json:"usage"`
	Error     string         `json:"error,omitempty"`
	At        time.Time      `json:"at"`
}

func (a Attempt) doc(id string) store.Doc {
	d := store.Doc{store.IDKey: id, "type": AttemptType, "session_id": a.SessionID, "generator": a.Generator,
		"attempt": a.N, "success": a.Success, "at": store.FormatTime(a.At),
		"usage": map[string]any{"input_tokens": a.Usage.InputTokens, "output_tokens": a.Usage.OutputTokens,
			"cost_usd": json.Number(fmt.Sprintf("%.8f", a.Usage.CostUSD))}}
	if a.Model != "" {
		d["model"] = a.Model
	}
	if a.Error != "" {
		d["error"] = a.Error
	}
	return d
}

// Indexer generates and stores session metadata.
type Indexer struct {
	st  store.Store
	set *Settings
	now func() time.Time
	mu  sync.Mutex
	run map[string]bool // sessions being indexed
	// users counts, per session, the user messages of the first turns
	// of its chat seen so far, so Due reads only the turns added since.
	users map[string]userCount
	// digests keeps, for the sessions indexed last (at most maxDigests),
	// what their index runs have read, so the next run reads only the
	// turns added since; used is each one's last run.
	digests map[string]*digestUse
	runs    int
}

// digestUse is a session's digest and the number of the run that used it
// last.
type digestUse struct {
	d    *digest
	used int
}

// maxDigests is how many sessions' digests an indexer keeps: the least
// recently indexed one is dropped beyond it, and its next index run reads
// its whole chat again (in a new process too: the digest is not stored).
const maxDigests = 64

// userCount is how many user messages the first turns of a chat hold.
type userCount struct{ turns, users int }

// NewIndexer returns an indexer writing to st with settings set (nil:
// Offline()).
func NewIndexer(st store.Store, set *Settings) *Indexer {
	if set == nil {
		set = Offline()
	}
	if set.MinNewUserMessages <= 0 {
		c := *set
		c.MinNewUserMessages = DefaultMinNewUserMessages
		set = &c
	}
	return &Indexer{st: st, set: set, now: time.Now, run: map[string]bool{}, users: map[string]userCount{},
		digests: map[string]*digestUse{}}
}

// Settings returns the indexer's settings.
func (ix *Indexer) Settings() *Settings { return ix.set }

// Due reports whether a session has at least MinNewUserMessages user
// messages its metadata does not cover (a session never indexed counts
// from zero), and at least a quarter as many as it covers
// (GrowthBeforeReindex): the provider's generation reads the whole
// (serialized, capped) conversation, so spacing the indexes by the
// session's growth keeps their total work linear in the session's length,
// and a long session's context calls do not pay more for recall the longer
// it runs. The chat's turns themselves are read once per
// process (Index). 001's threshold is "at least"
// min_new_user_messages; a session of 20 user messages or fewer is indexed
// exactly as before.
func (ix *Indexer) Due(ctx context.Context, sessionID string) (bool, error) {
	users, err := ix.userMessages(ctx, sessionID)
	if err != nil {
		return false, err
	}
	covered := 0
	if m, err := ReadMeta(ctx, ix.st, sessionID, store.Basis{}); err == nil {
		covered = m.UserMessages
	} else if store.KindOf(err) != store.ErrNotFound {
		return false, err
	}
	return dueAt(users, covered, ix.set.MinNewUserMessages), nil
}

// GrowthBeforeReindex is the fraction of the user messages an index
// covers by which a session must grow before it is indexed again (Due).
const GrowthBeforeReindex = 0.25

// dueAt is Due's rule for users user messages of which the metadata covers
// covered.
func dueAt(users, covered, minNew int) bool {
	n := users - covered
	return n >= minNew && float64(n) >= GrowthBeforeReindex*float64(covered)
}

// userMessages counts the user messages of a session's chat as
// Conversation gives them (one per turn with user text), reading only the
// turns added since the last count (a context call's work must not grow
// with the session).
func (ix *Indexer) userMessages(ctx context.Context, sessionID string) (int, error) {
	ix.mu.Lock()
	c := ix.users[sessionID]
	ix.mu.Unlock()
	turns, n, err := session.ReadTurns(ctx, ix.st, sessionID, c.turns)
	if err != nil {
		return 0, err
	}
	if n < c.turns { // a chat never shrinks; count again
		c = userCount{}
		if turns, n, err = session.ReadTurns(ctx, ix.st, sessionID, 0); err != nil {
			return 0, err
		}
	}
	for _, t := range turns {
		if strings.TrimSpace(t.UserText()) != "" {
			c.users++
		}
	}
	c.turns = n
	ix.mu.Lock()
	ix.users[sessionID] = c
	ix.mu.Unlock()
	return c.users, nil
}

// MaybeIndex indexes a session if it is due (see Due); it reports whether
// it did. A disabled config does nothing and reports no error. Concurrent
// calls for one session run once.
func (ix *Indexer) MaybeIndex(ctx context.Context, sessionID string) (*Meta, bool, error) {
	if ix.set.Disabled {
		return nil, false, nil
	}
	due, err := ix.Due(ctx, sessionID)
	if err != nil || !due {
		return nil, false, err
	}
	m, err := ix.Index(ctx, sessionID)
	return m, err == nil, err
}

// Index generates a session's metadata now (001 "force command") and
// stores it as a new version.
func (ix *Indexer) Index(ctx context.Context, sessionID string) (*Meta, error) {
	if ix.set.Disabled {
		return nil, ErrDisabled
	}
	ix.mu.Lock()
	if ix.run[sessionID] {
		ix.mu.Unlock()
		return nil, fmt.Errorf("session %s: %w: already being indexed", sessionID, store.ErrConflict)
	}
	ix.run[sessionID] = true
	ix.mu.Unlock()
	defer func() { ix.mu.Lock(); delete(ix.run, sessionID); ix.mu.Unlock() }()

	d, err := ix.read(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if d.users == 0 {
		return nil, fmt.Errorf("session %s: %w", sessionID, ErrNothingToIndex)
	}
	m := &Meta{SessionID: sessionID, UserMessages: d.users, IndexedTurns: d.indexed, UpdatedAt: ix.now().UTC()}
	var attempts []Attempt
	if ix.set.Provider == nil {
		f := d.fields()
		m.Name, m.Description, m.Summary, m.Tags, m.Generator = f.Name, f.Description, f.Summary, f.Tags, "offline"
		attempts = append(attempts, Attempt{SessionID: sessionID, Generator: "offline", N: 1, Success: true, At: m.UpdatedAt})
	} else {
		var f *Fields
		f, attempts, err = generate(ctx, ix.set.Provider, sessionID, d.conversation(), ix.now)
		if err != nil {
			if werr := ix.write(ctx, nil, attempts); werr != nil {
				return nil, errors.Join(err, werr)
			}
			return nil, fmt.Errorf("session %s: indexing: %w", sessionID, err)
		}
		m.Name, m.Description, m.Summary, m.Tags = f.Name, f.Description, f.Summary, f.Tags
		m.Generator, m.Model = ix.set.Provider.Name(), attempts[len(attempts)-1].Model
	}
	if err := ix.write(ctx, m, attempts); err != nil {
		return nil, err
	}
	return ReadMeta(ctx, ix.st, sessionID, store.Basis{})
}

// read brings a session's digest up to its chat's latest turn, reading
// only the turns its last run did not (all of them the first time in this
// indexer, or if the chat is not the one read before), one document at a
// time. Index calls it for one session at a time.
func (ix *Indexer) read(ctx context.Context, sessionID string) (*digest, error) {
	maxBytes := 0
	if ix.set.Provider != nil {
		maxBytes = ix.set.MaxBytes
		if maxBytes <= 0 {
			maxBytes = DefaultMaxBytes
		}
	}
	ix.mu.Lock()
	ix.runs++
	u := ix.digests[sessionID]
	if u == nil {
		u = &digestUse{d: newDigest(maxBytes)}
		ix.digests[sessionID] = u
		if len(ix.digests) > maxDigests {
			var oldest string
			for id, o := range ix.digests {
				if id != sessionID && (oldest == "" || o.used < ix.digests[oldest].used) {
					oldest = id
				}
			}
			delete(ix.digests, oldest)
		}
	}
	u.used = ix.runs
	ix.mu.Unlock()
	add := func(n int, t objects.Turn) error {
		if n != u.d.turns {
			return fmt.Errorf("session %s: recall index: turn %d read after %d turns", sessionID, n, u.d.turns)
		}
		u.d.addTurn(t)
		return nil
	}
	n, err := session.EachTurnFrom(ctx, ix.st, sessionID, store.Basis{}, u.d.turns, add)
	if err == nil && n < u.d.turns { // a chat never shrinks: not the one read before
		u.d = newDigest(maxBytes)
		_, err = session.EachTurnFrom(ctx, ix.st, sessionID, store.Basis{}, 0, add)
	}
	if err != nil {
		// The turns read stay added; the next run goes on from there.
		return nil, err
	}
	return u.d, nil
}

// write stores m (if set) and the attempts in one transaction.
func (ix *Indexer) write(ctx context.Context, m *Meta, attempts []Attempt) error {
	var ops []store.Op
	if m != nil {
		ops = append(ops, store.Put(m.doc()))
	}
	for _, a := range attempts {
		id, err := objects.NewUUIDv7(a.At, rand.Reader)
		if err != nil {
			return err
		}
		ops = append(ops, store.Put(a.doc("session-index-attempt:"+a.SessionID+":"+id)))
	}
	if len(ops) == 0 {
		return nil
	}
	_, err := store.SubmitWait(ctx, ix.st, ops)
	return err
}

// Fields are the generated fields (001 metadata schema).
type Fields struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Summary     string   `json:"summary"`
	Tags        []string `json:"tags"`
}

var nameRe = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidateFields checks generated fields against the schema: name in
// kebab case (1-60 characters), description 1-300, summary 1-4000, 1-12
// tags of 1-40 characters each.
func ValidateFields(f Fields) error {
	switch {
	case !nameRe.MatchString(f.Name) || len(f.Name) > 60:
		return fmt.Errorf("name: %q is not kebab-case of 1-60 characters", f.Name)
	case strings.TrimSpace(f.Description) == "" || len([]rune(f.Description)) > 300:
		return fmt.Errorf("description: want 1-300 characters, got %d", len([]rune(f.Description)))
	case strings.TrimSpace(f.Summary) == "" || len([]rune(f.Summary)) > 4000:
		return fmt.Errorf("summary: want 1-4000 characters, got %d", len([]rune(f.Summary)))
	case len(f.Tags) < 1 || len(f.Tags) > 12:
		return fmt.Errorf("tags: want 1-12, got %d", len(f.Tags))
	}
	for i, t := range f.Tags {
		if strings.TrimSpace(t) == "" || len([]rune(t)) > 40 {
			return fmt.Errorf("tags[%d]: want 1-40 characters", i)
		}
	}
	return nil
}

// ParseFields reads a model's answer: one JSON object (optionally inside a
// ``` fence) with exactly the schema's fields, valid.
func ParseFields(text string) (Fields, error) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "```") {
		t = strings.TrimPrefix(strings.TrimPrefix(t, "```json"), "```")
		t = strings.TrimSuffix(strings.TrimSpace(t), "```")
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.DisallowUnknownFields()
	var f Fields
	if err := dec.Decode(&f); err != nil {
		return Fields{}, fmt.Errorf("malformed output: %w", err)
	}
	if dec.More() {
		return Fields{}, errors.New("malformed output: text after the JSON object")
	}
	if err := ValidateFields(f); err != nil {
		return Fields{}, fmt.Errorf("schema violation: %w", err)
	}
	return f, nil
}

const indexSystem = `You index coding-agent sessions so they can be found and referenced later.
Answer with one JSON object and nothing else, with exactly these fields:
{"name": "kebab-case-name-of-2-to-5-words", "description": "one sentence, at most 300 characters",
 "summary": "what was asked, decided and done, at most 4000 characters", "tags": ["1 to 12 short tags"]}`

// generate runs the generation contract (001): up to three attempts while
// the answer is malformed or violates the schema, none after a transport
// or provider error. Every attempt is returned for recording.
func generate(ctx context.Context, p provider.Provider, sessionID, conversation string, now func() time.Time) (*Fields, []Attempt, error) {
	prompt := "Index this conversation.\n\n<conversation>\n" + conversation + "\n</conversation>"
	var attempts []Attempt
	var lastErr error
	for n := 1; n <= 3; n++ {
		resp, err := p.Complete(ctx, provider.Request{System: indexSystem, Prompt: prompt, MaxTokens: 2048, JSON: true})
		a := Attempt{SessionID: sessionID, Generator: p.Name(), Model: p.Model(), N: n, At: now().UTC(), Usage: resp.Usage}
		if resp.Model != "" {
			a.Model = resp.Model
		}
		if err != nil {
			a.Error = err.Error()
			attempts = append(attempts, a)
			return nil, attempts, err // transport errors are not retried
		}
		f, err := ParseFields(resp.Text)
		if err != nil {
			a.Error = err.Error()
			attempts = append(attempts, a)
			lastErr = err
			continue
		}
		a.Success = true
		attempts = append(attempts, a)
		return &f, attempts, nil
	}
	return nil, attempts, fmt.Errorf("three attempts gave no valid metadata: %w", lastErr)
}
