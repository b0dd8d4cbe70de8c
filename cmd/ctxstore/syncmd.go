package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

type syncCmd struct {
	From     string `name:"from" required:"" placeholder:"URL" help:"The source store (same forms as --store)."`
	To       string `name:"to" required:"" placeholder:"URL" help:"The target store (same forms as --store); created if it is a new SQLite file."`
	SourceID string `name:"source-id" placeholder:"NAME" help:"Name of the source in the target's cursor (default: BACKEND:LOCATION of the source)."`
}

// Run implements sync.
func (c *syncCmd) Run(a *app) error {
	src, err := a.openURL(c.From, false)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	defer src.Close()
	dst, err := a.openURL(c.To, true)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	defer dst.Close()
	p := a.progress()
	sum, err := versionlog.Sync(a.ctx, src, dst, versionlog.SyncOptions{SourceID: c.SourceID, Progress: p.update})
	p.close()
	if err != nil {
		return err
	}
	if a.cli.JSON {
		return a.printJSON(sum)
	}
	fmt.Fprintf(a.stdout, "synced %s: %s\n", sum.Import.Source.ID, importText(sum.Import))
	return nil
}

// importText describes an import's outcome in one line.
func importText(s versionlog.ImportSummary) string {
	text := fmt.Sprintf("applied %d transactions (%d ops), skipped %d already applied", s.Applied, s.Ops, s.Skipped)
	if s.Applied > 0 {
		text += fmt.Sprintf("; source txs %d-%d are target txs %d-%d", *s.FirstTx, *s.LastTx, *s.TargetFirstTx, *s.TargetLastTx)
		if s.KeptTxTimes < s.Applied {
			text += fmt.Sprintf("; %d kept their tx time, the others are recorded in %s", s.KeptTxTimes, versionlog.CursorID(s.Source.ID))
		}
	}
	return text
}

// openURL opens the store named by raw (the --store forms). A read-only
// use passes write=false: a SQLite file that does not exist is refused.
func (a *app) openURL(raw string, write bool) (store.Store, error) {
	if raw == "" {
		return nil, usagef("the store URL is empty")
	}
	loc, err := parseLocation(raw)
	if err != nil {
		return nil, err
	}
	switch loc.backend {
	case backendXTDB:
		return openXTDB(a.ctx, loc.url, a.cli.XTDBTimeout)
	case backendPostgres:
		return openPostgres(a.ctx, loc.url, write)
	}
	return openSQLite(a.ctx, loc, write, a.cli.Durable)
}

// progressBar shows a command's progress on stderr: a bar per phase when
// stderr is a terminal and --json is not given, nothing otherwise.
type progressBar struct {
	w     io.Writer
	on    bool
	bar   *progressbar.ProgressBar
	phase string
}

func (a *app) progress() *progressBar {
	f, ok := a.stderr.(*os.File)
	return &progressBar{w: a.stderr, on: ok && !a.cli.JSON && term.IsTerminal(int(f.Fd()))}
}

// update is a versionlog.ProgressFunc.
func (p *progressBar) update(phase string, done, total int64) {
	if !p.on {
		return
	}
	if p.bar == nil || phase != p.phase {
		p.close()
		p.phase = phase
		p.bar = progressbar.NewOptions64(max(total, 1),
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(phase),
			progressbar.OptionSetItsString("tx"),
			progressbar.OptionShowIts(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	_ = p.bar.Set64(min(done, p.bar.GetMax64()))
}

// close finishes the current bar, if any.
func (p *progressBar) close() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}
