package tools

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/session"
)

func TestSpillName(t *testing.T) {
	for _, tc := range []struct{ id, name string }{
		{"toolu_01ABCdef", "toolu_01ABCdef.txt"},
		{"call_1|fc_2", "call_1%7Cfc_2.txt"},
		{"../../etc/passwd", "%2E.%2F..%2Fetc%2Fpasswd.txt"},
		{".hidden", "%2Ehidden.txt"},
		{"a b%c", "a%20b%25c.txt"},
		{"é", "%C3%A9.txt"},
	} {
		if got := SpillName(tc.id); got != tc.name {
			t.Errorf("SpillName(%q) = %q, want %q", tc.id, got, tc.name)
		}
		if id, ok := SpillCallID(tc.name); !ok || id != tc.id {
			t.Errorf("SpillCallID(%q) = %q, %v; want %q", tc.name, id, ok, tc.id)
		}
	}
	for _, name := range []string{"x.log", ".txt", "a%2.txt", "a b.txt", "a%41.txt", "a/b.txt"} {
		if id, ok := SpillCallID(name); ok {
			t.Errorf("SpillCallID(%q) = %q: not a spill file's name", name, id)
		}
	}
}

// TestSpillRead (the bare head): a read of the session's spill
// file of a call loads that call's output (whole, or the lines asked
// for), never indexes the file; another session's spill file, or one
// naming no call of the session, is refused; a bash output naming spill
// files indexes none of them.
func TestSpillRead(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{})
		root := filepath.Join(e.dir, "spill")
		mine, theirs := filepath.Join(root, "s1"), filepath.Join(root, "s2")
		e.tools.spill = Spill{Root: root, Dir: mine}
		id := e.uid("toolu_01")
		output := "one\ntwo\nthree\n"
		if _, err := e.tools.Record(e.ctx, Call{ID: id, Tool: "bash", Args: map[string]any{"command": "make"}, Output: &output}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.tools.Deactivate(e.ctx, id); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(mine, SpillName(id))
		for _, p := range []string{file, filepath.Join(theirs, SpillName(id))} {
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(output), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		before := len(e.state().Index)

		r, err := e.tools.Read(e.ctx, file)
		if err != nil || r.ID != id || r.Object == nil || *r.Object.Content != output || !strings.Contains(r.Message, "whole output of "+id) {
			t.Fatalf("reading the spill file: %v %+v", err, r)
		}
		if !e.state().IsActive(id) || len(e.state().Index) != before {
			t.Fatalf("the output is not active again, or the file was indexed: index %d -> %d", before, len(e.state().Index))
		}
		p, err := e.tools.ReadPart(e.ctx, Call{ID: e.uid("part"), Tool: "read"}, file, 2, 1)
		if err != nil || !strings.Contains(p.Message, "lines 2-2 of 3 of the output of "+id) || !strings.HasSuffix(p.Message, "\ntwo\n") || len(p.Files) != 0 {
			t.Fatalf("a part of the spill file: %v %q files %v", err, p.Message, p.Files)
		}

		for _, tc := range []struct {
			path string
			want error
		}{
			{filepath.Join(theirs, SpillName(id)), ErrForeignObject},
			{filepath.Join(mine, SpillName(e.uid("nope"))), ErrNotSpillFile},
			{filepath.Join(mine, "notes.md"), ErrNotSpillFile},
			{filepath.Join(mine, "sub", SpillName(id)), ErrForeignObject},
		} {
			if _, err := e.tools.Read(e.ctx, tc.path); !errors.Is(err, tc.want) {
				t.Errorf("read %s: %v, want %v", tc.path, err, tc.want)
			}
			if _, err := e.tools.ReadPart(e.ctx, Call{ID: e.uid("p-" + filepath.Base(tc.path)), Tool: "read"}, tc.path, 1, 1); !errors.Is(err, tc.want) {
				t.Errorf("read part of %s: %v, want %v", tc.path, err, tc.want)
			}
		}
		// A session whose head is not bare knows the root: it reads no
		// session's spill file either.
		other, err := session.Create(e.ctx, e.st, se.ID("s2"), session.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		managed := New(other, e.ix, Options{Spill: Spill{Root: root}})
		if _, err := managed.Read(e.ctx, file); !errors.Is(err, ErrForeignObject) {
			t.Errorf("a managed session reading a spill file: %v", err)
		}

		n := len(e.state().Index)
		cmd := "cat " + file + " " + filepath.Join(theirs, SpillName(id))
		b, err := e.tools.Bash(e.ctx, Call{ID: e.uid("cat"), Tool: "bash", Output: &output}, e.dir, cmd)
		if err != nil || len(b.Files) != 0 || len(e.state().Index) != n+1 || !slices.Contains(e.state().Index, e.uid("cat")) {
			t.Fatalf("bash naming spill files indexed them: %v files %v index %d -> %d", err, b.Files, n, len(e.state().Index))
		}
	})
}

func TestIntArg(t *testing.T) {
	args := map[string]any{"f": 12.9, "n": json.Number("30"), "i": 7, "i64": int64(8), "s": "5", "nil": nil}
	for key, want := range map[string]int{"f": 12, "n": 30, "i": 7, "i64": 8, "s": 0, "nil": 0, "absent": 0} {
		if got := IntArg(args, key); got != want {
			t.Errorf("IntArg(%s) = %d, want %d", key, got, want)
		}
	}
}

func TestCovers(t *testing.T) {
	text := "a\nb\nc\n"
	for _, c := range []struct {
		offset, limit int
		want          bool
	}{{0, 0, true}, {1, 0, true}, {1, 3, true}, {0, 2000, true}, {1, 2, false}, {2, 0, false}, {4, 1, false}, {-1, 0, false}} {
		if got := Covers(text, c.offset, c.limit); got != c.want {
			t.Errorf("Covers(offset %d, limit %d) = %v, want %v", c.offset, c.limit, got, c.want)
		}
	}
}
