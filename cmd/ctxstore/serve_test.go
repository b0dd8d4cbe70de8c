package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeFlagsChecked: a mount mapping or a preview size serve cannot
// use is a usage error, before anything listens.
func TestServeFlagsChecked(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mount", "no-equals"}, "PREFIX=FSID"},
		{[]string{"--mount", "relative/dir=fs1"}, "absolute"},
		{[]string{"--mount", "/srv=", "--addr", "127.0.0.1:0"}, "PREFIX=FSID"},
		{[]string{"--preview-tokens", "0"}, "--preview-tokens 0"},
		{[]string{"--preview-tokens=-2"}, "-1 for never"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--store", db, "serve"}, c.args...), strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.want) || out.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q", c.args, code, errb.String(), out.String())
		}
	}
}
