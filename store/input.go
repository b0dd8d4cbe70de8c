package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/objects/jsonnum"
)

// Input rules. Every document a store accepts is one that every backend
// stores and gives back exactly, so no write can make data unreadable
// (docs/security.md, "Input rules of the store"):
//
//   - JSON text (DecodeDoc) must be valid UTF-8 (else the error names the
//     byte offset) and must not repeat a key in an object (else the error
//     names the key, its path and byte offset); encoding/json would
//     silently keep the last value or turn the bytes into U+FFFD.
//   - Keys are non-empty UTF-8; strings are UTF-8.
//   - Numbers are held exactly or refused (CheckNumber): a number is
//     accepted only if its RFC 8785 canonical form, which the stores keep,
//     denotes exactly the value written, and a whole number beyond ±2^53
//     is only accepted at 1e21 and above, where the canonical form has an
//     exponent. Integers beyond 2^53 and over-precise decimals are never
//     silently rounded: store them as strings.
//   - Ids starting with ReservedPrefix are written only by the version
//     log and session bundles (WithReservedWrites); Submit refuses any
//     other put, delete or evict of one.

// ValueError is a value a store refuses, with the path of the field at
// fault: "n" for a top-level key, "a.b[2]" inside objects and arrays
// ("" for the value itself).
type ValueError struct {
	Path string
	Msg  string
}

// under returns e with seg (a key, or "[i]") in front of its path.
func (e *ValueError) under(seg string) *ValueError {
	switch {
	case e.Path == "":
		e.Path = seg
	case e.Path[0] == '[':
		e.Path = seg + e.Path
	default:
		e.Path = seg + "." + e.Path
	}
	return e
}

func (e *ValueError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return fmt.Sprintf("field %q: %s", e.Path, e.Msg)
}

// maxSafeInt is the largest integer every JSON consumer holds exactly.
const maxSafeInt = jsonnum.MaxSafeInt

// CheckNumber reports why the JSON number literal s cannot be stored
// exactly, or nil if it can: the store's number rule, defined once in
// objects/jsonnum (so the object model's converters apply the same rule).
// It refuses non-finite values (1e400), integers beyond ±2^53
// (9007199254740993 would be rounded), whole values between 2^53 and 1e21
// however they are written (1.2345678901234567e19: its canonical form is a
// 20-digit integer no JSON reader holds exactly), and literals with more
// precision than a 64-bit float keeps (0.1000000000000000000001 would be
// rounded to 0.1).
func CheckNumber(s string) error { return jsonnum.Check(s) }

// ReservedPrefix starts the ids of the entities ctxstore keeps for itself
// (the version log's cursors, session bundles' records). Only writers that
// ask for it with WithReservedWrites may put, delete or evict them.
const ReservedPrefix = "ctxstore:sync-"

// Reserved reports whether id is reserved (ReservedPrefix).
func Reserved(id string) bool { return strings.HasPrefix(id, ReservedPrefix) }

type reservedKey struct{}

// WithReservedWrites returns a context under which Submit accepts writes
// of reserved ids: for the version log's importer and session bundles,
// which keep their cursors and records there. Nothing a user sends should
// run under it.
func WithReservedWrites(ctx context.Context) context.Context {
	return context.WithValue(ctx, reservedKey{}, true)
}

// CheckReserved refuses (ErrInvalid) a put, delete or evict of a reserved
// id unless ctx comes from WithReservedWrites: a user's write of a sync
// cursor would make later imports skip what they should apply. Every
// backend's Submit calls it; a match of a reserved id is a read and is
// allowed.
func CheckReserved(ctx context.Context, ops []Op) error {
	if ok, _ := ctx.Value(reservedKey{}).(bool); ok {
		return nil
	}
	for i, op := range ops {
		id := op.ID
		if id == "" && op.Doc != nil {
			id, _ = op.Doc[IDKey].(string)
		}
		if op.Kind != OpMatch && Reserved(id) {
			return &Error{Op: "submit", Kind: ErrInvalid, OpIndex: i + 1, ID: id, Field: "id",
				Msg: fmt.Sprintf("%s: ids starting with %q are reserved for ctxstore's version log and bundles", op.Kind, ReservedPrefix)}
		}
	}
	return nil
}

