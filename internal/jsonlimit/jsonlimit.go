// Package jsonlimit bounds JSON input before it is decoded: how deeply
// arrays and objects nest (unbounded nesting costs a decoder and the store
// time out of proportion to the input's size).
// It imports nothing of the project (the lowest floor).
package jsonlimit

import (
	"errors"
	"fmt"
)

// MaxDepth is the deepest nesting of arrays and objects any ctxstore input
// accepts: documents, request bodies, version log and bundle lines,
// transcript lines. Real documents nest a few levels; a tool call's
// arguments a dozen at most.
const MaxDepth = 128

// ErrTooDeep is wrapped by Depth's errors.
var ErrTooDeep = errors.New("JSON nested too deeply")

// Depth returns an error wrapping ErrTooDeep, naming the byte offset, if
// the JSON text b nests arrays and objects more than max levels deep. It
// scans bytes only (strings are skipped, escapes respected) and does not
// validate the JSON: the decoder that follows does.
func Depth(b []byte, max int) error {
	depth := 0
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if in {
			switch c {
			case '\\':
				i++
			case '"':
				in = false
			}
			continue
		}
		switch c {
		case '"':
			in = true
		case '[', '{':
			depth++
			if depth > max {
				return fmt.Errorf("%w: more than %d levels of arrays and objects at byte %d", ErrTooDeep, max, i)
			}
		case ']', '}':
			depth--
		}
	}
	return nil
}
