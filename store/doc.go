package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/internal/canonjson"
	"github.com/ctxstore/ctxstore/internal/jsonlimit"
)

// DecodeDoc parses one JSON object (numbers kept as json.Number) under the
// store's input rules: valid UTF-8 (the error names the byte offset of a
// bad byte), no key repeated in an object (the error names the key, its
// path and byte offset), a string id, values ValidateDoc accepts, and
// nothing after the object, no lone surrogate escape (\ud800 alone; the
// error names its byte offset).
func DecodeDoc(data []byte) (Doc, error) {
	if err := checkText(data); err != nil {
		return nil, err
	}
	if off := jsonlimit.LoneSurrogate(data); off >= 0 {
		return nil, fmt.Errorf("byte %d: the escape %s is half of a UTF-16 surrogate pair, no Unicode character (encoding/json would turn it into U+FFFD, so two such ids would be one)", off, data[off:off+6])
	}
	doc, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	named := func(err error) error { // the error names the document
		if id, ok := doc[IDKey].(string); ok && id != "" {
			return fmt.Errorf("document %s: %w", quote(id), err)
		}
		return err
	}
	if err := checkDupKeys(data); err != nil {
		return nil, named(err)
	}
	if _, err := DocID(doc); err != nil {
		return nil, err
	}
	if err := ValidateDoc(doc); err != nil {
		return nil, named(err)
	}
	return doc, nil
}

// DecodeStored parses a document a backend wrote itself (canonical JSON it
// validated on the way in): the checks of DecodeDoc that cost a second
// pass (duplicate keys, the input rules) are left out, so that reading
// never refuses what was once stored.
func DecodeStored(data []byte) (Doc, error) {
	doc, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	if _, err := DocID(doc); err != nil {
		return nil, err
	}
	return doc, nil
}

func decodeObject(data []byte) (Doc, error) {
	if json.Valid(data) && utf8.Valid(data) {
		// The common case, decoded in place (parseValid); the decoder
		// below says what is wrong with the rest.
		if doc, ok := parseValid(data).(map[string]any); ok {
			return doc, nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("malformed JSON: data after the document")
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a document must be a JSON object, got %s", jsonType(v))
	}
	return doc, nil
}

// Canonical returns doc in RFC 8785 canonical JSON: the form both backends
// are compared in and the SQLite backend hashes and stores.
func Canonical(doc Doc) ([]byte, error) {
	return canonjson.Append(nil, doc)
}

// CanonicalString is Canonical as a string, built without a copy of the
// whole: a backend that stores the text and hashes it holds it once.
func CanonicalString(doc Doc) (string, error) {
	return canonjson.String(doc)
}

// SameDoc reports whether a and b are the same JSON value (numbers compared
// as numbers, so 1 and 1.0 are equal).
func SameDoc(a, b Doc) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ca, err1 := Canonical(a)
	cb, err2 := Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// Num returns v as a float64 if it is a JSON number (json.Number or a Go
// numeric type).
func Num(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	}
	return 0, false
}
