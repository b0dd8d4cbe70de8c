package httpapi

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tools"
)

// TestBareHeadSpill (issue 17): a session opened with bare_head never gets
// the guide or the management tools and its head never changes; each
// output its context shows collapsed or as a preview is whole in its
// spill file, which ctxstore's read loads back (activating the output)
// and which another session cannot read; closing the session removes the
// files, and the first call after it resumes writes them again.
func TestBareHeadSpill(t *testing.T) {
	root := filepath.Join(t.TempDir(), "spill")
	e := newEnv(t, func(o *Options) {
		o.Spill = root
		o.Rebase = assemble.Policy{StaleThreshold: 50, PreviewTokens: 1000}
	})
	var specs []assemble.ToolSpec
	for _, d := range tools.Definitions() {
		specs = append(specs, assemble.ToolSpec{Name: d.Name, Description: d.Description, Parameters: d.Parameters})
	}
	specs = append(specs, assemble.ToolSpec{Name: "bash", Description: "Run a command"})
	open := func(sid string) OpenResponse {
		var r OpenResponse
		e.ok("PUT", "/v1/sessions/"+sid, OpenRequest{Cwd: e.dir, SystemPrompt: "You are a test agent.", Harness: "pi", Tools: specs, BareHead: true}, &r)
		return r
	}
	r := open("s")
	dir := filepath.Join(root, "s")
	if r.Spill != dir || r.SystemPrompt != "You are a test agent." {
		t.Fatalf("open: %+v, want spill %s and the harness's prompt alone", r, dir)
	}
	outputs := map[string]string{}
	var lg piLogBuilder
	var last piAnswer
	context := func() piAnswer {
		t.Helper()
		var c piAnswer
		e.ok("POST", "/v1/sessions/s/context", lg.body(), &c)
		if c.HeadChanged || c.SystemPrompt != "You are a test agent." || !slices.Equal(c.WithheldTools, []string{"activate", "deactivate", "pin", "unpin"}) {
			t.Fatalf("call %d: head changed %v, prompt %q, withheld %v: want the bare head", c.Call, c.HeadChanged, c.SystemPrompt, c.WithheldTools)
		}
		return c
	}
	rebased := false
	for turn := 1; turn <= 12; turn++ {
		lg.user(fmt.Sprintf("Turn %d: build it.", turn))
		rebased = context().Rebased || rebased
		id := fmt.Sprintf("c_%d", turn)
		out := strings.Repeat(fmt.Sprintf("build step %d ok\n", turn), 60)
		if turn == 2 {
			out = strings.Repeat("a long test log line\n", 400) // previewed
		}
		outputs[id] = out
		lg.call(id, "bash", map[string]any{"command": "make"})
		lg.result(id, "bash", out, false)
		last = context()
		rebased = rebased || last.Rebased
		lg.say("Done.")
	}
	if !rebased {
		t.Fatal("no rebase in 12 turns")
	}
	// What the context names by spill file is there, whole.
	named := spillNamed(last.Messages)
	if !slices.Contains(named, "c_2") || len(named) < 3 {
		t.Fatalf("collapsed or previewed outputs %v: want c_2 (a preview) and collapsed ones", named)
	}
	text := texts(last.Messages)
	if n := strings.Count(text, dir+"/<its call id>.txt"); n != 1 {
		t.Errorf("the spill note is in the context %d times, want once", n)
	}
	if strings.Contains(text, "activate(") {
		t.Errorf("a bare head's context names activate: %q", text)
	}
	checkSpill(t, dir, named, outputs)

	// read of a spill file loads the output back.
	lg.user("Show the first build log again.")
	context()
	lg.call("r1", "read", map[string]any{"path": filepath.Join(dir, "c_1.txt")})
	var rd ToolResponse
	e.ok("POST", "/v1/sessions/s/tools/read", ToolRequest{ToolCallID: "r1", Args: map[string]any{"path": filepath.Join(dir, "c_1.txt")}}, &rd)
	if !rd.OK || rd.ID != "c_1" || rd.Content == nil || *rd.Content != outputs["c_1"] {
		t.Fatalf("read of a spill file: %+v", rd)
	}
	lg.result("r1", "read", rd.Message, false)
	c := context()
	if !strings.Contains(texts(c.Messages[len(c.Messages)-2:]), outputs["c_1"]) {
		t.Fatalf("the output read back is not in the next context: %q", texts(c.Messages[len(c.Messages)-2:]))
	}
	var part ToolResponse
	e.ok("POST", "/v1/sessions/s/tools/read", ToolRequest{ToolCallID: "r2", Args: map[string]any{"path": filepath.Join(dir, "c_2.txt"), "offset": 3, "limit": 2}}, &part)
	if !part.OK || part.Content == nil || !strings.HasSuffix(*part.Content, "\na long test log line\na long test log line\n") || !strings.Contains(*part.Content, "lines 3-4 of 400 of the output of c_2") {
		t.Fatalf("a part of a spill file: %+v", part)
	}

	// Another session: its own directory; s's files are refused.
	open("other")
	var foreign ToolResponse
	e.ok("POST", "/v1/sessions/other/tools/read", ToolRequest{Args: map[string]any{"path": filepath.Join(dir, "c_1.txt")}}, &foreign)
	if foreign.OK || !strings.Contains(foreign.Message, "another session") || foreign.Content != nil {
		t.Fatalf("another session reading s's spill file: %+v", foreign)
	}

	// Closing removes the files; the first call after the resume writes
	// them again.
	e.ok("POST", "/v1/sessions/s/close", nil, nil)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the spill directory after close: %v", err)
	}
	if r := open("s"); r.State != "resumed" || r.Spill != dir {
		t.Fatalf("reopen: %+v", r)
	}
	lg.say("Shown.")
	lg.user("Thanks.")
	c = context()
	checkSpill(t, dir, spillNamed(c.Messages), outputs)
}

// texts joins the text of every block of ms.
func texts(ms []PiOutMessage) string {
	var b strings.Builder
	for _, m := range ms {
		for _, bl := range m.Content {
			b.WriteString(bl.Text + "\n")
		}
	}
	return b.String()
}

// spillNamed returns the call ids of the tool results a bare head's
// context shows collapsed or as a preview.
func spillNamed(ms []PiOutMessage) []string {
	var ids []string
	for _, m := range ms {
		if m.Role != "toolResult" || len(m.Content) == 0 {
			continue
		}
		if s := m.Content[0].Text; strings.HasPrefix(s, "[ctxstore] collapsed") || strings.Contains(s, "for the output whole") {
			ids = append(ids, m.ToolCallID)
		}
	}
	return ids
}

// checkSpill checks that each of ids has its output in dir, readable by
// its owner alone.
func checkSpill(t *testing.T, dir string, ids []string, outputs map[string]string) {
	t.Helper()
	if len(ids) == 0 {
		t.Fatal("nothing named by spill file")
	}
	for _, id := range ids {
		p := filepath.Join(dir, tools.SpillName(id))
		b, err := os.ReadFile(p)
		if err != nil || string(b) != outputs[id] {
			t.Fatalf("spill file of %s: %v, %d bytes, want its %d-byte output", id, err, len(b), len(outputs[id]))
		}
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
}
