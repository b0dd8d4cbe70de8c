package httpapi

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/notes"
)

// TestNotesAndMounts: with note roots, a Markdown file
// read through the API is a note whose links resolve to ids the agent can
// activate, with its backlinks; with a mount mapping, a file under the
// prefix belongs to the mapped filesystem.
func TestNotesAndMounts(t *testing.T) {
	vault, host := t.TempDir(), t.TempDir()
	write := func(dir, name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The vault as serve finds it: every note is indexed at the start.
	plan := write(vault, "Plan.md", "---\ntags: [work]\n---\n# Plan\n\nSee [[Idea]].\n")
	idea := write(vault, "Idea.md", "# Idea\n\nBuilds on [[Plan]] and [[Missing]]; then [[Later]].\n")
	write(vault, "Later.md", "# Later\n\nAfter the [[Idea]].\n")
	e := newEnv(t, func(o *Options) {
		n, err := notes.New(notes.Options{Roots: []string{vault}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-test", Mounts: []files.Mount{{Prefix: filepath.ToSlash(host), FilesystemID: "fs-host"}}})
		if err != nil {
			t.Fatal(err)
		}
		o.Notes, o.Resolver = n, res
		// Every directory of the test (the session's cwd, the vault, the
		// mounted host directory) is under the test's temporary root.
		o.Roots = []string{filepath.Dir(vault)}
	})
	other := write(host, "main.go", "package main\n")
	// The session may read its cwd and the mounted directory (the note
	// roots are readable by every session).
	e.ok("PUT", "/v1/sessions/s1", OpenRequest{Cwd: e.dir, Roots: []string{e.dir, host}, SystemPrompt: "You are a test agent.", Harness: "pi"}, nil)

	var rp ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/read", ToolRequest{ToolCallID: "r1", Args: map[string]any{"path": plan}}, &rp)
	if !rp.OK || !strings.HasPrefix(rp.Metadata, "note ") || !strings.Contains(rp.Metadata, "tags=work") {
		t.Fatalf("read Plan.md: %+v", rp)
	}
	var ri ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/read", ToolRequest{ToolCallID: "r2", Args: map[string]any{"path": idea}}, &ri)
	if !ri.OK || !strings.HasPrefix(ri.Metadata, "note ") {
		t.Fatalf("read Idea.md: %+v", ri)
	}
	m := regexp.MustCompile(`\[\[Plan\]\] -> (\S+?);`).FindStringSubmatch(ri.Message)
	if m == nil || !strings.Contains(ri.Message, "[[Missing]] (no such note)") {
		t.Fatalf("Idea's links are not listed with ids: %q", ri.Message)
	}
	if !strings.Contains(ri.Message, "Linked from: ") || strings.Count(ri.Message, "Linked from: ")+strings.Count(ri.Message, " -> ") < 3 {
		t.Errorf("Idea's links to Plan and Later and backlinks from Plan and Later are not listed: %q", ri.Message)
	}
	// The agent follows the link: activate the id it was given.
	e.ok("POST", "/v1/sessions/s1/tools/deactivate", ToolRequest{Args: map[string]any{"id": rp.ID}}, nil)
	var ra ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/activate", ToolRequest{Args: map[string]any{"id": m[1]}}, &ra)
	if !ra.OK || ra.ID != rp.ID || !strings.Contains(ra.Message, "[[Idea]] -> ") {
		t.Fatalf("activating the link's id %s: %+v (Plan is %s)", m[1], ra, rp.ID)
	}

	// A link the agent reads in a note's content, to a note the session
	// never saw: activate follows it (the note is read by its path).
	var rl ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/activate", ToolRequest{ToolCallID: "a2", Args: map[string]any{"id": "[[Later]]"}}, &rl)
	if !rl.OK || !strings.HasPrefix(rl.Metadata, "note ") || !strings.Contains(rl.Message, "Followed [[Later]] from Idea") {
		t.Fatalf("following [[Later]]: %+v", rl)
	}
	var rm ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/activate", ToolRequest{Args: map[string]any{"id": "Missing"}}, &rm)
	if rm.OK {
		t.Fatalf("a dangling link was followed: %+v", rm)
	}

	var ro ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/read", ToolRequest{Args: map[string]any{"path": other}}, &ro)
	var obj ObjectResponse
	e.ok("GET", "/v1/objects/"+ro.ID, nil, &obj)
	src, _ := obj.Doc["source"].(map[string]any)
	if !ro.OK || src["filesystemId"] != "fs-host" {
		t.Fatalf("a file under the mount: %+v source %v", ro, obj.Doc["source"])
	}
}
