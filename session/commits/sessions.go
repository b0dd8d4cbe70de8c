package commits

import (
	"context"
	"sort"
	"time"
)

// Chain summarizes the commits of one session: a session ctxstore served
// live, or one known only from its commits (an imported or captured
// transcript, docs/import.md).
type Chain struct {
	Session string `json:"session"`
	// Harness, Cwd and Model are the latest the commits' provenance names.
	Harness string `json:"harness,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
	Model   string `json:"model,omitempty"`
	// Source is the file the latest imported commit came from.
	Source string `json:"source,omitempty"`
	// Commits counts the session's commits (cached materializations left
	// out); Compactions its compaction commits.
	Commits     int `json:"commits"`
	Compactions int `json:"compactions"`
	// First and Last are the earliest and latest commit creation times.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Tip is the session's tip, as SessionTip chooses it (deepest, then
	// latest).
	Tip string `json:"tip"`
}

// Chains summarizes the commit chains of the given sessions (all when none
// is given), in session order. One query, as ListCommits.
func (s *Service) Chains(ctx context.Context, sessions []string) ([]Chain, error) {
	cs, err := s.ListCommits(ctx, sessions)
	if err != nil {
		return nil, err
	}
	by := map[string]*Chain{}
	tip := map[string]*Commit{}
	for _, c := range cs {
		if c.SnapshotOf != "" || c.Session == "" {
			continue
		}
		ch := by[c.Session]
		if ch == nil {
			ch = &Chain{Session: c.Session, First: c.Created, Last: c.Created}
			by[c.Session] = ch
		}
		ch.Commits++
		if c.Type == Compaction {
			ch.Compactions++
		}
		if c.Created.Before(ch.First) {
			ch.First = c.Created
		}
		if !c.Created.Before(ch.Last) {
			ch.Last = c.Created
			for _, f := range []struct {
				dst *string
				v   string
			}{{&ch.Harness, c.Harness}, {&ch.Cwd, c.Cwd}, {&ch.Model, c.Model}, {&ch.Source, c.Source}} {
				if f.v != "" {
					*f.dst = f.v
				}
			}
		}
		if t := tip[c.Session]; t == nil || c.Depth > t.Depth || (c.Depth == t.Depth && !c.Created.Before(t.Created)) {
			tip[c.Session] = c
			ch.Tip = c.ID
		}
	}
	out := make([]Chain, 0, len(by))
	for _, ch := range by {
		out = append(out, *ch)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Session < out[j].Session })
	return out, nil
}
