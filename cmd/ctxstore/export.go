package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxstore/ctxstore/sync/versionlog"
)

type exportCmd struct {
	After    afterFlag `name:"after" default:"-1" placeholder:"TXID" help:"Only transactions after tx TXID (default: -1, the whole store)."`
	Output   string    `name:"output" short:"o" placeholder:"FILE" help:"Write the log to FILE, atomically (default: stdout). A name ending in .gz is compressed."`
	Gzip     bool      `name:"gzip" help:"Compress the log with gzip."`
	SourceID string    `name:"source-id" placeholder:"NAME" help:"Name of the source in the log, and so in targets' cursors (default: BACKEND:LOCATION)."`
}

// exportJSON is the --json output of export.
type exportJSON struct {
	File       string `json:"file"`
	Compressed bool   `json:"compressed"`
	versionlog.ExportSummary
}

// Run implements export.
func (c *exportCmd) Run(a *app) error {
	if c.Output == "" && a.cli.JSON {
		return usagef("--json needs -o FILE: without it the log itself goes to stdout")
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
	var sum versionlog.ExportSummary
	if err := writeOutput(a.stdout, c.Output, compress, "the log", func(w io.Writer) error {
		p := a.progress()
		defer p.close()
		var err error
		sum, err = versionlog.Export(a.ctx, s, w, versionlog.ExportOptions{After: int64(c.After), SourceID: c.SourceID,
			Progress: func(done, total int64) { p.update("export", done, total) }})
		return err
	}); err != nil {
		return err
	}
	if a.cli.JSON {
		return a.printJSON(exportJSON{File: c.Output, Compressed: compress, ExportSummary: sum})
	}
	if c.Output != "" {
		fmt.Fprintf(a.stdout, "exported %d transactions (%d ops, %d documents) of %s after tx %d to %s: %d bytes, sha256 %s\n",
			sum.Txs, sum.Ops, sum.Docs, sum.Source.ID, sum.After, c.Output, sum.Bytes, sum.SHA256)
	}
	return nil
}

// writeOutput runs write on where an export goes, gzip-compressed with
// compress: stdout when output is "", else a temporary file next to output
// that is renamed into place only once write and compression succeeded (on
// failure it is removed, and output is untouched). what names the data in
// errors.
func writeOutput(stdout io.Writer, output string, compress bool, what string, write func(io.Writer) error) error {
	out, commit, abort, err := destination(stdout, output)
	if err != nil {
		return err
	}
	defer abort()
	w := out
	var zw *gzip.Writer
	if compress {
		zw = gzip.NewWriter(out)
		w = zw
	}
	if err := write(w); err != nil {
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return fmt.Errorf("compressing %s: %w", what, err)
		}
	}
	return commit()
}

// destination returns where the data goes: stdout, or a temporary file
// next to output that commit renames into place (abort removes it if
// commit did not run).
func destination(stdout io.Writer, output string) (w io.Writer, commit func() error, abort func(), err error) {
	if output == "" {
		bw := bufio.NewWriter(stdout)
		return bw, bw.Flush, func() {}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(output), "."+filepath.Base(output)+".tmp-*")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating %s: %w", output, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, nil, nil, fmt.Errorf("creating %s: %w", output, err)
	}
	done := false
	commit = func() error {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("writing %s: %w", output, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", output, err)
		}
		if err := os.Rename(f.Name(), output); err != nil {
			return fmt.Errorf("writing %s: %w", output, err)
		}
		done = true
		return nil
	}
	abort = func() {
		if !done {
			f.Close()
			os.Remove(f.Name())
		}
	}
	return f, commit, abort, nil
}
