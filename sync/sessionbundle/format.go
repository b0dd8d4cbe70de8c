package sessionbundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxstore/ctxstore/internal/jsonlimit"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// Format identification, as written in the bundle's first line.
const (
	// FormatName is the first line's "format" value.
	FormatName = "ctxstore-sessionbundle"
	// FormatVersion is the only version this package reads and writes; a
	// bundle of another version is refused (ErrVersion).
	FormatVersion = 1
)

// Faults of a bundle's manifest. Each wraps the version log's error of the
// same name (errors.Is(ErrCorrupt, versionlog.ErrCorrupt) holds), which
// is what faults in the bundle's version log give. Both come in a
// *versionlog.LineError naming the bundle's line.
var (
	ErrTruncated = &bundleError{"truncated bundle", versionlog.ErrTruncated}
	ErrCorrupt   = &bundleError{"corrupt bundle", versionlog.ErrCorrupt}
	ErrChecksum  = &bundleError{"manifest checksum mismatch", versionlog.ErrChecksum}
	ErrVersion   = &bundleError{"unknown bundle format or version", versionlog.ErrVersion}
)

// bundleError is a sentinel that wraps the version log's.
type bundleError struct {
	msg string
	of  error
}

func (e *bundleError) Error() string { return e.msg }
func (e *bundleError) Unwrap() error { return e.of }

// Errors of an import.
var (
	// ErrSessionExists: the target holds the session already, and not from
	// an import of a bundle of the same source.
	ErrSessionExists = errors.New("session exists in the target")
	// ErrForeign: the bundle reaches outside the session it names: an
	// entity of another session (its head, chat, system prompt, commits,
	// a document whose session_id names another session), a reserved id,
	// a source id of another session, or an entity the target already
	// holds from elsewhere (another session's objects). An import never
	// writes, overwrites or evicts anything but its own session's.
	ErrForeign = errors.New("the bundle reaches outside its session")
)

// SourceID returns the source id a bundle of session sessionID exported
// from a store named storeID carries, and so the name of its cursor in
// targets: "session:{sessionID}@{storeID}".
func SourceID(sessionID, storeID string) string {
	return objects.SessionObjectID(sessionID) + "@" + storeID
}

// Role says why an entity is in a bundle.
type Role string

// The roles, in the order a reader can rely on for nothing (entities are
// listed by id).
const (
	// RoleSession is the session's head object "session:{id}".
	RoleSession Role = "session"
	// RoleSessionDoc is any other document carrying the session's id in
	// "session_id" (the session package's chunk documents, ...).
	RoleSessionDoc Role = "session_doc"
	// RoleCommit is a context commit "ctx-{id}-{n}".
	RoleCommit Role = "commit"
	// RoleChat and RoleSystemPrompt are the session's locked objects.
	RoleChat         Role = "chat"
	RoleSystemPrompt Role = "system_prompt"
	// RoleObject is an object of the session index, or one that a context
	// commit or the chat references.
	RoleObject Role = "object"
)

func (r Role) valid() bool {
	switch r {
	case RoleSession, RoleSessionDoc, RoleCommit, RoleChat, RoleSystemPrompt, RoleObject:
		return true
	}
	return false
}

// Header is a bundle's first line.
type Header struct {
	// Session is the session id.
	Session string `json:"session"`
	// Source is the source of the version log that follows the manifest
	// (its id is SourceID(Session, store id)).
	Source versionlog.Source `json:"source"`
	// Upto is the source's latest tx when the export started; the log
	// holds the session's entities' transactions up to it.
	Upto int64 `json:"upto"`
	// Chat and SystemPrompt are the ids of the session's locked objects.
	Chat         string `json:"chat"`
	SystemPrompt string `json:"system_prompt"`
	// Commits is the number of context commits (calls) the log holds.
	Commits int64 `json:"commits"`
	// Entities is the number of entity lines.
	Entities int64 `json:"entities"`
}

// Entity is one entity line: an entity whose history the log carries.
type Entity struct {
	ID   string `json:"id"`
	Role Role   `json:"role"`
}

// manifestEnd is the line that closes the manifest.
type manifestEnd struct {
	Lines    int64  `json:"lines"`
	Entities int64  `json:"entities"`
	SHA256   string `json:"sha256"`
}

