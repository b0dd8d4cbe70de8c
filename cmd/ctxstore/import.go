package main

import (
	"fmt"

	"github.com/ctxstore/ctxstore/sync/versionlog"
)

type importCmd struct {
	File    string `arg:"" placeholder:"FILE" help:"The version log to import (gzip or not). - reads stdin, applying each transaction as it is read instead of checking the whole log first."`
	Partial bool   `name:"partial" help:"Accept a log exported with --after into a store that holds nothing from its source yet (it gets the history from there on only)."`
}

// Run implements import.
func (c *importCmd) Run(a *app) error {
	s, err := a.open(true)
	if err != nil {
		return err
	}
	defer s.Close()
	p := a.progress()
	var sum versionlog.ImportSummary
	if c.File == "-" {
		sum, err = versionlog.Import(a.ctx, s, a.stdin, versionlog.ImportOptions{Progress: p.update, Partial: c.Partial})
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
