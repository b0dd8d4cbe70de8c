// Package collapse is the auto-activation policy for toolcall outputs
// (000 §6.4, 004 §4.3): the most recent outputs stay active, older ones
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
}

// Default returns the defaults: 5 outputs and 5 files per turn, 3 turns.
func Default() Config { return Config{PerTurn: 5, TurnsBack: 3} }

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
// Pinned calls neither take a slot nor collapse. Negative config values
// count as 0 (nothing kept). The result does not depend on the order of
// calls.
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
	for _, c := range sorted {
		inWindow := c.Turn > current-cfg.TurnsBack && c.Turn <= current
		switch {
		case c.Management:
			d.Ignored = append(d.Ignored, c.ID)
		case c.Pinned || (c.File && fileSlots < 0):
			d.Keep = append(d.Keep, c.ID)
		case c.File && inWindow && files[c.Turn] < fileSlots:
			files[c.Turn]++
			d.Keep = append(d.Keep, c.ID)
		case !c.File && inWindow && perTurn[c.Turn] < cfg.PerTurn:
			perTurn[c.Turn]++
			d.Keep = append(d.Keep, c.ID)
		default:
			d.Collapse = append(d.Collapse, c.ID)
		}
	}
	return d
}
