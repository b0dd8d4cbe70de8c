package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gowebpki/jcs"
)

// DecodeDoc parses one JSON object (numbers kept as json.Number), checks it
// has a string id and valid values, and rejects trailing data.
func DecodeDoc(data []byte) (Doc, error) {
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
	if _, err := DocID(doc); err != nil {
		return nil, err
	}
	if err := ValidateDoc(doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// Canonical returns doc in RFC 8785 canonical JSON: the form both backends
// are compared in and the SQLite backend hashes and stores.
func Canonical(doc Doc) ([]byte, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(raw)
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