func appendHeader(b []byte, h Header) []byte {
	b = append(b, `{"t":"session_bundle","format":`...)
	b = versionlog.AppendString(b, FormatName)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, FormatVersion, 10)
	b = append(b, `,"session":`...)
	b = versionlog.AppendString(b, h.Session)
	b = append(b, `,"source":{"id":`...)
	b = versionlog.AppendString(b, h.Source.ID)
	b = append(b, `,"backend":`...)
	b = versionlog.AppendString(b, h.Source.Backend)
	b = append(b, `,"version":`...)
	b = versionlog.AppendString(b, h.Source.Version)
	b = append(b, `,"location":`...)
	b = versionlog.AppendString(b, h.Source.Location)
	b = append(b, `},"upto":`...)
	b = strconv.AppendInt(b, h.Upto, 10)
	b = append(b, `,"chat":`...)
	b = versionlog.AppendString(b, h.Chat)
	b = append(b, `,"system_prompt":`...)
	b = versionlog.AppendString(b, h.SystemPrompt)
	b = append(b, `,"commits":`...)
	b = strconv.AppendInt(b, h.Commits, 10)
	b = append(b, `,"entities":`...)
	b = strconv.AppendInt(b, h.Entities, 10)
	return append(b, "}\n"...)
}

func appendEntity(b []byte, e Entity) []byte {
	b = append(b, `{"t":"entity","id":`...)
	b = versionlog.AppendString(b, e.ID)
	b = append(b, `,"role":`...)
	b = versionlog.AppendString(b, string(e.Role))
	return append(b, "}\n"...)
}

func appendManifestEnd(b []byte, e manifestEnd) []byte {
	b = append(b, `{"t":"manifest_end","lines":`...)
	b = strconv.AppendInt(b, e.Lines, 10)
	b = append(b, `,"entities":`...)
	b = strconv.AppendInt(b, e.Entities, 10)
	b = append(b, `,"sha256":`...)
	b = versionlog.AppendString(b, e.SHA256)
	return append(b, "}\n"...)
}

// headerLine is the first line as decoded.
type headerLine struct {
	T       string `json:"t"`
	Format  string `json:"format"`
	Version int64  `json:"version"`
	Header
}

// parseHeader reads the first line: a session bundle of this version,
// written exactly as appendHeader writes it.
func parseHeader(line []byte) (Header, error) {
	var probe struct {
		T       string `json:"t"`
		Format  string `json:"format"`
		Version int64  `json:"version"`
	}
	if err := json.Unmarshal(line, &probe); err != nil || probe.T != "session_bundle" || probe.Format != FormatName {
		return Header{}, fmt.Errorf("%w: not a session bundle (the first line is not {\"t\":\"session_bundle\",\"format\":%q,…})", ErrVersion, FormatName)
	}
	if probe.Version != FormatVersion {
		return Header{}, fmt.Errorf("%w: session bundle version %d (this build reads version %d)", ErrVersion, probe.Version, FormatVersion)
	}
	var hl headerLine
	if err := decodeStrict(line, &hl); err != nil {
		return Header{}, err
	}
	h := hl.Header
	if !bytes.Equal(bytes.TrimSuffix(appendHeader(nil, h), nl), line) {
		return Header{}, fmt.Errorf("%w: the header line is not written as the format requires (fields, their order, escaping)", ErrCorrupt)
	}
	if err := objects.ValidateID(objects.SessionObjectID(h.Session)); err != nil {
		return Header{}, fmt.Errorf("%w: session %q: %v", ErrCorrupt, h.Session, err)
	}
	switch {
	case h.Source.ID == "":
		return Header{}, fmt.Errorf("%w: the source has no id", ErrCorrupt)
	case h.Chat != objects.ChatObjectID(h.Session) || h.SystemPrompt != objects.SystemPromptObjectID(h.Session):
		return Header{}, fmt.Errorf("%w: chat %q and system prompt %q are not session %q's", ErrCorrupt, h.Chat, h.SystemPrompt, h.Session)
	case h.Upto < -1 || h.Commits < 0 || h.Entities < 1:
		return Header{}, fmt.Errorf("%w: upto %d, commits %d, entities %d", ErrCorrupt, h.Upto, h.Commits, h.Entities)
	}
	return h, nil
}

