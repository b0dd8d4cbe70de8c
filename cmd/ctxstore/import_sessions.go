package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/harness/sweagent"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// sessionImportFlags are import's options for agent sessions.
type sessionImportFlags struct {
	Principal string `name:"principal" env:"CTXSTORE_PRINCIPAL" placeholder:"NAME" help:"Sessions: who the imported commits are by (puts them on the principal's timeline for commit resolve; default none)."`
	Machine   string `name:"machine" placeholder:"NAME" help:"Sessions: the machine the sessions ran on (default: the host name)."`
}

// importKind decides what import reads (docs/import.md "One command, two
// imports"): --as when given ("sessions" detects each file's harness);
// stdin is a version log; a folder, or a .traj file, is sessions; a file
// is sessions when it looks like a SWE-agent trajectory or a harness's
// database (opencode's SQLite), or its first line
// is a record of a Claude Code transcript, a Pi session file or a Codex
// rollout; anything
// else (a version log, gzip, an empty or unreadable file) is read as a
// version log, as import always did.
func importKind(path, as string) (string, error) {
	switch as {
	case "versionlog":
		return "versionlog", nil
	case "sessions":
		return "", nil
	case "claude-code", "pi", "codex", "swe-agent", "opencode":
		return as, nil
	}
	if path == "-" {
		return "versionlog", nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("import: %w", err)
	}
	if fi.IsDir() || strings.HasSuffix(path, ".traj") {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	head, _ := br.Peek(512)
	if sweagent.Looks(head) {
		return "", nil
	}
	if _, ok := formats.Registry().Database(path, head); ok {
		return "", nil // a harness's database (opencode.db)
	}
	first, _ := br.ReadSlice('\n')
	if bytes.Contains(first, []byte(`"t":"header"`)) && bytes.Contains(first, []byte(`"`+versionlog.FormatName+`"`)) {
		return "versionlog", nil
	}
	if importer.LooksLikeSession(first) {
		return "", nil
	}
	return "versionlog", nil
}

// runSessions imports agent sessions (a file or a folder) as context
// commits: progress on stderr, a summary per file and session on stdout
// (--json: importer.Result).
func (c *importCmd) runSessions(a *app, kind string) error {
	s, err := a.open(true)
	if err != nil {
		return err
	}
	defer s.Close()
	machine := c.Machine
	if machine == "" {
		machine, _ = os.Hostname()
	}
	p := a.progress()
	files := 0
	last := time.Now()
	im := importer.New(s, importer.Options{As: importer.Harness(kind), Principal: c.Principal, Machine: machine,
		Progress: func(pr importer.Progress) {
			if pr.Size > 0 {
				p.update("import "+filepath.Base(pr.Path), pr.Bytes, pr.Size)
				// Without a terminal, a line every few seconds of a long file.
				if !p.on && !a.cli.JSON && !pr.Done && time.Since(last) > 3*time.Second {
					last = time.Now()
					fmt.Fprintf(a.stderr, "import: %s: %d of %d bytes\n", pr.Path, pr.Bytes, pr.Size)
				}
			}
			if pr.Files > files {
				files = pr.Files
				if !a.cli.JSON {
					fmt.Fprintf(a.stderr, "import: %d files read (%s)\n", pr.Files, pr.Path)
				}
			}
		}})
	res, err := im.Import(a.ctx, c.File)
	p.close()
	if err != nil {
		return err
	}
	if a.cli.JSON {
		if err := a.printJSON(res); err != nil {
			return err
		}
	} else {
		printImport(a, res)
	}
	if res.Failed > 0 {
		return fmt.Errorf("import: %d of %d files failed", res.Failed, len(res.Files))
	}
	// A file stopped part way (a line over the limit) is not imported
	// whole: the import says which file and line, and fails.
	var stopped []string
	for _, f := range res.Files {
		if f.Error != "" {
			stopped = append(stopped, fmt.Sprintf("%s: %s", f.Path, f.Error))
		}
	}
	if len(stopped) > 0 {
		return fmt.Errorf("import: %d of %d files not imported whole:\n%s", len(stopped), len(res.Files), strings.Join(stopped, "\n"))
	}
	return nil
}

func printImport(a *app, res *importer.Result) {
	w := a.stdout
	for _, f := range res.Files {
		if f.Status == importer.Failed {
			fmt.Fprintf(w, "%s: failed: %s\n", f.Path, f.Error)
			continue
		}
		fmt.Fprintf(w, "%s: %s (%s, %s): %d new lines, %d commits; %d bytes imported", f.Path, f.Status, f.Harness, f.Format, f.NewLines, len(f.Commits), f.Offset)
		if f.Pending > 0 {
			fmt.Fprintf(w, ", %d bytes of an incomplete last line left for later", f.Pending)
		}
		fmt.Fprintf(w, "; tip %s\n", f.Tip)
		if f.Error != "" {
			fmt.Fprintf(w, "  stopped: %s\n", f.Error)
		}
		for _, s := range f.Sessions {
			fmt.Fprintf(w, "  session %s: %d commits, %d records: %d prompts, %d injected, %d tool calls, %d tool results, %d compactions",
				s.Session, s.Commits, s.Records, s.Prompts, s.Injected, s.ToolCalls, s.ToolResults, s.Compactions)
			if s.Branches > 0 {
				fmt.Fprintf(w, ", %d branches", s.Branches)
			}
			fmt.Fprintln(w)
			for _, part := range []struct {
				name string
				m    map[string]int
			}{{"skipped", s.Skipped}, {"set aside", s.SetAside}, {"unknown (kept raw)", s.Unknown}} {
				if len(part.m) > 0 {
					fmt.Fprintf(w, "    %s: %s\n", part.name, counts(part.m))
				}
			}
		}
		for _, pr := range f.Problems {
			fmt.Fprintf(a.stderr, "%s\n", pr)
		}
	}
	fmt.Fprintf(w, "%d files: %d imported, %d grew, %d unchanged, %d rewritten, %d failed; %d commits, %d damaged lines reported\n",
		len(res.Files), res.Imported, res.Grew, res.Unchanged, res.Rewritten, res.Failed, res.Commits, res.Problems)
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