// checkText refuses invalid UTF-8, naming the byte offset of the first
// bad byte.
func checkText(data []byte) error {
	if utf8.Valid(data) {
		return nil
	}
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return fmt.Errorf("invalid UTF-8 at byte %d (0x%02x)", i, data[i])
		}
		i += n
	}
	return nil
}

// CheckDuplicateKeys refuses valid JSON text in which an object repeats a
// key (encoding/json would silently keep the last), naming the key, its
// path and its byte offset. DecodeDoc applies it to documents; the HTTP
// service to every request body.
func CheckDuplicateKeys(data []byte) error { return checkDupKeys(data) }

// checkDupKeys scans valid JSON text and refuses an object that repeats a
// key, naming the key, its path and its byte offset.
func checkDupKeys(data []byte) error {
	sc := dupScanner{data: data}
	_, err := sc.value(0)
	return err
}

// dupScanner walks valid JSON text; path holds the keys and indexes
// (-1 - index) of the values it is inside, rendered only for an error.
type dupScanner struct {
	data []byte
	keys []string
	idxs []int
}

func (sc *dupScanner) path() string {
	var b strings.Builder
	for i, k := range sc.keys {
		if n := sc.idxs[i]; n >= 0 {
			fmt.Fprintf(&b, "[%d]", n)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	return b.String()
}

func (sc *dupScanner) push(key string, idx int) {
	sc.keys, sc.idxs = append(sc.keys, key), append(sc.idxs, idx)
}

func (sc *dupScanner) pop() {
	sc.keys, sc.idxs = sc.keys[:len(sc.keys)-1], sc.idxs[:len(sc.idxs)-1]
}

func (sc *dupScanner) ws(i int) int {
	for i < len(sc.data) {
		switch sc.data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// str returns the end (after the closing quote) of the string at i and
// whether it holds an escape.
func (sc *dupScanner) str(i int) (int, bool) {
	esc := false
	for j := i + 1; j < len(sc.data); j++ {
		switch sc.data[j] {
		case '\\':
			esc = true
			j++
		case '"':
			return j + 1, esc
		}
	}
	return len(sc.data), esc
}

func (sc *dupScanner) value(i int) (int, error) {
	i = sc.ws(i)
	if i >= len(sc.data) {
		return i, nil
	}
	switch sc.data[i] {
	case '{':
		i = sc.ws(i + 1)
		if i < len(sc.data) && sc.data[i] == '}' {
			return i + 1, nil
		}
		seen := map[string]struct{}{}
		for i < len(sc.data) {
			at := i
			end, esc := sc.str(i)
			key := string(sc.data[i+1 : max(i+1, end-1)])
			if esc {
				if err := json.Unmarshal(sc.data[i:end], &key); err != nil {
					return end, err
				}
			}
			sc.push(key, -1)
			if _, dup := seen[key]; dup {
				return end, &ValueError{Path: sc.path(), Msg: fmt.Sprintf("duplicate key %q at byte %d (JSON readers would keep only one of its values)", key, at)}
			}
			seen[key] = struct{}{}
			i = sc.ws(end) + 1 // past ':'
			var err error
			if i, err = sc.value(i); err != nil {
				return i, err
			}
			sc.pop()
			i = sc.ws(i)
			if i < len(sc.data) && sc.data[i] == ',' {
				i = sc.ws(i + 1)
				continue
			}
			return i + 1, nil // past '}'
		}
		return i, nil
	case '[':
		i = sc.ws(i + 1)
		if i < len(sc.data) && sc.data[i] == ']' {
			return i + 1, nil
		}
		for n := 0; i < len(sc.data); n++ {
			sc.push("", n)
			var err error
			if i, err = sc.value(i); err != nil {
				return i, err
			}
			sc.pop()
			i = sc.ws(i)
			if i < len(sc.data) && sc.data[i] == ',' {
				i++
				continue
			}
			return i + 1, nil // past ']'
		}
		return i, nil
	case '"':
		end, _ := sc.str(i)
		return end, nil
	}
	for i < len(sc.data) {
		switch sc.data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i, nil
		}
		i++
	}
	return i, nil
}
