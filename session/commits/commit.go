// Package commits keeps context commits (docs/commits.md): an
// agent's conversation as chains of immutable commits, each naming its
// parent, holding a delta (or a compaction summary, or a whole snapshot)
// stored once by content hash, with provenance and a mutable summary.
// Operations: Checkpoint, Show, History, Materialize (with four
// translation tiers and a snapshot cache), Resolve (principal, time),
// UpdateMetadata and Fork. Contracts and decisions: docs/commits.md;
// document shapes: docs/formats/commits.md.
//
// These conversation commits are not the per-call records of
// context/assemble ("ctx-{session}-{n}", what one model call was shown);
// those name the conversation commit they rendered.
package commits

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/store"
)

// Type is a commit's type.
type Type string

// The commit types.
const (
	// Delta holds the conversation entries since the parent.
	Delta Type = "delta"
	// Compaction holds a summary that replaces the prefix; materialization
	// stops there by default.
	Compaction Type = "compaction"
	// Snapshot holds a whole materialized conversation (a cached
	// materialization, or an import).
	Snapshot Type = "snapshot"
)

// Trigger is what made a commit.
type Trigger string

// The checkpoint triggers: the five of the design (docs/commits.md), plus fork (the first commit of
// a forked session), import and materialize (a cached
// materialization).
const (
	TurnBoundary      Trigger = "turn_boundary"
	ToolCall          Trigger = "tool_call"
	CompactionTrigger Trigger = "compaction"
	SessionEnd        Trigger = "session_end"
	Explicit          Trigger = "explicit"
	ForkTrigger       Trigger = "fork"
	ImportTrigger     Trigger = "import"
	MaterializeTrig   Trigger = "materialize"
)

// Triggers lists the valid triggers.
var Triggers = []Trigger{TurnBoundary, ToolCall, CompactionTrigger, SessionEnd, Explicit, ForkTrigger, ImportTrigger, MaterializeTrig}

// Provenance says where a commit came from. Template is structural (what
// kind of agent) and is part of the commit id; the rest is informative.
type Provenance struct {
	Template  string  `json:"template,omitempty"`
	Principal string  `json:"principal,omitempty"`
	Machine   string  `json:"machine,omitempty"`
	Session   string  `json:"session,omitempty"`
	Trigger   Trigger `json:"trigger,omitempty"`
	Ticket    string  `json:"ticket,omitempty"`
	Thread    string  `json:"thread,omitempty"`
	// Harness names the runtime and its version ("pi 0.73.1").
	Harness string `json:"harness,omitempty"`
	// Cwd and Model are the working directory and model the harness
	// recorded (imports).
	Cwd   string `json:"cwd,omitempty"`
	Model string `json:"model,omitempty"`
	// Source is the file an imported commit's content came from and
	// SourceStart/SourceEnd its byte range there ([start, end)).
	Source      string `json:"source,omitempty"`
	SourceStart int64  `json:"source_start,omitempty"`
	SourceEnd   int64  `json:"source_end,omitempty"`
}

// Commit is a context commit's metadata.
type Commit struct {
	ID     string `json:"id"`
	Parent string `json:"parent,omitempty"`
	Type   Type   `json:"type"`
	Format string `json:"format"`
	// Content is the SHA-256 (hex) of the content bytes; the content
	// document is ContentPrefix + Content.
	Content      string `json:"content"`
	ContentBytes int64  `json:"content_bytes"`
	Provenance
	MessageCount int64     `json:"message_count"`
	TokenCount   int64     `json:"token_count"`
	Created      time.Time `json:"created"`
	// Depth is the number of commits between this one and its root (a
	// root has 0).
	Depth int64 `json:"depth"`
	// Summary and Tags are the mutable metadata.
	Summary string   `json:"summary,omitempty"`
	Tags    []string `json:"tags,omitempty"`
	// SnapshotOf, Stop and Tier describe a cached materialization: the
	// commit it materializes, the stop strategy and the translation tier.
	SnapshotOf string `json:"snapshot_of,omitempty"`
	Stop       string `json:"stop,omitempty"`
	Tier       string `json:"tier,omitempty"`
	// TxID and TxTime are the transaction of the metadata version read.
	TxID   int64     `json:"tx_id"`
	TxTime time.Time `json:"tx_time"`
}

