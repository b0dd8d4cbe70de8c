package objects

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
)

// MaxIDLen is the longest id, in bytes, that ValidateID accepts.
const MaxIDLen = 512

// idReserved holds the characters no id may contain: they delimit the
// textual reference form ("@", "#") and Markdown wikilinks ("[", "]",
// "|").
const idReserved = "@#[]|"

// Prefixes of the per-session object ids.
const (
	chatPrefix         = "chat:"
	sessionPrefix      = "session:"
	systemPromptPrefix = "system_prompt:"
)

// ValidateID checks the syntax every object id obeys: 1 to MaxIDLen bytes
// of valid UTF-8, with no white space, no control characters and none of
// the reserved characters @ # [ ] |. Errors name the field "xt/id".
func ValidateID(id string) error { return checkID("xt/id", id) }

// checkID is ValidateID for a named field.
func checkID(field, id string) error {
	switch {
	case id == "":
		return fieldErr(field, nil, "id is empty")
	case len(id) > MaxIDLen:
		return fieldErr(field, nil, "id is %d bytes, longer than %d", len(id), MaxIDLen)
	case !utf8.ValidString(id):
		return fieldErr(field, ErrInvalidUTF8, "id is not valid UTF-8")
	}
	for _, r := range id {
		if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(idReserved, r) {
			return fieldErr(field, nil, "id %q contains the character %q", id, r)
		}
	}
	return nil
}

// ChatObjectID returns the id of a session's chat object: "chat:{sessionID}".
func ChatObjectID(sessionID string) string { return chatPrefix + sessionID }

// SessionObjectID returns the id of a session's bookkeeping object:
// "session:{sessionID}".
func SessionObjectID(sessionID string) string { return sessionPrefix + sessionID }

// SystemPromptObjectID returns the id of a session's system prompt object:
// "system_prompt:{sessionID}".
func SystemPromptObjectID(sessionID string) string { return systemPromptPrefix + sessionID }

// SessionIDOf splits a per-session object id ("chat:…", "session:…" or
// "system_prompt:…") into its kind and session id. ok is false for any other
// id or an empty session id.
func SessionIDOf(id string) (kind Kind, sessionID string, ok bool) {
	for _, p := range []struct {
		prefix string
		kind   Kind
	}{{chatPrefix, KindChat}, {sessionPrefix, KindSession}, {systemPromptPrefix, KindSystemPrompt}} {
		if rest, found := strings.CutPrefix(id, p.prefix); found && rest != "" {
			return p.kind, rest, true
		}
	}
	return "", "", false
}

// NewUUIDv7 mints a UUIDv7 (RFC 9562) for time t, taking its 74 random bits
// from rand. It reads no clock and keeps no state, so the same t and rand
// bytes give the same id; ids minted in one millisecond are not ordered among
// themselves. t must lie between the Unix epoch and the year 10889.
func NewUUIDv7(t time.Time, rand io.Reader) (string, error) {
	ms := t.UnixMilli()
	if ms < 0 || ms >= 1<<48 {
		return "", fmt.Errorf("objects: time %s is outside the UUIDv7 range", t.UTC().Format(time.RFC3339))
	}
	var u uuid.UUID
	if _, err := io.ReadFull(rand, u[:]); err != nil {
		return "", fmt.Errorf("objects: reading UUIDv7 random bits: %w", err)
	}
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = 0x70 | u[6]&0x0f
	u[8] = 0x80 | u[8]&0x3f
	return u.String(), nil
}

// IsUUIDv7 reports whether s is a UUIDv7 in canonical form: lowercase,
// hyphenated, RFC 9562 variant, version 7.
func IsUUIDv7(s string) bool {
	if len(s) != 36 {
		return false
	}
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s && u.Version() == 7 && u.Variant() == uuid.RFC4122
}
