// Package canonjson writes the RFC 8785 (JCS) canonical JSON of a Go JSON
// value (map[string]any, []any, string, json.Number, bool, nil and Go
// numbers) directly, in one pass and without an intermediate encoding: the
// same bytes as encoding/json's Marshal followed by
// github.com/gowebpki/jcs's Transform, at the cost of the output alone.
// Hashing a document streams its canonical form into the hash (Write), so
// a large document is never held twice. It imports nothing of the project.
package canonjson

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// maxDepth is jcs.Transform's nesting limit, kept so that both refuse the
// same values.
const maxDepth = 10000

// chunk is how much Write buffers before it writes to its writer.
const chunk = 32 << 10

// Append appends the canonical JSON of v to dst.
func Append(dst []byte, v any) ([]byte, error) {
	e := encoder{buf: dst}
	if err := e.value(v, 0); err != nil {
		return dst, err
	}
	return e.buf, nil
}

// Write writes the canonical JSON of v to w in chunks of at most 32 KiB
// (what it holds at once besides v).
func Write(w io.Writer, v any) error {
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	e := encoder{buf: (*bp)[:0], w: w}
	err := e.value(v, 0)
	if err == nil {
		err = e.flush()
	}
	if cap(e.buf) <= 2*chunk {
		*bp = e.buf[:0]
	}
	return err
}

// buffers are Write's chunk buffers: hashing many small values (identity
// hashes) allocates none.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, chunk+4<<10); return &b }}

// String returns the canonical JSON of v as a string. It measures the
// text first (a pass that writes nothing) so that the string is allocated
// once, at its size, and never copied.
func String(v any) (string, error) {
	var n counter
	if err := Write(&n, v); err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(int(n))
	if err := Write(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// counter counts the bytes written to it.
type counter int64

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}

type encoder struct {
	buf []byte
	w   io.Writer
	err error
}

func (e *encoder) flush() error {
	if e.w != nil && len(e.buf) > 0 && e.err == nil {
		_, e.err = e.w.Write(e.buf)
		e.buf = e.buf[:0]
	}
	return e.err
}

func (e *encoder) maybeFlush() error {
	if e.w != nil && len(e.buf) >= chunk {
		return e.flush()
	}
	return e.err
}

func (e *encoder) value(v any, depth int) error {
	if err := e.maybeFlush(); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case string:
		e.str(x)
	case json.Number:
		return e.number(x)
	case float64:
		return e.float(x)
	case int:
		return e.float(float64(x))
	case int64:
		return e.float(float64(x))
	case int32:
		return e.float(float64(x))
	case uint64:
		return e.float(float64(x))
	case map[string]any:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		if depth+1 > maxDepth {
			return fmt.Errorf("canonical JSON: nested deeper than %d levels", maxDepth)
		}
		return e.object(x, depth+1)
	case []any:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		if depth+1 > maxDepth {
			return fmt.Errorf("canonical JSON: nested deeper than %d levels", maxDepth)
		}
		e.buf = append(e.buf, '[')
		for i, el := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(el, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	default:
		// Any other type (float32, typed slices and maps, structs,
		// json.RawMessage): as encoding/json and jcs make it. Such values
		// are small where ctxstore has them.
		raw, err := json.Marshal(x)
		if err != nil {
			return err
		}
		c, err := jcs.Transform(raw)
		if err != nil {
			return err
		}
		e.buf = append(e.buf, c...)
	}
	return nil
}

// member is one key of an object with its canonical text.
type member struct {
	key string // the key as written (invalid UTF-8 replaced)
	val any
}

func (e *encoder) object(m map[string]any, depth int) error {
	ms := make([]member, 0, len(m))
	for k, v := range m {
		if !utf8.ValidString(k) {
			k = replaceInvalid(k)
		}
		ms = append(ms, member{k, v})
	}
	slices.SortFunc(ms, func(a, b member) int { return compareUTF16(a.key, b.key) })
	e.buf = append(e.buf, '{')
	for i, mb := range ms {
		if i > 0 {
			if ms[i-1].key == mb.key {
				return fmt.Errorf("canonical JSON: key %q twice (after invalid UTF-8 became U+FFFD)", mb.key)
			}
			e.buf = append(e.buf, ',')
		}
		e.str(mb.key)
		e.buf = append(e.buf, ':')
		if err := e.value(mb.val, depth); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// replaceInvalid returns s as encoding/json reads it: each byte of
// invalid UTF-8 a U+FFFD of its own.
func replaceInvalid(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

const hex = "0123456789abcdef"

// str appends s as a canonical JSON string: encoding/json's reading of s
// (each byte of invalid UTF-8 a U+FFFD) with only ", \ and the control
// characters escaped, those with a short form (\b \t \n \f \r) in it.
func (e *encoder) str(s string) {
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if e.w != nil && i-start >= chunk {
			// A long run without escapes goes out in pieces.
			e.buf = append(e.buf, s[start:i]...)
			start = i
			if e.flush() != nil {
				return
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			e.buf = append(e.buf, s[start:i]...)
			switch c {
			case '"', '\\':
				e.buf = append(e.buf, '\\', c)
			case '\b':
				e.buf = append(e.buf, '\\', 'b')
			case '\f':
				e.buf = append(e.buf, '\\', 'f')
			case '\n':
				e.buf = append(e.buf, '\\', 'n')
			case '\r':
				e.buf = append(e.buf, '\\', 'r')
			case '\t':
				e.buf = append(e.buf, '\\', 't')
			default:
				e.buf = append(e.buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			if e.w != nil && len(e.buf) >= chunk && e.flush() != nil {
				return
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			e.buf = append(e.buf, s[start:i]...)
			e.buf = append(e.buf, "\uFFFD"...)
			start = i + 1
		}
		i += n
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
}

func (e *encoder) number(n json.Number) error {
	s := string(n)
	if s == "" {
		s = "0" // as encoding/json writes it
	}
	if !validNumber(s) {
		return fmt.Errorf("json: invalid number literal %q", s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("canonical JSON: number %.40q out of range", s)
	}
	return e.float(f)
}

func (e *encoder) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return err
	}
	e.buf = append(e.buf, s...)
	return nil
}

// validNumber reports whether s is a JSON number (RFC 8259).
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

// compareUTF16 orders a and b by their UTF-16 code units, as RFC 8785
// sorts keys. UTF-8 byte order agrees with code point order, which differs
// from UTF-16 order only between a character above U+FFFF (a surrogate
// pair, 0xD800-0xDBFF first) and one in U+E000-U+FFFF.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i-- // back to the start of the differing character
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	return cmpInt(unit(ra), unit(rb))
}

// unit orders r by UTF-16 code units against any other character that
// differs from it: a character above U+FFFF by its high surrogate
// (0xD800-0xDBFF) with its code point below, so two such characters keep
// their code point order and one sorts against a BMP character by the
// surrogate alone.
func unit(r rune) int64 {
	if r > 0xFFFF {
		return 0xD800<<21 + int64(r-0x10000)
	}
	return int64(r) << 21
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
