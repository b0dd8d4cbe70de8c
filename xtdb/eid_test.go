package xtdb

import (
	"strings"
	"testing"
)

// The expected hashes are what a real XTDB 1.24.5 node logged for a delete
// of each string id (TestTxLogIDsBoundedMemory checks EIDHash against the
// node's tx log for short, long and 40-hex ids).
func TestEIDHash(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"a", "264fab4226a799162e5476161e1747e74814ba83"},
		{strings.Repeat("AB", 20), "5f913e44b42e146f347ab38325b566659486d7f5"},
	} {
		if got := EIDHash(c.id); got != c.want {
			t.Errorf("EIDHash(%q) = %s, want %s", c.id, got, c.want)
		}
	}
}
