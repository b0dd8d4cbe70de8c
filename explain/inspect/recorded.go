package inspect

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// branchTag marks commits that repeat lines of their session's file chain
// (an import's sub-agent and abandoned-branch views): read once, through
// the file chain (harness/importer.Counted and explain/stats agree).
const branchTag = "branch"

// recordedUsage fills a recorded session's name, calls, tokens and cost
// from its commits' events, decoded with the Inspector's formats: the
// name is the harness's own title (Claude Code's ai-title, custom-title
// and summary records; the last one wins), else s.Name (the session
// index's), else the first prompt a person wrote; one call per model
// message with recorded usage (a message id counted once), priced per
// model with the price table. A call whose model the table does not know
// makes the session's cost unknown. cs are the session's commits.
func (in *Inspector) recordedUsage(ctx context.Context, svc *commits.Service, cs []*commits.Commit, s *Session) error {
	if in.o.Formats == nil {
		return nil
	}
	// The events that matter here, kept apart for the main thread and for
	// sub-agents' records (sidechains): a sub-agent's lane is a session
	// whose records are all sidechain.
	var main, side []events.Event
	for _, c := range cs {
		if c.SnapshotOf != "" || (c.Type == commits.Snapshot && c.Parent != "") || c.Type == commits.Compaction ||
			slices.Contains(c.Tags, branchTag) {
			continue
		}
		f, ok := in.o.Formats.Lookup(c.Format)
		if !ok || f.Decode == nil {
			continue
		}
		b, err := svc.Content(ctx, c)
		if err != nil {
			return fmt.Errorf("session %s: %w", s.ID, err)
		}
		evs, err := f.Decode(b)
		if err != nil {
			return fmt.Errorf("session %s: commit %s (%s): %w", s.ID, c.ID, c.Format, err)
		}
		for _, e := range evs {
			if e.Usage == nil && e.Type != events.System && e.Type != events.Prompt {
				continue
			}
			if sub, _ := e.Metadata["sidechain"].(bool); sub {
				side = append(side, e)
			} else {
				main = append(main, e)
			}
		}
	}
	evs := main
	if !hasUsage(main) {
		evs = side
	}
	var title, prompt string
	seen := map[string]bool{}
	unpriced := map[string]bool{}
	table := in.o.PriceTable
	for _, e := range evs {
		switch {
		case e.Type == events.System && e.Subtype == "title" && strings.TrimSpace(e.Text) != "":
			title = e.Text
		case e.Type == events.Prompt && (e.Source == "user" || e.Source == "agent") && prompt == "" && strings.TrimSpace(e.Text) != "":
			prompt = e.Text
		}
		u := e.Usage
		if u == nil || e.Model == "<synthetic>" {
			continue
		}
		if e.MessageID != "" {
			if seen[e.MessageID] {
				continue
			}
			seen[e.MessageID] = true
		}
		s.Calls++
		sent := int(u.Sent())
		s.Tokens = sent
		s.TokensSent += sent
		s.CachedTokens += int(u.CacheRead)
		if !e.Time.IsZero() {
			t := e.Time
			s.LastCall = &t
		}
		if cost, ok := table.Cost(e.Model, *u); ok {
			s.CostUSD += cost
		} else {
			unpriced[e.Model] = true
		}
	}
	switch {
	case title != "":
		s.Name = firstLine(title, 80)
	case s.Name != "":
	case prompt != "":
		s.Name = firstLine(prompt, 80)
	}
	if s.TokensSent > 0 {
		s.CachedShare = float64(s.CachedTokens) / float64(s.TokensSent)
	}
	for m := range unpriced {
		s.UnpricedModels = append(s.UnpricedModels, m)
	}
	sort.Strings(s.UnpricedModels)
	if len(unpriced) > 0 {
		s.CostUSD, s.CostUnknown = 0, true
	}
	return nil
}

func hasUsage(evs []events.Event) bool {
	for _, e := range evs {
		if e.Usage != nil {
			return true
		}
	}
	return false
}
