package main

import (
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/explain/stats"
)

// statsCmd prints session analytics computed from the store's context
// commits (docs/stats.md).
type statsCmd struct {
	Sessions []string      `name:"session" placeholder:"ID" help:"Only this session (repeatable; default: every session with commits)."`
	From     timeFlag      `name:"from" placeholder:"TIME" help:"Only events at or after TIME (an event without a time counts at its commit's time)."`
	To       timeFlag      `name:"to" placeholder:"TIME" help:"Only events before TIME."`
	IdleGap  time.Duration `name:"idle-gap" default:"5m" help:"The shortest pause between two events of a session that counts as idle."`
	Bins     int           `name:"bins" default:"24" help:"Time windows of a session profile."`
	TZ       string        `name:"tz" default:"UTC" placeholder:"ZONE" help:"The time zone of the hour and weekday counts (an IANA name, or Local)."`
	Charts   string        `name:"charts" placeholder:"DIR" help:"Also write the charts as SVG images into DIR (timeline, activity, tools, compaction)."`
}

// Run implements stats.
func (c *statsCmd) Run(a *app) error {
	if c.Bins < 1 || c.Bins > 1000 {
		return usagef("--bins: %d is not between 1 and 1000", c.Bins)
	}
	if c.IdleGap <= 0 {
		return usagef("--idle-gap: must be positive")
	}
	loc, err := time.LoadLocation(c.TZ)
	if err != nil {
		return usagef("--tz: %v", err)
	}
	if c.From.set && c.To.set && !c.From.t.Before(c.To.t) {
		return usagef("--from must be before --to")
	}
	st, err := a.open(false)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(a.stderr, "stats: reading context commits\n")
	r, err := stats.Compute(a.ctx, commitService(st), stats.Options{
		Sessions: c.Sessions, From: c.From.t, To: c.To.t, IdleGap: c.IdleGap, Bins: c.Bins, Location: loc})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "stats: %d sessions, %d events\n", r.Total.Sessions, r.Total.Events)
	if c.Charts != "" {
		paths, err := stats.WriteCharts(c.Charts, r)
		if err != nil {
			return err
		}
		for _, p := range paths {
			fmt.Fprintf(a.stderr, "stats: chart written to %s\n", p)
		}
	}
	if a.cli.JSON {
		return a.printJSON(r)
	}
	return stats.WriteText(a.stdout, r)
}
