package task

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText writes the report as two tables: one line per arm (solved
// tasks, calls, tokens, cost, faults), then one line per run.
func WriteText(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "endpoint %s (%s), model %s\n\n", r.Endpoint.URL, r.Endpoint.API, r.Endpoint.Model)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "arm\tsolved\tcalls\tsent\tcache read\tcache write\toutput\tcost\tfaults\tfault calls\t")
	for _, t := range r.Arms {
		faults, calls := "-", "-"
		if t.FaultRuns > 0 {
			faults, calls = fmt.Sprint(t.Faults), fmt.Sprint(t.FaultCalls)
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%d\t%d\t%d\t%d\t$%.4f\t%s\t%s\t\n", t.Arm, t.Solved, t.Tasks, t.Calls, t.Tokens.Sent(),
			t.Tokens.CacheRead, t.Tokens.CacheWrite, t.Tokens.Output, t.CostUSD, faults, calls)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tarm\tsolved\tcalls\tsent\tcost\tfaults\tnote\t")
	for _, x := range r.Results {
		note := x.Error
		if note == "" && x.TimedOut {
			note = "timed out"
		}
		faults := "-"
		if x.FaultStrategy != "" {
			faults = fmt.Sprint(x.Faults)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t$%.4f\t%s\t%s\t\n", x.Task, x.Arm, map[bool]string{true: "yes", false: "no"}[x.Solved],
			x.Calls, x.Tokens.Sent(), x.CostUSD, faults, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprint(w, `
columns: solved = tasks whose check passed after the agent stopped; calls = model calls Pi recorded;
sent = input tokens the endpoint reported (uncached + cache read + cache write); cost = those and the
output at the prices given; faults = distinctive strings a response wrote whose only earlier sources
were tool outputs the arm's context hid at that call (docs/replay.md, "Faults"; "-": not measured, as for
Claude Code through ctxstore's proxy); docs/eval.md.
`)
	return err
}
