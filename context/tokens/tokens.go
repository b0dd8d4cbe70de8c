// Package tokens counts tokens offline with a byte-pair-encoding tokenizer,
// for the context assembler (it implements assemble.Tokenizer) and for
// reporting the size of contexts and pools.
//
// The vocabularies are OpenAI's cl100k_base and o200k_base, compiled into
// the Go module github.com/tiktoken-go/tokenizer: nothing is downloaded or
// read from disk at run time, and nothing is kept in this repository.
//
// Claude's tokenizer is not public. For Claude, these counts are an
// approximation: they order contexts correctly and are close in size for
// English prose and code, but not equal to what the provider bills. The
// transcript replay calibrates them against the usage the
// provider reported; budgets should keep a margin.
package tokens

import (
	"fmt"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// The encodings New accepts.
const (
	// O200kBase is the encoding of OpenAI's GPT-4o and later models: the
	// default.
	O200kBase = "o200k_base"
	// Cl100kBase is the encoding of GPT-4 and GPT-3.5.
	Cl100kBase = "cl100k_base"
)

// Tokenizer counts tokens with one BPE encoding. It is safe for concurrent
// use and deterministic: the same text always gives the same count.
type Tokenizer struct {
	name  string
	codec tokenizer.Codec
}

// codecs holds one codec per encoding: building one decodes its vocabulary
// (tens of milliseconds) and codecs are read-only once built.
var codecs sync.Map // encoding name -> func() (tokenizer.Codec, error)

// New returns a tokenizer for encoding (O200kBase or Cl100kBase). The
// first call for an encoding builds its vocabulary; later calls share it.
func New(encoding string) (*Tokenizer, error) {
	var enc tokenizer.Encoding
	switch encoding {
	case O200kBase:
		enc = tokenizer.O200kBase
	case Cl100kBase:
		enc = tokenizer.Cl100kBase
	default:
		return nil, fmt.Errorf("tokens: unknown encoding %q (want %s or %s)", encoding, O200kBase, Cl100kBase)
	}
	get, _ := codecs.LoadOrStore(encoding, sync.OnceValues(func() (tokenizer.Codec, error) { return tokenizer.Get(enc) }))
	c, err := get.(func() (tokenizer.Codec, error))()
	if err != nil {
		return nil, fmt.Errorf("tokens: %s: %w", encoding, err)
	}
	return &Tokenizer{name: encoding, codec: c}, nil
}

// Default returns the o200k_base tokenizer.
func Default() *Tokenizer {
	t, err := New(O200kBase)
	if err != nil {
		panic(err) // the vocabulary is compiled in; this cannot fail
	}
	return t
}

// Name returns the encoding's name.
func (t *Tokenizer) Name() string { return t.name }

// Count returns the number of tokens of s. Special-token text such as
// "<|endoftext|>" is counted as ordinary text (it is text in a prompt),
// and each invalid UTF-8 byte as a U+FFFD replacement character. Should the
// encoder ever fail, Count falls back to ⌈bytes/4⌉.
func (t *Tokenizer) Count(s string) int {
	if s == "" {
		return 0
	}
	n, err := t.codec.Count(s)
	if err != nil {
		return (len(s) + 3) / 4
	}
	return n
}
