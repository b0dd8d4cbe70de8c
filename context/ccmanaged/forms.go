package ccmanaged

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/collapse"
)

// showing is what one request shows of each tool result: its form, and the
// text it is shown as when not whole, by tool_use id.
type showing struct {
	form  map[string]string
	lines map[string]string
}

// pending is a collapse the policy wants for an output sent before in
// another form: it waits for a rebase.
type pending struct {
	r     *result
	form  string
	line  string
	saved int // tokens
}

func (mc *Config) minChars() int {
	if mc.MinChars > 0 {
		return mc.MinChars
	}
	return MinCollapseChars
}

func (mc *Config) previewChars() int {
	if mc.PreviewChars > 0 {
		return mc.PreviewChars
	}
	return DefaultPreviewChars
}

// wanted returns what the policy would show now of the outputs it would
// not show whole: collapsed, or stale (a whole read a later whole read of
// the same file superseded, the later one holding the file rather than
// Claude Code's short "unchanged" stub).
func (mc *Config) wanted(rq *request) map[string]string {
	cfg := mc.Collapse
	if cfg == (collapse.Config{}) {
		cfg = collapse.Default()
	}
	calls := make([]collapse.Call, 0, len(rq.results))
	for _, r := range rq.results {
		calls = append(calls, collapse.Call{ID: r.id, Turn: r.turn, Seq: r.seq, File: r.tool == "Read", Tokens: (len(r.text) + 3) / 4})
	}
	want := map[string]string{}
	for _, id := range collapse.Decide(calls, rq.turns, cfg).Collapse {
		want[id] = formCollapsed
	}
	lastRead := map[string]*result{}
	for _, r := range rq.results {
		if r.readPath == "" || !r.textOK {
			continue
		}
		if prev := lastRead[r.readPath]; prev != nil && len(r.text) >= min(len(prev.text), mc.minChars()) {
			want[prev.id] = formStale
		}
		lastRead[r.readPath] = r
	}
	return want
}

// sticky returns the forms before this request's collapses: an output sent
// before keeps the form it was sent in; a new one enters whole, or as a
// preview past the preview size (its whole kept in its spill file).
func (mc *Config) sticky(sid string, st *State, rq *request) showing {
	sh := showing{form: map[string]string{}, lines: map[string]string{}}
	for _, r := range rq.results {
		f, known := st.Shown[r.id]
		if !known {
			f = formWhole
			if r.textOK && r.preview == "" && r.spillOf == "" && utf8.RuneCountInString(r.text) > mc.previewChars() {
				if file, err := mc.Spill.Keep(sid, r.id, r.text); err == nil {
					f = formPreview
					sh.lines[r.id] = assemble.PreviewText(r.text, "Read "+file+" for the output whole")
				}
			}
		} else if f == formPreview {
			file, _ := mc.Spill.File(sid, r.id)
			sh.lines[r.id] = assemble.PreviewText(r.text, "Read "+file+" for the output whole")
		}
		sh.form[r.id] = f
	}
	return sh
}

// collapseLine returns the line output r collapses to in form f (collapsed
// or stale), its spill file made sure of; "" when it cannot collapse.
func (mc *Config) collapseLine(sid string, r *result, f string) string {
	if !r.textOK || len(r.text) < mc.minChars() && r.preview == "" {
		return ""
	}
	file := r.spillOf
	if file == "" {
		file = r.preview
	}
	if file == "" {
		var err error
		if file, err = mc.Spill.Keep(sid, r.id, r.text); err != nil {
			return ""
		}
	}
	if f == formStale {
		return fmt.Sprintf("[ctxstore] this read of %s was superseded by a later read of the file; Read %s for it whole", r.readPath, file)
	}
	lines := strings.Count(r.text, "\n")
	if !strings.HasSuffix(r.text, "\n") {
		lines++
	}
	return fmt.Sprintf("[ctxstore] output collapsed (%d chars, %d lines); Read %s for it whole",
		utf8.RuneCountInString(r.text), lines, file)
}

// collapse applies to sh the collapses that need no rebase (those decided
// before, which stay, and those of outputs new to this request, which
// nothing cached holds) and returns the others, which wait, in order.
func (mc *Config) collapse(sid string, st *State, rq *request, sh showing, want map[string]string) []pending {
	var waiting []pending
	for _, r := range rq.results {
		f := sh.form[r.id]
		if f == formCollapsed || f == formStale {
			if l := mc.collapseLine(sid, r, f); l != "" {
				sh.lines[r.id] = l
			} else {
				sh.form[r.id] = formWhole
			}
			continue
		}
		wf, ok := want[r.id]
		if !ok {
			continue
		}
		l := mc.collapseLine(sid, r, wf)
		if l == "" {
			continue
		}
		shown := r.text
		if f == formPreview {
			shown = sh.lines[r.id]
		}
		saved := (len(shown) - len(l)) / 4
		if saved <= 0 {
			continue
		}
		if _, known := st.Shown[r.id]; !known {
			sh.form[r.id], sh.lines[r.id] = wf, l
			continue
		}
		waiting = append(waiting, pending{r, wf, l, saved})
	}
	sort.Slice(waiting, func(i, j int) bool { return waiting[i].r.seq < waiting[j].r.seq })
	return waiting
}

// rebase applies the waiting collapses when assemble.Decide says their
// saving pays for the prefix they make the provider write again (or the
// cache is cold anyway), the latest of them from where the rebase starts;
// ap says what it did and what still waits. size is the request body's.
func (mc *Config) rebase(st *State, rq *request, sh showing, waiting []pending, size int, now time.Time, ttl time.Duration, ap *Applied) {
	if len(waiting) == 0 {
		return
	}
	tail := make([]int, len(rq.msgs)+1) // tokens from message i to the end
	for i := len(rq.msgs) - 1; i >= 0; i-- {
		tail[i] = tail[i+1] + (len(rq.msgs[i].raw)+3)/4
	}
	stale := 0
	cands := make([]assemble.Candidate, len(waiting))
	for k := len(waiting) - 1; k >= 0; k-- {
		stale += waiting[k].saved
		cands[k] = assemble.Candidate{Tail: tail[waiting[k].r.msg], Stale: stale, Rewrite: tail[0]}
	}
	pol := mc.Policy
	pol.CacheTTL = ttl
	pol.Breakpoints = assemble.BreakpointsEnd
	d := assemble.Decide(assemble.Inputs{
		StaleTokens: stale, ContextTokens: (size + 3) / 4, Idle: now.Sub(st.touched()),
		HasPrevious: st.Calls > 0 && !st.Last.IsZero(), Calls: st.Calls, Shape: st.Shape, Candidates: cands,
	}, pol)
	if !d.Rebase {
		ap.Pending = stale
		return
	}
	ap.Rebase = d.Reason
	st.Shape.Rebases++
	for _, w := range waiting[d.From:] {
		sh.form[w.r.id], sh.lines[w.r.id] = w.form, w.line
		ap.New++
	}
	for _, w := range waiting[:d.From] {
		ap.Pending += w.saved
	}
}
