package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxBatch bounds the messages of one JSON-RPC batch (a JSON array of
// requests), over HTTP and stdio. The SDK runs every message of a batch
// and answers them together, so a batch of ten thousand cheap calls is
// tens of seconds of work for one request; MCP hosts send one message at a
// time (protocol versions from 2025-06-18 have no batches at all). A
// larger batch is answered with one JSON-RPC error (invalid request) and
// none of it runs.
const MaxBatch = 100

// batchLen returns how many messages b holds when it is a JSON array, and
// -1 when it is not one (a single message, or not JSON: the SDK answers
// those). It counts without decoding the messages.
func batchLen(b []byte) int {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != '[' {
		return -1
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return -1
	}
	n := 0
	for dec.More() {
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return -1
		}
		n++
	}
	return n
}

// batchError is the JSON-RPC error answering a batch of n messages.
func batchError(n int) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error": map[string]any{
			"code":    -32600,
			"message": fmt.Sprintf("a batch of %d messages: at most %d are served in one batch", n, MaxBatch),
		},
	})
	return b
}

// capBatches answers a POST whose body is a batch of more than MaxBatch
// messages with a JSON-RPC error (HTTP 400) and passes every other
// request to next. It reads the body within the SDK's own bound.
func capBatches(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, sdk.DefaultMaxRequestBodyBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "failed to read body", http.StatusBadRequest)
			return
		}
		if n := batchLen(body); n > MaxBatch {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(batchError(n))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// lockedWriter serializes writes: the SDK's answers and capBatchesIO's
// errors share one stream, one whole message per Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// capBatchesIO returns a reader of the messages of r (stdio: JSON values,
// one after the other) without the batches of more than MaxBatch messages,
// each of which it answers on w with a JSON-RPC error. Reading stops at
// the first value that is not JSON, as the SDK's own reading would; a
// value is bounded by sdk.DefaultMaxLineLength, as the SDK bounds it.
func capBatchesIO(r io.Reader, w io.Writer) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		dec := json.NewDecoder(bufio.NewReader(&frameLimit{r: r, limit: sdk.DefaultMaxLineLength}))
		for {
			var m json.RawMessage
			if err := dec.Decode(&m); err != nil {
				if err == io.EOF {
					pw.Close()
				} else {
					pw.CloseWithError(err)
				}
				return
			}
			if n := batchLen(m); n > MaxBatch {
				if _, err := w.Write(append(batchError(n), '\n')); err != nil {
					pw.CloseWithError(err)
					return
				}
				continue
			}
			if _, err := pw.Write(append(m, '\n')); err != nil {
				return // the SDK stopped reading
			}
		}
	}()
	return pr
}

// frameLimit fails a read once more than limit bytes have passed without
// a newline: a value on stdio that never ends is not buffered whole.
type frameLimit struct {
	r     io.Reader
	limit int
	run   int
}

func (f *frameLimit) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	for _, c := range p[:n] {
		if c == '\n' {
			f.run = 0
		} else if f.run++; f.run > f.limit {
			return 0, fmt.Errorf("a message of more than %d bytes without a newline", f.limit)
		}
	}
	return n, err
}
