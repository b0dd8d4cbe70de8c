package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

type importCmd struct {
	File    string `arg:"" placeholder:"PATH" help:"What to import: a version log (gzip or not; - reads stdin, spooled to a temporary file, so that it too is checked whole before anything is applied), or agent sessions: a Claude Code transcript, a Pi session file, a Codex CLI rollout, a SWE-agent .traj file, opencode's database (opencode.db, read-only), or a folder of them (a project folder, all of ~/.claude/projects or ~/.codex/sessions). Detected from the path and its first line; --as decides."`
	Partial bool   `name:"partial" help:"Version logs: accept a log exported with --after into a store that holds nothing from its source yet (it gets the history from there on only)."`
	As      string `name:"as" placeholder:"KIND" enum:",versionlog,sessions,claude-code,pi,codex,swe-agent,opencode" default:"" help:"What PATH is: versionlog, or sessions (each file's harness detected), or one harness: claude-code, pi, codex, swe-agent, opencode (docs/import.md)."`
	sessionImportFlags
}

// Run implements import: a version log, or agent sessions (docs/import.md
// "One command, two imports").
func (c *importCmd) Run(a *app) error {
	kind, err := importKind(c.File, c.As)
	if err != nil {
		return err
	}
	if kind != "versionlog" {
		if c.Partial {
			return usagef("--partial is for version logs; %s is read as agent sessions", c.File)
		}
		return c.runSessions(a, kind)
	}
	s, err := a.open(true)
	if err != nil {
		return err
	}
	defer s.Close()
	p := a.progress()
	var sum versionlog.ImportSummary
	if c.File == "-" {
		sum, err = a.importStdin(s, versionlog.ImportOptions{Progress: p.update, Partial: c.Partial})
	} else {
		sum, err = versionlog.ImportFile(a.ctx, s, c.File, versionlog.ImportOptions{Progress: p.update, Partial: c.Partial})
	}
	p.close()
	if err != nil {
		return err
	}
	if a.cli.JSON {
		return a.printJSON(sum)
	}
	fmt.Fprintf(a.stdout, "imported %s from %s: %s\n", c.File, sum.Source.ID, importText(sum))
	return nil
}

// importStdin spools stdin to a temporary file (removed afterwards) and
// imports it with the whole-log check first, as a file is: a corrupt
// transaction or a bad checksum at the end changes nothing.
func (a *app) importStdin(s store.Store, o versionlog.ImportOptions) (versionlog.ImportSummary, error) {
	f, err := os.CreateTemp("", "ctxstore-import-*.log")
	if err != nil {
		return versionlog.ImportSummary{}, fmt.Errorf("spooling stdin: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := io.Copy(f, a.stdin); err != nil {
		return versionlog.ImportSummary{}, fmt.Errorf("spooling stdin to %s: %w", f.Name(), err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return versionlog.ImportSummary{}, err
	}
	return versionlog.ImportChecked(a.ctx, s, f, "stdin", o)
}
