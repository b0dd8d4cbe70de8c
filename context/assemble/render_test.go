package assemble

import (
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects"
)

// TestRenderings fixes what each rendering version renders for a tool
// result, a collapsed output and a note, and which stream rules it has: a
// session keeps its version, so these never change for a version that
// exists.
func TestRenderings(t *testing.T) {
	out := "hello"
	o, err := objects.NewToolcall("toolu_1", objects.ToolcallFields{Tool: "bash", Args: map[string]any{"command": "ls"}, Status: objects.StatusOK}, &out)
	if err != nil {
		t.Fatal(err)
	}
	type rules struct{ live, paths, drops, silent bool }
	withPaths := Paths{Root: "/r"}
	x := "x"
	file, err := objects.NewFile(objects.FilesystemSource{FilesystemID: "fs", Path: "/r/a.go"}, &x, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v      int
		result string // a prefix of the tool result's line
		stub   string
		note   string
		rules  rules
	}{
		{1, "toolcall_ref id=toolu_1 tool=bash", "collapsed: toolcall_ref id=toolu_1 tool=bash", "[context] x", rules{}},
		{2, "status=ok output_chars=5", "collapsed: output of toolu_1, 5 chars", "[context] x", rules{}},
		{3, "status=ok output_chars=5 tool=bash", "[ctxstore] collapsed: output of toolu_1, 5 chars", "[ctxstore] x", rules{live: true}},
		{4, "status=ok output_chars=5 tool=bash", "[ctxstore] collapsed: output of toolu_1, 5 chars", "[ctxstore] x", rules{live: true, paths: true, drops: true}},
		{5, "status=ok output_chars=5 tool=bash", "[ctxstore] collapsed: output of toolu_1, 5 chars", "[ctxstore] x", rules{live: true, paths: true, drops: true, silent: true}},
	} {
		sty, err := newStyle(LayoutStream, tc.v, objects.MetadataVersion, Paths{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		text := func(k ItemKind) string {
			it := &item{kind: k, ref: objects.StaticRef(o, 7), obj: o, style: sty}
			it.render()
			return it.f.blocks[0].Text
		}
		if got := text(kToolRef); !strings.HasPrefix(got, tc.result) {
			t.Errorf("version %d: tool result %q, want it to start %q", tc.v, got, tc.result)
		}
		if got := text(kStub); !strings.HasPrefix(got, tc.stub) {
			t.Errorf("version %d: collapsed output %q, want it to start %q", tc.v, got, tc.stub)
		}
		if got := sty.r.note("[context] x"); got != tc.note {
			t.Errorf("version %d: note %q, want %q", tc.v, got, tc.note)
		}
		r := sty.rules
		stale := &item{kind: kContent, ref: objects.StaticRef(file, 3), obj: file, stale: true}
		got := rules{live: r.inlineOutputs() && r.patches() && r.namesWrites() && r.waitsForResult(),
			paths: r.pathView(withPaths) != nil, drops: r.rebaseDrops(sty.r, stale, map[string]bool{file.ID(): true}, nil),
			silent: r.silentOwnEdit("/spill")}
		if got != tc.rules || sty.r.version != tc.v {
			t.Errorf("version %d: rules %+v (version %d), want %+v", tc.v, got, sty.r.version, tc.rules)
		}
		if r.silentOwnEdit("") || r.pathView(Paths{}) != nil {
			t.Errorf("version %d: silent edits without a spill directory, or paths shown without Paths", tc.v)
		}
		// The literal layout keeps no stream rules but the version's notes.
		lit, err := newStyle(LayoutLiteral, tc.v, objects.MetadataVersion, Paths{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if lr := lit.rules; lr.inlineOutputs() || lr.patches() || lr.namesWrites() || lr.waitsForResult() ||
			lr.deactivated(stale, true) != r.deactivated(stale, true) {
			t.Errorf("version %d: literal layout rules differ", tc.v)
		}
	}
	for _, v := range []int{0, newestRender + 1} {
		if _, err := newStyle(LayoutStream, v, objects.MetadataVersion, Paths{}, nil); err == nil {
			t.Errorf("rendering version %d accepted", v)
		}
	}
}
