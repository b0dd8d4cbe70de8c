package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects/conversation"

	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// agentProc is a running agent process (sessionAgent).
type agentProc struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
	dir string
	n   int
}

func startAgent(t *testing.T, storeURL, cwd, sid string) *agentProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), sessionAgentEnv+"="+storeURL, "CTXSTORE_TEST_AGENT_CWD="+cwd,
		"CTXSTORE_TEST_AGENT_SESSION="+sid)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return &agentProc{t: t, cmd: cmd, in: in, out: sc, dir: t.TempDir()}
}

func (p *agentProc) do(c agentCmd) agentReply {
	p.t.Helper()
	b, _ := json.Marshal(c)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		p.t.Fatal(err)
	}
	if !p.out.Scan() {
		p.t.Fatalf("agent ended without answering %s: %v", c.Op, p.out.Err())
	}
	var r agentReply
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
		p.t.Fatal(err)
	}
	if !r.OK {
		p.t.Fatalf("agent %s: %s", c.Op, r.Error)
	}
	return r
}

// context asks for the next call's context and returns its bytes.
func (p *agentProc) context(log []conversation.Message) ([]byte, agentReply) {
	p.t.Helper()
	p.n++
	out := filepath.Join(p.dir, fmt.Sprintf("call-%d.txt", p.n))
	r := p.do(agentCmd{Op: "context", Log: log, Out: out})
	b, err := os.ReadFile(out)
	if err != nil {
		p.t.Fatal(err)
	}
	return b, r
}

func (p *agentProc) quit() {
	p.t.Helper()
	p.do(agentCmd{Op: "quit"})
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("agent exit: %v", err)
	}
}

// sh runs a shell command as another process would.
func sh(t *testing.T, script string) {
	t.Helper()
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// TestSessionEndToEnd is the context manager's whole scenario with real files and real
// processes, on each backend: the agent reads; another process edits a
// file and a new version appears with no tool call; a file is deleted and
// gets a deletion version; the session pauses and resumes in a new
// process with the same context; a file changed while nothing watched is
// reconciled on resume.
func TestSessionEndToEnd(t *testing.T) {
	backends := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return filepath.Join(t.TempDir(), "store.db") },
		"xtdb":   func(t *testing.T) string { return xtdbtest.ForTest(t) },
	}
	for _, name := range []string{"sqlite", "xtdb"} {
		t.Run(name, func(t *testing.T) {
			if name == "xtdb" && testing.Short() {
				t.Skip("-short: no XTDB")
			}
			storeURL := backends[name](t)
			work := t.TempDir()
			a := filepath.Join(work, "a.txt")
			b := filepath.Join(work, "b.txt")
			sh(t, fmt.Sprintf("printf 'alpha one\\n' > %s && printf 'bravo\\n' > %s", a, b))
			sid := fmt.Sprintf("e2e-%s-%d", name, os.Getpid())

			p := startAgent(t, storeURL, work, sid)
			log := []conversation.Message{
				{Role: conversation.RoleUser, Text: "read both files"},
				{Role: conversation.RoleAssistant, ToolCalls: []conversation.ToolCall{{ID: "c1", Name: "read", Args: map[string]any{"path": "a.txt"}}}},
				{Role: conversation.RoleToolResult, ToolCallID: "c1", ToolName: "read", Output: "alpha one\n"},
				{Role: conversation.RoleAssistant, ToolCalls: []conversation.ToolCall{{ID: "c2", Name: "read", Args: map[string]any{"path": "b.txt"}}}},
				{Role: conversation.RoleToolResult, ToolCallID: "c2", ToolName: "read", Output: "bravo\n"},
			}
			c1, _ := p.context(log)
			for _, want := range []string{"alpha one", "bravo"} {
				if !bytes.Contains(c1, []byte(want)) {
					t.Fatalf("call 1 lacks %q", want)
				}
			}

			// Another process edits a.txt: the tracker makes a new version.
			sh(t, fmt.Sprintf("printf 'alpha two\\n' > %s", a))
			p.do(agentCmd{Op: "wait", Path: a, Want: "alpha two"})
			log = append(log, conversation.Message{Role: conversation.RoleAssistant, Text: "Both read."},
				conversation.Message{Role: conversation.RoleUser, Text: "and now?"})
			c2, r2 := p.context(log)
			if r2.Applied != 2 {
				t.Fatalf("call 2 applied %d messages, want 2", r2.Applied)
			}
			if !r2.Rebased && !bytes.HasPrefix(c2, c1) {
				t.Fatal("call 2 does not extend call 1")
			}
			if !bytes.Contains(c2[len(c1):], []byte("alpha two")) || !bytes.Contains(c2, []byte("changed, new version below")) {
				t.Fatalf("the external edit is not in call 2:\n%s", c2[len(c1):])
			}

			// Another process deletes b.txt: a deletion version.
			sh(t, "rm "+b)
			p.do(agentCmd{Op: "wait", Path: b, Want: ""})
			c3, r3 := p.context(log)
			if !r3.Rebased && !bytes.HasPrefix(c3, c2) {
				t.Fatal("call 3 does not extend call 2")
			}
			if !bytes.Contains(c3[len(c2):], []byte("deleted")) {
				t.Fatalf("the deletion is not in call 3:\n%s", c3[len(c2):])
			}

			// Pause; resume in a new process: the same context.
			p.quit()
			q := startAgent(t, storeURL, work, sid)
			c4, r4 := q.context(log)
			if !r4.Resumed || r4.Applied != 0 || r4.N != 4 {
				t.Fatalf("resume: %+v", r4)
			}
			if !bytes.Equal(c4, c3) {
				t.Fatalf("the resumed context differs from the paused one (%d vs %d bytes)", len(c4), len(c3))
			}
			q.quit()

			// Changed while nothing watched: reconciled on resume.
			sh(t, fmt.Sprintf("printf 'alpha three\\n' > %s", a))
			r := startAgent(t, storeURL, work, sid)
			c5, _ := r.context(append(log, conversation.Message{Role: conversation.RoleAssistant, Text: "ok"}))
			if !bytes.Contains(c5[len(c4):], []byte("alpha three")) {
				t.Fatalf("the change made while paused is not in the resumed context:\n%s", c5[len(c4):])
			}
			if !bytes.HasPrefix(c5, c4) && !strings.Contains(string(c5), "collapsed:") {
				t.Fatal("call 5 neither extends call 4 nor rebased")
			}
			r.quit()
		})
	}
}
