// Package jsontext encodes JSON as text is meant to be read back: without
// HTML escaping (a "<" stays "<", not "\u003c") and without the newline
// json.Encoder ends with. It imports nothing of the project.
package jsontext

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes v as encoding/json does (map keys sorted, RawMessage
// values compacted) but leaves <, > and & as they are, and adds no
// newline.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}
