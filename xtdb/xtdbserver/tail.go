package xtdbserver

import "sync"

// tailBuffer is an io.Writer that keeps only the last max bytes written; safe for
// concurrent use. It is used to put the end of a tool's or the server's output
// into error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func newTail(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept bytes.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
