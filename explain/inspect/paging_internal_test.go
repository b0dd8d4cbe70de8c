package inspect

import (
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
)

func TestReadsBack(t *testing.T) {
	ids := []string{"call_abcdef123456", "call_abcdef999999", "toolu_01XYZ/part"}
	dir := "s%2F1" // the spill directory of session "s/1"
	for _, c := range []struct {
		name     string
		args     map[string]any
		out, how string
	}{
		{"activate", map[string]any{"id": "call_abcdef123456"}, "call_abcdef123456", "activate"},
		{"activate", map[string]any{"id": "call_abcdef12"}, "call_abcdef123456", "activate"},
		{"activate", map[string]any{"id": "call_abcdef"}, "", ""}, // a prefix of two
		{"activate", map[string]any{"id": "call_ab"}, "", ""},     // under 8 characters
		{"Activate", map[string]any{"id": "toolu_01XYZ/part"}, "toolu_01XYZ/part", "activate"},
		{"read", map[string]any{"path": "/c/s%2F1/toolu_01XYZ%2Fpart.txt"}, "toolu_01XYZ/part", "spill_read"},
		{"Read", map[string]any{"file_path": "/c/s%2F1/toolu_01XYZ%2Fpart.txt"}, "toolu_01XYZ/part", "spill_read"},
		{"read", map[string]any{"path": "/c/s%2F1/toolu_01XYZ%2Fpart.txt", "offset": 0, "limit": 0}, "toolu_01XYZ/part", "spill_read"},
		{"read", map[string]any{"path": "/c/s%2F1/toolu_01XYZ%2Fpart.txt", "offset": 3}, "toolu_01XYZ/part", "spill_lines"},
		{"read", map[string]any{"path": "/c/s%2F2/toolu_01XYZ%2Fpart.txt"}, "", ""},       // another session's directory
		{"read", map[string]any{"path": "/c/s%2F1/call_unknown.txt"}, "", ""},             // no such output
		{"read", map[string]any{"path": "/c/s%2F1/toolu_01XYZ/part.txt"}, "", ""},         // not the escaped name
		{"bash", map[string]any{"command": "cat /c/s%2F1/call_abcdef123456.txt"}, "", ""}, // only activate and read count
	} {
		out, how := readsBack(assemble.ToolCall{Name: c.name, Args: c.args}, ids, dir)
		if out != c.out || how != c.how {
			t.Errorf("%s %v: %q %q, want %q %q", c.name, c.args, out, how, c.out, c.how)
		}
	}
}

// TestStreamOfStubs: a collapsed content block ("stub", renderings 1-2 and
// activated outputs) of a call's output counts as that output collapsed; a
// file's does not; the first way an output was shown wins.
func TestStreamOfStubs(t *testing.T) {
	call := func(id string) assemble.ItemDoc {
		return assemble.ItemDoc{K: "assistant", Calls: []assemble.ToolCall{{ID: id, Name: "bash"}}}
	}
	recs := []pagingRecord{
		{n: 1, items: []assemble.ItemDoc{call("c1"), call("c2"), {K: "content", Ref: "file-a@5"}}},
		{n: 2, items: []assemble.ItemDoc{{K: "toolref", Ref: "c2@7", Out: "preview"}}},
		{n: 3, items: []assemble.ItemDoc{{K: "stub", Ref: "c1@6"}, {K: "stub", Ref: "file-a@5"}, {K: "stub", Ref: "c2@7"}}},
	}
	s := streamOf(recs)
	if len(s.shown) != 2 || s.shown["c1"] != "collapsed" || s.shownAt["c1"] != 3 || s.shown["c2"] != "preview" || s.shownAt["c2"] != 2 {
		t.Fatalf("shown %v at %v", s.shown, s.shownAt)
	}
	if p := countPaging("s", s, nil); p.Previews != 1 || p.Collapsed != 1 {
		t.Fatalf("%+v", *p)
	}
}
