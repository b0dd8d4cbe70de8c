package objects

import (
	"encoding/json"
	"math"
	"strconv"
)

// FromDoc reads an object from its flat document form (see Object.Doc). The
// document must carry "xt/id" (a string), "type" (a known kind), "source"
// (a binding or null), "identity_hash", "content" (a string or null),
// "content_hash" and "metadata_view_hash", plus the fields its kind
// requires; members the kind does not model are kept in Payload.Extra. The
// envelope is checked in full (id rules, identity hash recomputed); the
// payload hashes are checked for form only (use VerifyHashes). Errors are
// *FieldErrors naming the field, or a *HashMismatchError for a wrong
// identity hash. The document is not retained.
func FromDoc(doc map[string]any) (*Object, error) {
	if doc == nil {
		return nil, fieldErr("", nil, "document is nil")
	}
	n, err := normalize(doc, "", 0)
	if err != nil {
		return nil, err
	}
	d := &decoder{m: n.(map[string]any)}
	id := d.str("xt/id", true)
	kindName := d.str("type", true)
	if d.err != nil {
		return nil, d.err
	}
	kind, err := ParseKind(kindName)
	if err != nil {
		return nil, err
	}
	srcV, ok := d.take("source")
	if !ok {
		return nil, fieldErr("source", nil, "missing (null for unsourced objects)")
	}
	src, err := ParseSource(srcV)
	if err != nil {
		return nil, err
	}
	env := Envelope{id: id, kind: kind, source: src, identityHash: d.str("identity_hash", true)}
	if d.err != nil {
		return nil, d.err
	}
	if err := env.validate(); err != nil {
		return nil, err
	}
	o := &Object{env: env}
	d.payload(&o.Payload, kind)
	if d.err != nil {
		return nil, d.err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// decoder consumes the members of a normalised document, keeping the first
// error; every read removes the member, so what is left is Extra.
type decoder struct {
	m   map[string]any
	err error
}

// take removes and returns member key.
func (d *decoder) take(key string) (any, bool) {
	v, ok := d.m[key]
	delete(d.m, key)
	return v, ok
}

// fail records the first error.
func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// str reads a string member; absent gives "" (an error when required).
func (d *decoder) str(key string, required bool) string {
	v, ok := d.take(key)
	if !ok {
		if required {
			d.fail(fieldErr(key, nil, "missing"))
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		d.fail(fieldErr(key, nil, "must be a string, got %s", typeName(v)))
	}
	return s
}

// opt reads an optional string member, which must be non-empty when present
// (absence and "" are the same in a Payload).
func (d *decoder) opt(key string) string {
	_, present := d.m[key]
	s := d.str(key, false)
	if present && s == "" && d.err == nil {
		d.fail(fieldErr(key, nil, "must be a non-empty string when present"))
	}
	return s
}

// list reads an array-of-strings member; absent gives nil.
func (d *decoder) list(key string, required bool) []string {
	v, ok := d.take(key)
	if !ok {
		if required {
			d.fail(fieldErr(key, nil, "missing"))
		}
		return nil
	}
	s, err := stringList(v, key)
	if err != nil {
		d.fail(err)
	}
	return s
}

// object reads an object member; absent gives nil.
func (d *decoder) object(key string, required bool) map[string]any {
	v, ok := d.take(key)
	if !ok {
		if required {
			d.fail(fieldErr(key, nil, "missing"))
		}
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(fieldErr(key, nil, "must be an object, got %s", typeName(v)))
	}
	return m
}

// count reads a required non-negative integer member of at most 2^53.
func (d *decoder) count(key string) int64 {
	v, ok := d.take(key)
	if !ok {
		d.fail(fieldErr(key, nil, "missing"))
		return 0
	}
	n, ok := asCount(v)
	if !ok {
		d.fail(fieldErr(key, nil, "must be an integer between 0 and 2^53, got %s %v", typeName(v), v))
	}
	return n
}

// asCount converts a normalised JSON number to an integer in [0, 2^53].
func asCount(v any) (int64, bool) {
	var f float64
	switch x := v.(type) {
	case int64:
		return x, x >= 0 && x <= maxSafeInteger
	case float64:
		f = x
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(x), 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if f != math.Trunc(f) || f < 0 || f > maxSafeInteger {
		return 0, false
	}
	return int64(f), true
}

// payload reads the mutable fields of kind into p; what remains is Extra.
func (d *decoder) payload(p *Payload, kind Kind) {
	cv, ok := d.take("content")
	switch c := cv.(type) {
	case nil:
		if !ok {
			d.fail(fieldErr("content", nil, "missing (null when there is no content)"))
		}
	case string:
		p.Content = &c
	default:
		d.fail(fieldErr("content", nil, "must be a string or null, got %s", typeName(cv)))
	}
	p.ContentHash = d.str("content_hash", true)
	p.MetadataViewHash = d.str("metadata_view_hash", true)
	p.SourceHash = d.opt("source_hash")
	p.Nickname = d.opt("nickname")
	switch kind {
	case KindFile:
		p.File.FileType = d.str("file_type", true)
		p.File.CharCount = d.count("char_count")
	case KindToolcall:
		t := &p.Toolcall
		t.Tool = d.str("tool", true)
		t.Args = d.object("args", true)
		t.ArgsDisplay = d.opt("args_display")
		t.Status = Status(d.str("status", true))
		t.ChatRef = d.opt("chat_ref")
		t.FileRefs = d.list("file_refs", false)
		t.ProviderID = d.opt("provider_id")
		if t.Args == nil && d.err == nil {
			t.Args = map[string]any{}
		}
	case KindChat:
		d.chat(&p.Chat)
	case KindNote:
		n := &p.Note
		n.Title = d.opt("title")
		n.Tags = d.list("tags", false)
		n.Links = d.list("links", false)
		n.Aliases = d.list("aliases", false)
		n.Frontmatter = d.object("frontmatter", false)
	}
	if len(d.m) > 0 {
		p.Extra = d.m
	}
}

// chat reads a chat's fields.
func (d *decoder) chat(c *ChatFields) {
	v, ok := d.take("turns")
	arr, isArr := v.([]any)
	switch {
	case !ok:
		d.fail(fieldErr("turns", nil, "missing"))
	case !isArr:
		d.fail(fieldErr("turns", nil, "must be an array of turns, got %s", typeName(v)))
	default:
		c.Turns = make([]Turn, len(arr))
		for i, e := range arr {
			t, err := turnFromDoc(e, indexPath("turns", i))
			if err != nil {
				d.fail(err)
				break
			}
			c.Turns[i] = t
		}
	}
	c.SessionRef = d.str("session_ref", true)
	c.TurnCount = d.count("turn_count")
	c.ToolcallRefs = d.list("toolcall_refs", true)
}
