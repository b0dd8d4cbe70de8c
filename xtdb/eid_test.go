package xtdb

import (
	"strings"
	"testing"
)

// The expected hashes are what a real XTDB 1.24.5 node answered as the
// entity-tx id of each string id (see TestEIDHashAgainstServer for the live
// check).
func TestEIDHash(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"a", "264fab4226a799162e5476161e1747e74814ba83"},
		{strings.Repeat("A", 40), strings.Repeat("a", 40)},
	} {
		if got := EIDHash(c.id); got != c.want {
			t.Errorf("EIDHash(%q) = %s, want %s", c.id, got, c.want)
		}
	}
}
