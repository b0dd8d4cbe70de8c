package objects

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/internal/canonjson"
)

// maxDepth bounds the nesting of JSON values this package accepts.
const maxDepth = 1000

// Canonical returns the RFC 8785 (JCS) canonical JSON encoding of v.
//
// v must be a JSON value built from nil, bool, string, json.Number, Go
// integer and float types, and slices and string-keyed maps of those
// (map[string]any and []any in the usual case). Strings and keys must be
// valid UTF-8 (ErrInvalidUTF8) and floats finite (ErrNonFinite). Numbers
// are IEEE-754 doubles, printed as RFC 8785 prescribes (1e21 as 1e+21);
// integers and json.Number texts whose value that printing would change
// are rejected (ErrUnsafeNumber): every integer within ±2^53 is accepted,
// larger ones must be carried as strings. Errors are FieldErrors naming the
// JSON path of the bad value.
func Canonical(v any) ([]byte, error) {
	n, err := normalize(v, "", 0)
	if err != nil {
		return nil, err
	}
	return canonicalNormalized(n)
}

// canonicalNormalized canonicalises a value already produced by normalize.
func canonicalNormalized(n any) ([]byte, error) {
	out, err := canonjson.Append(nil, n)
	if err != nil {
		return nil, fieldErr("", ErrInvalid, "canonicalising JSON: %v", err)
	}
	return out, nil
}

// hashNormalized is HashBytes of canonicalNormalized(n), the canonical JSON
// streamed into the hash rather than held whole.
func hashNormalized(n any) (string, error) {
	h := sha256.New()
	if err := canonjson.Write(h, n); err != nil {
		return "", fieldErr("", ErrInvalid, "canonicalising JSON: %v", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// HashBytes returns the SHA-256 of b as 64 lowercase hex digits. It is the
// source_hash of raw source bytes.
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// HashValue returns HashBytes(Canonical(v)).
func HashValue(v any) (string, error) {
	n, err := normalize(v, "", 0)
	if err != nil {
		return "", err
	}
	return hashNormalized(n)
}

// isHash reports whether s has the form of a hash: 64 lowercase hex digits.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// normalize validates v as a JSON value and returns a deep copy made only of
// nil, bool, string, json.Number, int64, float64, map[string]any and []any.
// path names v in errors.
func normalize(v any, path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fieldErr(path, ErrInvalid, "nested deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return x, nil
	case string:
		if !utf8.ValidString(x) {
			return nil, fieldErr(path, ErrInvalidUTF8, "string is not valid UTF-8")
		}
		return x, nil
	case json.Number:
		if err := checkNumber(x); err != nil {
			return nil, fieldErr(path, err, "number %.40q is not a JSON number or would change as a double", string(x))
		}
		return x, nil
	case float64:
		return normFloat(x, path)
	case float32:
		return normFloat(float64(x), path)
	case int:
		return normInt(int64(x), path)
	case int64:
		return normInt(x, path)
	case int32:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case uint, uint64, uint32, uint16, uint8:
		return normUint(reflect.ValueOf(x).Uint(), path)
	case map[string]any:
		if x == nil {
			return nil, nil
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normMember(k, e, path, depth)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		if x == nil {
			return nil, nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalize(e, indexPath(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case []string:
		if x == nil {
			return nil, nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			if !utf8.ValidString(e) {
				return nil, fieldErr(indexPath(path, i), ErrInvalidUTF8, "string is not valid UTF-8")
			}
			out[i] = e
		}
		return out, nil
	}
	return normReflect(v, path, depth)
}

// normMember normalises one object member, checking its key.
func normMember(k string, e any, path string, depth int) (any, error) {
	p := joinPath(path, k)
	if !utf8.ValidString(k) {
		return nil, fieldErr(p, ErrInvalidUTF8, "object key is not valid UTF-8")
	}
	return normalize(e, p, depth+1)
}

// normReflect handles slices and string-keyed maps of other element types.
func normReflect(v any, path string, depth int) (any, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return nil, fieldErr(path, ErrInvalid, "byte slices are not JSON values; use a string")
		}
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			n, err := normalize(rv.Index(i).Interface(), indexPath(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			break
		}
		if rv.IsNil() {
			return nil, nil
		}
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			k := it.Key().String()
			n, err := normMember(k, it.Value().Interface(), path, depth)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	}
	return nil, fieldErr(path, ErrInvalid, "unsupported value type %s", typeName(v))
}

func normFloat(f float64, path string) (any, error) {
	if err := checkFloat(f); err != nil {
		return nil, fieldErr(path, err, "number is NaN or infinite")
	}
	return f, nil
}

func normInt(n int64, path string) (any, error) {
	if err := checkInt64(n); err != nil {
		return nil, fieldErr(path, err, "integer %d is beyond ±2^53 and would change as a double; carry it as a string", n)
	}
	return n, nil
}

func normUint(n uint64, path string) (any, error) {
	if err := checkUint64(n); err != nil {
		return nil, fieldErr(path, err, "integer %d is beyond ±2^53 and would change as a double; carry it as a string", n)
	}
	if n > 1<<63-1 {
		return float64(n), nil
	}
	return int64(n), nil
}

// typeName names the JSON type of v for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number, float64, float32, int, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}
