package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ctxstore/ctxstore/internal/jsonlimit"
)

// object is a JSON object whose members keep their order and their values'
// bytes: editing one member of a settings file leaves every other member as
// the user wrote it (only the indentation is normalized).
type object []member

type member struct {
	key string
	val json.RawMessage
}

// parseObject reads b (empty or whitespace: an empty object) as one JSON
// object. Errors name what (a file) and the line.
func parseObject(b []byte, what string) (object, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return object{}, nil
	}
	if err := jsonlimit.Depth(b, jsonlimit.MaxDepth); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var syn *json.SyntaxError
	if err := json.Unmarshal(b, new(any)); errors.As(err, &syn) {
		return nil, fmt.Errorf("%s: line %d: %v", what, lineAt(b, syn.Offset), err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	bad := func(err error) (object, error) {
		return nil, fmt.Errorf("%s: line %d: %v", what, lineAt(b, dec.InputOffset()), err)
	}
	tok, err := dec.Token()
	if err != nil {
		return bad(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return bad(fmt.Errorf("want a JSON object, found %v", tok))
	}
	var o object
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return bad(fmt.Errorf("field %q: %v", key, err))
		}
		if _, dup := o.get(key); dup {
			return bad(fmt.Errorf("field %q appears twice", key))
		}
		o = append(o, member{key, val})
	}
	if _, err := dec.Token(); err != nil {
		return bad(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad(errors.New("text after the JSON object"))
	}
	return o, nil
}

func lineAt(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return 1 + bytes.Count(b[:off], []byte("\n"))
}

func (o object) get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// set replaces key's value in place, or appends the member.
func (o object) set(key string, val json.RawMessage) object {
	for i, m := range o {
		if m.key == key {
			o[i].val = val
			return o
		}
	}
	return append(o, member{key, val})
}

func (o object) del(key string) object {
	out := o[:0]
	for _, m := range o {
		if m.key != key {
			out = append(out, m)
		}
	}
	return out
}

// raw encodes o compactly, members in order.
func (o object) raw() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(encode(m.key))
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// file is o as a settings file: indented by two spaces (as Claude Code
// writes its own), ending in a newline.
func (o object) file() []byte {
	var compact, out bytes.Buffer
	if err := json.Compact(&compact, o.raw()); err != nil {
		panic(err) // every value came from a decoder or from encode
	}
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		panic(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// encode is json.Marshal without HTML escaping (a command's && and > stay
// readable in the file).
func encode(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// array decodes raw as a JSON array of raw values; what names it in errors.
func array(raw json.RawMessage, what string) ([]json.RawMessage, error) {
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("%s: want an array: %v", what, err)
	}
	return a, nil
}

// subObject decodes raw as an ordered object; what names it in errors.
func subObject(raw json.RawMessage, what string) (object, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%s: want an object, found %s", what, abbrev(t))
	}
	return parseObject(raw, what)
}

func abbrev(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