// Document ids and types (docs/formats/commits.md).
const (
	// IDPrefix starts every commit id: "ctx-" and 20 hex digits. The
	// per-call records of context/assemble are "ctx-{session}-{n}" and
	// always hold a second '-'.
	IDPrefix = "ctx-"
	// ContentPrefix starts content documents: "ctx-content:{sha256}".
	ContentPrefix = "ctx-content:"
	// PrincipalPrefix starts a principal's timeline document.
	PrincipalPrefix = "ctx-principal:"
	// CachePrefix starts materialization cache documents.
	CachePrefix = "ctx-mat:"

	DocCommit       = "ctx_commit"
	DocContent      = "ctx_content"
	DocMaterialized = "ctx_materialization"
)

// idHexLen is the number of hex digits of a commit id after "ctx-".
const idHexLen = 20

// IsCommitID tells whether s has the shape of a commit id.
func IsCommitID(s string) bool {
	if !strings.HasPrefix(s, IDPrefix) || len(s) != len(IDPrefix)+idHexLen {
		return false
	}
	for _, c := range s[len(IDPrefix):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ContentHash is the SHA-256 (hex) of content bytes.
func ContentHash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// CommitID derives a commit id from its parent, type, content hash,
// creation time (to the millisecond) and template: the same inputs give
// the same id in any store.
func CommitID(parent string, typ Type, contentHash string, created time.Time, template string) string {
	h := sha256.New()
	for _, s := range []string{"ctx-commit-v1", parent, string(typ), contentHash, store.FormatTime(created.UTC().Truncate(time.Millisecond)), template} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return IDPrefix + hex.EncodeToString(h.Sum(nil))[:idHexLen]
}

// Sentinel errors, wrapped together with a store sentinel (ErrInvalid,
// ErrNotFound or ErrConflict) in a *store.Error that names the commit.
var (
	// ErrUnknownFormat: a format no registry entry names.
	ErrUnknownFormat = errors.New("unknown format")
	// ErrUnknownParent: a checkpoint naming a parent the store lacks.
	ErrUnknownParent = errors.New("unknown parent commit")
	// ErrCycle: a parent chain that loops or whose depths disagree.
	ErrCycle = errors.New("corrupt chain (cycle or inconsistent depth)")
	// ErrNotAncestor: a stop commit that is not on the chain.
	ErrNotAncestor = errors.New("stop is not an ancestor")
)

func errf(op string, kind error, id, field string, cause error, format string, args ...any) error {
	return &store.Error{Op: "commits: " + op, Kind: kind, ID: id, Field: field, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// doc returns the commit's metadata document. The fields a query selects
// on are at the top level (the SQLite field index copies them); the rest,
// summary included, is nested under "meta", which no index copies.
func (c *Commit) doc() store.Doc {
	d := store.Doc{
		store.IDKey: c.ID, "type": DocCommit, "commit_type": string(c.Type), "format": c.Format,
		"content": c.Content, "created": store.FormatTime(c.Created), "depth": c.Depth,
	}
	meta := map[string]any{"content_bytes": c.ContentBytes, "message_count": c.MessageCount, "token_count": c.TokenCount}
	set := func(m map[string]any, k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set(d, "parent", c.Parent)
	set(d, "template", c.Template)
	set(d, "principal", c.Principal)
	set(d, "session", c.Session)
	set(d, "ticket", c.Ticket)
	set(d, "thread", c.Thread)
	set(meta, "machine", c.Machine)
	set(meta, "trigger", string(c.Trigger))
	set(meta, "harness", c.Harness)
	set(meta, "cwd", c.Cwd)
	set(meta, "model", c.Model)
	set(meta, "source", c.Source)
	if c.SourceEnd > 0 {
		meta["source_start"], meta["source_end"] = c.SourceStart, c.SourceEnd
	}
	set(meta, "summary", c.Summary)
	set(meta, "snapshot_of", c.SnapshotOf)
	set(meta, "stop", c.Stop)
	set(meta, "tier", c.Tier)
	if len(c.Tags) > 0 {
		tags := make([]any, len(c.Tags))
		for i, t := range c.Tags {
			tags[i] = t
		}
		d["tags"] = tags
	}
	d["meta"] = meta
	return d
}

// fromDoc reads a commit's metadata document.
func fromDoc(d store.Doc) (*Commit, error) {
	id, _ := d[store.IDKey].(string)
	if t, _ := d["type"].(string); t != DocCommit {
		return nil, errf("read", store.ErrNotFound, id, "type", nil, "document is not a context commit (type %q)", t)
	}
	meta, _ := d["meta"].(map[string]any)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	num := func(m map[string]any, k string) int64 {
		f, _ := store.Num(m[k])
		return int64(f)
	}
	c := &Commit{
		ID: id, Parent: str(d, "parent"), Type: Type(str(d, "commit_type")), Format: str(d, "format"),
		Content: str(d, "content"), ContentBytes: num(meta, "content_bytes"),
		Provenance: Provenance{Template: str(d, "template"), Principal: str(d, "principal"), Machine: str(meta, "machine"),
			Session: str(d, "session"), Trigger: Trigger(str(meta, "trigger")), Ticket: str(d, "ticket"), Thread: str(d, "thread"),
			Harness: str(meta, "harness"), Cwd: str(meta, "cwd"), Model: str(meta, "model"), Source: str(meta, "source"),
			SourceStart: num(meta, "source_start"), SourceEnd: num(meta, "source_end")},
		MessageCount: num(meta, "message_count"), TokenCount: num(meta, "token_count"), Depth: num(d, "depth"),
		Summary: str(meta, "summary"), SnapshotOf: str(meta, "snapshot_of"), Stop: str(meta, "stop"), Tier: str(meta, "tier"),
	}
	if tags, ok := d["tags"].([]any); ok {
		for _, t := range tags {
			if s, ok := t.(string); ok {
				c.Tags = append(c.Tags, s)
			}
		}
	}
	t, err := store.ParseTime(str(d, "created"))
	if err != nil {
		return nil, errf("read", store.ErrInvalid, id, "created", err, "bad creation time")
	}
	c.Created = t
	if c.Content == "" || c.Format == "" {
		return nil, errf("read", store.ErrInvalid, id, "content", nil, "commit document lacks content or format")
	}
	return c, nil
}

// contentDoc returns the document holding content bytes, nested under
// "body" so that the field index never copies them: deflated and in base64
// when that is at most 3/4 of the bytes ("deflate"), else UTF-8 text as a
// string ("text"), else base64 ("base64").
func contentDoc(hash string, b []byte) store.Doc {
	body := map[string]any{"bytes": int64(len(b))}
	if z := deflate(b); z != "" {
		body["deflate"] = z
	} else if utf8.Valid(b) {
		body["text"] = string(b)
	} else {
		body["base64"] = base64.StdEncoding.EncodeToString(b)
	}
	return store.Doc{store.IDKey: ContentPrefix + hash, "type": DocContent, "sha256": hash, "body": body}
}

// deflaters holds flate writers for deflate: a new one allocates about a
// megabyte of tables, at every commit otherwise (Reset writes the same
// bytes as a new writer).
var deflaters sync.Pool

// deflate returns b deflated in base64, or "" when that does not save a
// quarter of b (small or incompressible content).
func deflate(b []byte) string {
	if len(b) < 256 {
		return ""
	}
	var buf bytes.Buffer
	w, _ := deflaters.Get().(*flate.Writer)
	if w == nil {
		w, _ = flate.NewWriter(&buf, flate.DefaultCompression)
	} else {
		w.Reset(&buf)
	}
	w.Write(b)
	w.Close()
	deflaters.Put(w)
	if base64.StdEncoding.EncodedLen(buf.Len()) > len(b)*3/4 {
		return ""
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// contentBytes reads content bytes back from their document and checks
// their hash.
func contentBytes(d store.Doc) ([]byte, string, error) {
	id, _ := d[store.IDKey].(string)
	hash, _ := d["sha256"].(string)
	body, _ := d["body"].(map[string]any)
	var b []byte
	if s, ok := body["text"].(string); ok {
		b = []byte(s)
	} else if s, ok := body["base64"].(string); ok {
		var err error
		if b, err = base64.StdEncoding.DecodeString(s); err != nil {
			return nil, hash, errf("read content", store.ErrInvalid, id, "body.base64", err, "bad base64")
		}
	} else if s, ok := body["deflate"].(string); ok {
		z, err := base64.StdEncoding.DecodeString(s)
		if err == nil {
			b, err = io.ReadAll(flate.NewReader(bytes.NewReader(z)))
		}
		if err != nil {
			return nil, hash, errf("read content", store.ErrInvalid, id, "body.deflate", err, "bad deflated content")
		}
	} else {
		return nil, hash, errf("read content", store.ErrInvalid, id, "body", nil, "content document holds no body")
	}
	if ContentHash(b) != hash {
		return nil, hash, errf("read content", store.ErrInvalid, id, "sha256", nil, "content does not match its hash")
	}
	return b, hash, nil
}
