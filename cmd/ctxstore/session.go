package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/sessionbundle"
)

// sessionCmd groups the commands on agent sessions.
type sessionCmd struct {
	Show   sessionShowCmd   `cmd:"" help:"One session: name, harness, cwd, times, state, calls, tokens, cached share, cost, and the cost of cache breaks by cause."`
	List   sessionListCmd   `cmd:"" help:"List the sessions in the store: turn, objects, calls, and where an imported one came from (a recorded transcript's calls are the requests its harness made)."`
	Export sessionExportCmd `cmd:"" help:"Write one session as a portable bundle: the session, its chat and system prompt, its context commits and every object it uses, with their history."`
	Import sessionImportCmd `cmd:"" help:"Load a session bundle into the store; every past call of the session rebuilds byte for byte."`
	Verify sessionVerifyCmd `cmd:"" help:"Check a session bundle without a store."`
	Index  sessionIndexCmd  `cmd:"" help:"Generate a session's name, description, summary and tags now (a new version of its metadata)."`
	Meta   sessionMetaCmd   `cmd:"" help:"Show a session's metadata (as of a basis), or every version with --history."`
}

type sessionExportCmd struct {
	Session string `arg:"" placeholder:"SESSION" ref:"session" help:"The session id (or a prefix of it naming one session)."`
	Output  string `name:"output" short:"o" placeholder:"FILE" help:"Write the bundle to FILE, atomically (default: stdout). A name ending in .gz is compressed."`
	Gzip    bool   `name:"gzip" help:"Compress the bundle with gzip."`
	StoreID string `name:"store-id" placeholder:"NAME" help:"Name of this store in the bundle, and so in targets' cursors (default: BACKEND:LOCATION)."`
}

// sessionExportJSON is the --json output of session export.
type sessionExportJSON struct {
	File       string `json:"file"`
	Compressed bool   `json:"compressed"`
	sessionbundle.ExportSummary
}

// Run implements session export.
func (c *sessionExportCmd) Run(a *app) error {
	if c.Output == "" && a.cli.JSON {
		return usagef("--json needs -o FILE: without it the bundle itself goes to stdout")
	}
	if c.Output == "-" {
		c.Output = ""
	}
	compress := c.Gzip || strings.HasSuffix(c.Output, ".gz")
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	var sum sessionbundle.ExportSummary
	if err := writeOutput(a.stdout, c.Output, compress, "the bundle", func(w io.Writer) error {
		p := a.progress()
		defer p.close()
		var err error
		sum, err = sessionbundle.Export(a.ctx, s, c.Session, w, sessionbundle.ExportOptions{StoreID: c.StoreID, Progress: p.update})
		return err
	}); err != nil {
		return err
	}
	if a.cli.JSON {
		return a.printJSON(sessionExportJSON{File: c.Output, Compressed: compress, ExportSummary: sum})
	}
	if c.Output != "" {
		fmt.Fprintf(a.stdout, "exported session %s (%d calls, %d entities, %d transactions, %d ops) as %s to %s: %d bytes\n",
			sum.Session, sum.Commits, sum.Entities, sum.Log.Txs, sum.Log.Ops, sum.Source.ID, c.Output, sum.Bytes)
	}
	return nil
}

type sessionImportCmd struct {
	File    string `arg:"" placeholder:"FILE" help:"The bundle to import (gzip or not); - reads stdin (kept in a temporary file, so it is checked whole before anything is written)."`
	Rebuild bool   `name:"rebuild" help:"Then rebuild every call of the session from this store and check it against its commit (reads grow with the square of the number of calls)."`
}

// Run implements session import.
func (c *sessionImportCmd) Run(a *app) error {
	path := c.File
	if path == "-" {
		tmp, err := spool(a.stdin)
		if err != nil {
			return err
		}
		defer os.Remove(tmp)
		path = tmp
	}
	s, err := a.open(true)
	if err != nil {
		return err
	}
	defer s.Close()
	p := a.progress()
	sum, err := sessionbundle.ImportFile(a.ctx, s, path, sessionbundle.ImportOptions{Progress: p.update, Rebuild: c.Rebuild})
	p.close()
	if err != nil {
		if c.File == "-" {
			err = fmt.Errorf("%s", strings.Replace(err.Error(), path, "stdin", 1))
		}
		return err
	}
	if a.cli.JSON {
		return a.printJSON(sum)
	}
	text := fmt.Sprintf("imported session %s from %s: applied %d transactions (%d ops), skipped %d already imported",
		sum.Session, sum.Source.ID, sum.Applied, sum.Ops, sum.Skipped)
	if sum.Applied > 0 && sum.KeptTxTimes < sum.Applied {
		text += fmt.Sprintf("; %d kept their tx time", sum.KeptTxTimes)
	}
	if sum.Rebuilt > 0 {
		text += fmt.Sprintf("; rebuilt and checked %d calls", sum.Rebuilt)
	}
	fmt.Fprintln(a.stdout, text)
	return nil
}