// parseEntity reads an entity line.
func parseEntity(line []byte) (Entity, error) {
	var l struct {
		T string `json:"t"`
		Entity
	}
	if err := decodeStrict(line, &l); err != nil {
		return Entity{}, err
	}
	if l.T != "entity" {
		return Entity{}, fmt.Errorf("%w: a %q line where an entity line or the manifest end belongs", ErrCorrupt, l.T)
	}
	e := l.Entity
	if !bytes.Equal(bytes.TrimSuffix(appendEntity(nil, e), nl), line) {
		return Entity{}, fmt.Errorf("%w: the entity line is not written as the format requires", ErrCorrupt)
	}
	if e.ID == "" {
		return Entity{}, fmt.Errorf("%w: an entity with an empty id", ErrCorrupt)
	}
	if !e.Role.valid() {
		return Entity{}, fmt.Errorf("%w: entity %q: unknown role %q", ErrCorrupt, e.ID, e.Role)
	}
	if versionlog.Reserved(e.ID) {
		return Entity{}, fmt.Errorf("%w: entity %q is reserved for the version log", ErrCorrupt, e.ID)
	}
	return e, nil
}

// parseManifestEnd reads the manifest's closing line.
func parseManifestEnd(line []byte) (manifestEnd, error) {
	var l struct {
		T string `json:"t"`
		manifestEnd
	}
	if err := decodeStrict(line, &l); err != nil {
		return manifestEnd{}, err
	}
	if !bytes.Equal(bytes.TrimSuffix(appendManifestEnd(nil, l.manifestEnd), nl), line) {
		return manifestEnd{}, fmt.Errorf("%w: the manifest end line is not written as the format requires", ErrCorrupt)
	}
	return l.manifestEnd, nil
}

// lineType returns the "t" of a line that starts as every line must.
func lineType(line []byte) string {
	const pfx = `{"t":"`
	if !bytes.HasPrefix(line, []byte(pfx)) {
		return ""
	}
	rest := line[len(pfx):]
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return ""
	}
	return string(rest[:i])
}

// decodeStrict decodes one JSON object, refusing unknown fields and
// trailing data.
func decodeStrict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the JSON object", ErrCorrupt)
	}
	return nil
}

var nl = []byte("\n")

// loneSurrogate refuses a manifest line holding a lone surrogate escape
// ("\ud800" alone), naming the field and the byte, by the rule every
// document and version log line follows (jsonlimit.LoneSurrogate):
// encoding/json decodes such an escape as U+FFFD, so "k\ud800" and
// "k\udfff" would name one entity.
func loneSurrogate(line []byte) error {
	off := jsonlimit.LoneSurrogate(line)
	if off < 0 {
		return nil
	}
	return fmt.Errorf("%w: field %s, byte %d: the escape %s is half of a UTF-16 surrogate pair, no Unicode character", ErrCorrupt, fieldAt(line, off), off, line[off:off+6])
}

// fieldAt names the field of the JSON object line whose key or string
// value holds byte off ("source.id" inside the header's source), or
// "(unknown)" when the line does not parse that far.
func fieldAt(line []byte, off int) string {
	dec := json.NewDecoder(bytes.NewReader(line))
	type frame struct {
		object bool
		key    string
		isKey  bool // the next string in an object is a key
	}
	var stack []frame
	path := func(last string) string {
		var parts []string
		for _, f := range stack[:len(stack)-1] {
			if f.object {
				parts = append(parts, f.key)
			}
		}
		return strings.Join(append(parts, last), ".")
	}
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return "(unknown)"
		}
		end := int(dec.InputOffset())
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				stack = append(stack, frame{object: t == '{', isKey: t == '{'})
				continue
			}
			stack = stack[:len(stack)-1]
		default:
			if len(stack) == 0 {
				return "(unknown)"
			}
			top := &stack[len(stack)-1]
			if top.object && top.isKey {
				top.key, _ = t.(string)
				top.isKey = false
				if int(start) <= off && off < end {
					return path(top.key)
				}
				continue
			}
			if int(start) <= off && off < end {
				return path(top.key)
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].isKey = true
		}
	}
}
