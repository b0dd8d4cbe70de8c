package objects

import (
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// commonKeys are the document keys every kind models.
var commonKeys = []string{
	"xt/id", "type", "source", "identity_hash",
	"content", "source_hash", "content_hash", "metadata_view_hash", "nickname",
}

// kindKeys are the document keys each kind models besides commonKeys.
var kindKeys = map[Kind][]string{
	KindFile:     {"file_type", "char_count"},
	KindToolcall: {"tool", "args", "args_display", "status", "chat_ref", "file_refs", "provider_id"},
	KindChat:     {"turns", "session_ref", "turn_count", "toolcall_refs"},
	KindNote:     {"title", "tags", "links", "aliases", "frontmatter"},
}

// isModeled reports whether key is modeled for kind k.
func isModeled(k Kind, key string) bool {
	for _, m := range commonKeys {
		if m == key {
			return true
		}
	}
	for _, m := range kindKeys[k] {
		if m == key {
			return true
		}
	}
	return false
}

// FileTypeOf derives a file's file_type from its path: the extension of the
// last element without the dot, lowercased; "" when there is none. A name
// that only starts with a dot (".bashrc") has no extension.
func FileTypeOf(p string) string {
	base := path.Base(p)
	ext := path.Ext(base)
	if ext == "" || ext == base {
		return ""
	}
	return strings.ToLower(ext[1:])
}

// CharCount returns the number of Unicode code points in content, 0 for nil.
func CharCount(content *string) int64 {
	if content == nil {
		return 0
	}
	return int64(utf8.RuneCountInString(*content))
}

// validateKindFields checks the kind-specific fields of p against kind k and
// that the structs of the other kinds are zero.
func validateKindFields(k Kind, p *Payload) error {
	others := []struct {
		kind Kind
		zero bool
	}{
		{KindFile, p.File == FileFields{}},
		{KindToolcall, p.Toolcall.isZero()},
		{KindChat, p.Chat.isZero()},
		{KindNote, p.Note.isZero()},
	}
	for _, o := range others {
		if o.kind != k && !o.zero {
			return fieldErr("", nil, "%s fields set on a %s object", o.kind, k)
		}
	}
	switch k {
	case KindFile:
		if !utf8.ValidString(p.File.FileType) {
			return fieldErr("file_type", ErrInvalidUTF8, "string is not valid UTF-8")
		}
		return checkCount("char_count", p.File.CharCount)
	case KindToolcall:
		return p.Toolcall.validate()
	case KindChat:
		return p.Chat.validate()
	case KindNote:
		return p.Note.validate()
	}
	return nil
}

func (t *ToolcallFields) isZero() bool {
	return t.Tool == "" && t.Args == nil && t.ArgsDisplay == "" && t.Status == "" &&
		t.ChatRef == "" && t.FileRefs == nil && t.ProviderID == ""
}

func (t *ToolcallFields) validate() error {
	if err := checkText("tool", t.Tool); err != nil {
		return err
	}
	if _, err := normalize(t.Args, "args", 0); err != nil {
		return err
	}
	if t.Status != StatusOK && t.Status != StatusFail {
		return fieldErr("status", nil, "must be %q or %q, got %q", StatusOK, StatusFail, t.Status)
	}
	if t.ArgsDisplay != "" && !utf8.ValidString(t.ArgsDisplay) {
		return fieldErr("args_display", ErrInvalidUTF8, "string is not valid UTF-8")
	}
	if t.ChatRef != "" {
		if err := checkID("chat_ref", t.ChatRef); err != nil {
			return err
		}
	}
	if t.ProviderID != "" {
		if err := checkText("provider_id", t.ProviderID); err != nil {
			return err
		}
	}
	return checkIDList("file_refs", t.FileRefs)
}

func (c *ChatFields) isZero() bool {
	return c.Turns == nil && c.SessionRef == "" && c.TurnCount == 0 && c.ToolcallRefs == nil
}

func (c *ChatFields) validate() error {
	if err := checkID("session_ref", c.SessionRef); err != nil {
		return err
	}
	if err := checkCount("turn_count", c.TurnCount); err != nil {
		return err
	}
	for i := range c.Turns {
		if _, err := c.Turns[i].doc(indexPath("turns", i)); err != nil {
			return err
		}
	}
	return checkIDList("toolcall_refs", c.ToolcallRefs)
}

func (n *NoteFields) isZero() bool {
	return n.Title == "" && n.Tags == nil && n.Links == nil && n.Aliases == nil && n.Frontmatter == nil
}

func (n *NoteFields) validate() error {
	if n.Title != "" {
		if err := checkText("title", n.Title); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		field string
		v     []string
	}{{"tags", n.Tags}, {"links", n.Links}, {"aliases", n.Aliases}} {
		for i, s := range l.v {
			if err := checkText(indexPath(l.field, i), s); err != nil {
				return err
			}
		}
	}
	_, err := normalize(n.Frontmatter, "frontmatter", 0)
	return err
}

// checkCount requires 0 <= n <= 2^53.
func checkCount(field string, n int64) error {
	if n < 0 || n > maxSafeInteger {
		return fieldErr(field, nil, "must be an integer between 0 and 2^53, got %d", n)
	}
	return nil
}

// checkIDList requires every element to be a valid id.
func checkIDList(field string, ids []string) error {
	for i, id := range ids {
		if err := checkID(indexPath(field, i), id); err != nil {
			return err
		}
	}
	return nil
}

// validateExtra checks that no extra key shadows a modeled field and that
// every value is a valid JSON value.
func validateExtra(k Kind, extra map[string]any) error {
	keys := make([]string, 0, len(extra))
	for key := range extra {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if isModeled(k, key) {
			return fieldErr(key, nil, "extra field shadows a modeled %s field", k)
		}
		if _, err := normMember(key, extra[key], "", 0); err != nil {
			return err
		}
	}
	return nil
}
