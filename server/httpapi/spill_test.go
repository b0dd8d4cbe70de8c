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

// TestBareHeadSpill: a session opened with bare_head never gets
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

// TestBareHeadSpillHarnessRead: a harness whose model reads spill files
// with its own read tool (OpenClaw's, docs/openclaw.md), which the service
// sees only in the log: the whole read of a previewed output activates it
// (the next context shows it whole, the read as a reference), a read of
// lines of it (offset, limit) is recorded as that part of the output,
// shown as the harness sent it until a rebase, the preview staying; a read of another session's spill file is kept as the harness
// showed it. No file under the spill root is ever indexed as a file.
func TestBareHeadSpillHarnessRead(t *testing.T) {
	root := filepath.Join(t.TempDir(), "spill")
	e := newEnv(t, func(o *Options) { o.Spill = root })
	for _, sid := range []string{"oc", "other"} {
		var r OpenResponse
		e.ok("PUT", "/v1/sessions/"+sid, OpenRequest{Cwd: e.dir, Harness: "openclaw", BareHead: true}, &r)
		if r.Spill != filepath.Join(root, sid) || r.SystemPrompt != "" {
			t.Fatalf("open %s: %+v, want its spill directory and no prompt", sid, r)
		}
	}
	var b strings.Builder
	for i := 1; i <= 1500; i++ {
		fmt.Fprintf(&b, "build-output-line %d\n", i)
	}
	out := b.String()
	var lg piLogBuilder
	context := func(sid string, lg *piLogBuilder) piAnswer {
		t.Helper()
		var c piAnswer
		e.ok("POST", "/v1/sessions/"+sid+"/context", lg.body(), &c)
		if c.SystemPrompt != "" || len(c.Ingested.Problems) > 0 && sid == "oc" {
			t.Fatalf("call %d: prompt %q, problems %v", c.Call, c.SystemPrompt, c.Ingested.Problems)
		}
		return c
	}
	result := func(c piAnswer, id string) string {
		for _, m := range c.Messages {
			if m.Role == "toolResult" && m.ToolCallID == id {
				return texts([]PiOutMessage{m})
			}
		}
		t.Fatalf("call %d: no result of %s", c.Call, id)
		return ""
	}
	// Turn 1's output reaches the service with turn 2 (OpenClaw's fence).
	lg.user("Build.")
	lg.call("c_1", "exec", map[string]any{"command": "make"})
	lg.result("c_1", "exec", out, false)
	lg.say("Built.")
	lg.user("Two lines of the log.")
	c := context("oc", &lg)
	spill := filepath.Join(root, "oc", "c_1.txt")
	if r := result(c, "c_1"); !strings.Contains(r, "read "+spill+" for the output whole") || strings.Contains(r, "build-output-line 700\n") {
		t.Fatalf("c_1 is not a preview naming %s: %.500q", spill, r)
	}
	checkSpill(t, filepath.Join(root, "oc"), []string{"c_1"}, map[string]string{"c_1": out})

	lg.call("r_part", "read", map[string]any{"path": spill, "offset": 1000, "limit": 2})
	lg.result("r_part", "read", "build-output-line 1000\nbuild-output-line 1001\n\n[499 more lines in file. Use offset=1002 to continue.]", false)
	lg.say("Read.")
	lg.user("All of it.")
	c = context("oc", &lg)
	// Recorded as those lines of c_1's output; shown as OpenClaw sent it
	// until a rebase (docs/openclaw.md, "Byte-stable turns").
	var part ObjectResponse
	e.ok("GET", "/v1/objects/r_part", nil, &part)
	if r := fmt.Sprint(part.Doc["content"]); !strings.Contains(r, "lines 1000-1001 of 1500 of the output of c_1") || !strings.Contains(r, "build-output-line 1000\nbuild-output-line 1001\n") {
		t.Errorf("the part read is recorded as %q, want lines 1000-1001 of c_1's output", r)
	}
	if r := result(c, "r_part"); r != "build-output-line 1000\nbuild-output-line 1001\n\n[499 more lines in file. Use offset=1002 to continue.]\n" { // one block
		t.Errorf("the part read is shown as %q, want it as OpenClaw sent it", r)
	}
	if strings.Contains(texts(c.Messages), "build-output-line 700\n") {
		t.Errorf("after reading two lines, c_1's output is whole in the context")
	}

	lg.call("r_whole", "read", map[string]any{"path": spill})
	lg.result("r_whole", "read", out, false)
	lg.say("Read.")
	lg.user("Thanks.")
	c = context("oc", &lg)
	if r := result(c, "r_whole"); strings.Contains(r, "build-output-line 700\n") {
		t.Errorf("the whole read's result is the output again, want a reference: %.300q", r)
	}
	if n := strings.Count(texts(c.Messages), out); n != 1 {
		t.Errorf("after the whole read, c_1's output is whole in the context %d times, want once", n)
	}

	// Another session's model reads oc's file with its own read: kept as
	// the harness showed it (the service cannot unread it), never indexed.
	var og piLogBuilder
	og.user("Peek.")
	og.call("p_1", "read", map[string]any{"path": spill})
	og.result("p_1", "read", out, false)
	og.say("Peeked.")
	og.user("Done?")
	c = context("other", &og)
	if len(c.Ingested.Problems) != 1 || !strings.Contains(c.Ingested.Problems[0], "another session") {
		t.Errorf("other's read of oc's spill file: problems %v, want the refusal", c.Ingested.Problems)
	}
	for _, sid := range []string{"oc", "other"} {
		var info SessionInfo
		e.ok("GET", "/v1/sessions/"+sid, nil, &info)
		for _, id := range slices.Concat(info.Index, info.Pool, info.Active) {
			var o ObjectResponse
			e.ok("GET", "/v1/objects/"+id, nil, &o)
			if src, _ := o.Doc["source"].(map[string]any); src != nil && strings.HasPrefix(fmt.Sprint(src["path"]), root) {
				t.Errorf("%s: object %s is the file %v, under the spill root", sid, id, src["path"])
			}
		}
	}
}
