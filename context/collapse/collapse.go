// Package collapse is the auto-activation policy for toolcall outputs:
// the most recent outputs stay active, older ones
// collapse to metadata, pinned ones never collapse, and context-management
// calls (activate, deactivate, pin, unpin) do not count. It is a pure
// function of the session's toolcall record.
package collapse

import "sort"

// Config sets the window. The zero value is not the default; use Default.
type Config struct {
	// PerTurn is how many of the most recent counted toolcalls of a turn
	// stay active (default 5).
	PerTurn int
	// TurnsBack is how many turns, the current one included, keep active
	// toolcalls (default 3): with current turn T, turns T-TurnsBack+1..T.
	TurnsBack int
	// FilesPerTurn is how many of the most recent file loads (reads) of a
	// turn keep their files active, counted apart from outputs; 0 means
	// PerTurn, and a negative value keeps loaded files active until the
	// agent deactivates them.
	FilesPerTurn int
	// Budget bounds, in tokens, what the kept calls may hold (Call.Tokens):
	// beyond the PerTurn most recent outputs and the FilesPerTurn most
	// recent file loads of the session, which are kept whatever their
	// size, a call the window keeps stays active only while the kept
	// calls, most recent first, fit the budget. 0 means no budget.
	Budget int
}

// Default returns the defaults: 5 outputs and 5 files per turn, 3 turns,
// and a budget of 16,000 tokens (twice the assembler's default batch of
// stale tokens for a rebase, a twelfth of a 200,000-token window).
func Default() Config { return Config{PerTurn: 5, TurnsBack: 3, Budget: 16000} }

// Call is one toolcall as the policy sees it.
type Call struct {
	ID string
	// Turn is the turn the call ran in, or was last explicitly activated.
	Turn int
	// Seq orders calls; higher is more recent.
	Seq int64
	// Management marks context-management calls.
	Management bool
	// Pinned calls are never collapsed.
	Pinned bool
	// File marks a call that stands for a file's activation (a read): it
	// takes a file slot (Config.FilesPerTurn), not an output slot.
	File bool
	// Tokens is what keeping the call active costs (Config.Budget); 0 when
	// unknown.
	Tokens int
}

// Decision is the policy's verdict on every call it was given.
type Decision struct {
	// Keep are the calls the window keeps active (pinned ones included),
	// most recent first.
	Keep []string
	// Collapse are the counted, unpinned calls outside the window, most
	// recent first: the ones to deactivate.
	Collapse []string
	// Ignored are the management calls, which the policy neither keeps
	// nor collapses (they are never auto-activated).
	Ignored []string
}

// Decide applies cfg at turn current. A counted, unpinned call stays
// active when its turn is within the last cfg.TurnsBack turns and it is
// among the cfg.PerTurn most recent counted, unpinned calls of that turn
// (file loads: among the FilesPerTurn most recent file loads).
// Pinned calls neither take a slot nor collapse. With a Budget, a call
// kept so far that is not among the PerTurn most recent outputs or
// FilesPerTurn most recent file loads of the whole session collapses when
// it would bring the tokens of the kept calls (most recent first) past
// the budget: large old outputs go before small recent ones. Negative
// config values count as 0 (nothing kept). The result does not depend on
// the order of calls.
func Decide(calls []Call, current int, cfg Config) Decision {
	sorted := append([]Call(nil), calls...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Seq != sorted[j].Seq {
			return sorted[i].Seq > sorted[j].Seq
		}
		return sorted[i].ID < sorted[j].ID
	})
	perTurn, files := map[int]int{}, map[int]int{}
	fileSlots := cfg.FilesPerTurn
	if fileSlots == 0 {
		fileSlots = cfg.PerTurn
	}
	var d Decision
	used, recentOut, recentFiles := 0, 0, 0
	// fits reports whether c may stay under the budget, and counts it.
	fits := func(c Call) bool {
		recent := false
		if c.File {
			recent = fileSlots < 0 || recentFiles < fileSlots
			recentFiles++
		} else {
			recent = recentOut < cfg.PerTurn
			recentOut++
		}
		if cfg.Budget > 0 && !recent && used+c.Tokens > cfg.Budget {
			return false
		}
		used += c.Tokens
		return true
	}
	for _, c := range sorted {
		inWindow := c.Turn > current-cfg.TurnsBack && c.Turn <= current
		switch {
		case c.Management:
			d.Ignored = append(d.Ignored, c.ID)
		case c.Pinned || (c.File && fileSlots < 0):
			d.Keep = append(d.Keep, c.ID)
		case c.File && inWindow && files[c.Turn] < fileSlots && fits(c):
			files[c.Turn]++
			d.Keep = append(d.Keep, c.ID)
		case !c.File && inWindow && perTurn[c.Turn] < cfg.PerTurn && fits(c):
			perTurn[c.Turn]++
			d.Keep = append(d.Keep, c.ID)
		default:
			d.Collapse = append(d.Collapse, c.ID)
		}
	}
	return d
}