// spool copies r to a temporary file and returns its name.
func spool(r io.Reader) (string, error) {
	f, err := os.CreateTemp("", "ctxstore-bundle-*")
	if err != nil {
		return "", fmt.Errorf("reading stdin: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(f, r); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("reading stdin: %w", err)
	}
	return f.Name(), nil
}

type sessionVerifyCmd struct {
	File string `arg:"" placeholder:"FILE" help:"The bundle to check (gzip or not); - reads stdin."`
}

// Run implements session verify.
func (c *sessionVerifyCmd) Run(a *app) error {
	var r io.Reader = a.stdin
	if c.File != "-" {
		f, err := os.Open(c.File)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	name := c.File
	if name == "-" {
		name = "stdin"
	}
	info, err := sessionbundle.Verify(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if a.cli.JSON {
		return a.printJSON(info)
	}
	h := info.Header
	fmt.Fprintf(a.stdout, "%s: session %s from %s up to tx %d: %d calls, %d entities, %d transactions, %d ops, %d lines; ok\n",
		name, h.Session, h.Source.ID, h.Upto, h.Commits, h.Entities, info.Trailer.Txs, info.Trailer.Ops, info.Lines)
	return nil
}

type sessionListCmd struct{}

// sessionListJSON is one session of session list --json.
type sessionListJSON struct {
	Session  string                   `json:"session"`
	Harness  string                   `json:"harness,omitempty"`
	Turn     int                      `json:"turn"`
	Index    int                      `json:"index"`
	Pool     int                      `json:"pool"`
	Active   int                      `json:"active"`
	Calls    int                      `json:"calls"`
	Imported []sessionbundle.Imported `json:"imported"`
	// Recorded marks a session known only from its context commits (an
	// imported or captured transcript): Turn counts its prompts, Calls
	// the requests its harness recorded (harness/recorded), Source the
	// transcript it came from.
	Recorded bool   `json:"recorded,omitempty"`
	Source   string `json:"source,omitempty"`
}

// Run implements session list.
func (c *sessionListCmd) Run(a *app) error {
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	ids, err := session.List(a.ctx, s)
	if err != nil {
		return err
	}
	imported, err := sessionbundle.ListImported(a.ctx, s)
	if err != nil {
		return err
	}
	out := make([]sessionListJSON, 0, len(ids))
	for _, id := range ids {
		ss, err := session.Open(a.ctx, s, id)
		if err != nil {
			return err
		}
		st := ss.State()
		calls, err := s.Query(a.ctx, store.Query{Where: []store.Pred{store.Where("type", assemble.CommitType), store.Where("session_id", id)}, Find: []string{"call"}})
		if err != nil {
			return err
		}
		row := sessionListJSON{Session: id, Harness: ss.Info().Harness, Turn: st.Turn, Index: len(st.Index), Pool: len(st.Pool),
			Active: len(st.Active), Calls: len(calls), Imported: []sessionbundle.Imported{}}
		for _, im := range imported {
			if im.Session == id {
				row.Imported = append(row.Imported, im)
			}
		}
		out = append(out, row)
	}
	chains, err := commits.New(s, commits.Options{}).Chains(a.ctx, nil)
	if err != nil {
		return err
	}
	for _, ch := range chains {
		if slices.Contains(ids, ch.Session) {
			continue
		}
		row := sessionListJSON{Session: ch.Session, Harness: ch.Harness, Imported: []sessionbundle.Imported{}, Recorded: true, Source: ch.Source}
		if st, ok, err := recorded.ReadState(a.ctx, s, ch.Session, ch.Commits); err != nil {
			return err
		} else if ok {
			row.Turn, row.Calls = st.Turns, st.Calls
		}
		out = append(out, row)
	}
	if a.cli.JSON {
		return a.printJSON(out)
	}
	t := newTable(a.stdout, "SESSION", "TURN", "INDEX", "POOL", "ACTIVE", "CALLS", "IMPORTED FROM")
	for _, r := range out {
		from := "-"
		var parts []string
		for _, im := range r.Imported {
			p := im.Source
			if !im.Complete {
				p += " (incomplete: run the import again)"
			}
			parts = append(parts, p)
		}
		if len(parts) > 0 {
			from = strings.Join(parts, ", ")
		}
		if r.Recorded {
			from = "recorded: " + orDash(r.Source)
		}
		t.row(r.Session, r.Turn, r.Index, r.Pool, r.Active, r.Calls, from)
	}
	return t.flush()
}
