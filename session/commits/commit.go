// Package commits keeps context commits (spec 002 "Agent Context"): an
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
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
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

// The checkpoint triggers: spec 002's five, plus fork (the first commit of
// a forked session), import (issue 13) and materialize (a cached
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
	// SessionTipPrefix starts a session's tip document.
	SessionTipPrefix = "ctx-session-tip:"
	// CachePrefix starts materialization cache documents.
	CachePrefix = "ctx-mat:"

	DocCommit       = "ctx_commit"
	DocContent      = "ctx_content"
	DocPrincipal    = "ctx_principal_head"
	DocSessionTip   = "ctx_session_tip"
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
	// ErrCycle: a parent chain that loops or whose depths disagree.
	ErrCycle = errors.New("corrupt chain (cycle or inconsistent depth)")
	// ErrNotAncestor: a stop commit that is not on the chain.
	ErrNotAncestor = errors.New("stop is not an ancestor")
)

func errf(op string, kind error, id, field string, cause error, format string, args ...any) error {
	return &store.Error{Op: "commits: " + op, Kind: kind, ID: id, Field: field, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// encode returns the commit's metadata document.
func (c *Commit) doc() store.Doc {
	d := store.Doc{
		store.IDKey: c.ID, "type": DocCommit, "commit_type": string(c.Type), "format": c.Format,
		"content": c.Content, "content_bytes": c.ContentBytes,
		"message_count": c.MessageCount, "token_count": c.TokenCount,
		"created": store.FormatTime(c.Created), "depth": c.Depth,
	}
	set := func(k, v string) {
		if v != "" {
			d[k] = v
		}
	}
	set("parent", c.Parent)
	set("template", c.Template)
	set("principal", c.Principal)
	set("machine", c.Machine)
	set("session", c.Session)
	set("trigger", string(c.Trigger))
	set("ticket", c.Ticket)
	set("thread", c.Thread)
	set("harness", c.Harness)
	set("summary", c.Summary)
	set("snapshot_of", c.SnapshotOf)
	set("stop", c.Stop)
	set("tier", c.Tier)
	if len(c.Tags) > 0 {
		tags := make([]any, len(c.Tags))
		for i, t := range c.Tags {
			tags[i] = t
		}
		d["tags"] = tags
	}
	return d
}

// fromDoc reads a commit's metadata document.
func fromDoc(d store.Doc) (*Commit, error) {
	id, _ := d[store.IDKey].(string)
	if t, _ := d["type"].(string); t != DocCommit {
		return nil, errf("read", store.ErrNotFound, id, "type", nil, "document is not a context commit (type %q)", t)
	}
	str := func(k string) string { s, _ := d[k].(string); return s }
	num := func(k string) int64 {
		f, _ := store.Num(d[k])
		return int64(f)
	}
	c := &Commit{
		ID: id, Parent: str("parent"), Type: Type(str("commit_type")), Format: str("format"),
		Content: str("content"), ContentBytes: num("content_bytes"),
		Provenance: Provenance{Template: str("template"), Principal: str("principal"), Machine: str("machine"),
			Session: str("session"), Trigger: Trigger(str("trigger")), Ticket: str("ticket"), Thread: str("thread"),
			Harness: str("harness")},
		MessageCount: num("message_count"), TokenCount: num("token_count"), Depth: num("depth"),
		Summary: str("summary"), SnapshotOf: str("snapshot_of"), Stop: str("stop"), Tier: str("tier"),
	}
	if tags, ok := d["tags"].([]any); ok {
		for _, t := range tags {
			if s, ok := t.(string); ok {
				c.Tags = append(c.Tags, s)
			}
		}
	}
	t, err := store.ParseTime(str("created"))
	if err != nil {
		return nil, errf("read", store.ErrInvalid, id, "created", err, "bad creation time")
	}
	c.Created = t
	if c.Content == "" || c.Format == "" {
		return nil, errf("read", store.ErrInvalid, id, "content", nil, "commit document lacks content or format")
	}
	return c, nil
}

// contentDoc returns the document holding content bytes: UTF-8 text as a
// string, anything else in base64, under a nested key so that the field
// index never copies it.
func contentDoc(hash string, b []byte) store.Doc {
	body := map[string]any{}
	if utf8.Valid(b) {
		body["text"] = string(b)
	} else {
		body["base64"] = base64.StdEncoding.EncodeToString(b)
	}
	return store.Doc{store.IDKey: ContentPrefix + hash, "type": DocContent, "sha256": hash, "bytes": int64(len(b)), "body": body}
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
	} else {
		return nil, hash, errf("read content", store.ErrInvalid, id, "body", nil, "content document holds no body")
	}
	if ContentHash(b) != hash {
		return nil, hash, errf("read content", store.ErrInvalid, id, "sha256", nil, "content does not match its hash")
	}
	return b, hash, nil
}
