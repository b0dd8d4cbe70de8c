package inspector

import (
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/objects"
)

func (h *Handler) funcs() template.FuncMap {
	return template.FuncMap{
		"pct": func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
		"usd": func(f float64) string {
			if f != 0 && math.Abs(f) < 0.01 {
				return fmt.Sprintf("$%.4f", f)
			}
			return fmt.Sprintf("$%.2f", f)
		},
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return t.UTC().Format("2006-01-02 15:04:05")
		},
		"short":     objects.DisplayID,
		"esc":       url.PathEscape,
		"kindLabel": inspect.KindLabel,
		"dur": func(s float64) string {
			return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
		},
		"add": func(a, b int) int { return a + b },
		"f1":  func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	}
}

// sessionsBody is the sessions page's data: one page of the list.
type sessionsBody struct {
	Sessions           []inspect.Session
	Page, Pages, Total int
}

// sessions: the sessions page, ?page=N (from 1) of Options.SessionsPerPage.
func (h *Handler) sessions(q *req) (string, pageData, error) {
	page, err := intArg("page", q.r.URL.Query().Get("page"), 1)
	if err != nil {
		return "", pageData{}, err
	}
	ss, err := q.in.Sessions(q.ctx)
	if err != nil {
		return "", pageData{}, err
	}
	per := h.o.SessionsPerPage
	b := sessionsBody{Page: page, Total: len(ss), Pages: max(1, (len(ss)+per-1)/per)}
	if page <= b.Pages {
		b.Sessions = ss[(page-1)*per : min(len(ss), page*per)]
	}
	return "sessions.html", pageData{Title: "Sessions", Body: b}, nil
}

// sessionBody is the session page's data.
type sessionBody struct {
	S       *inspect.SessionDetail
	Calls   []inspect.Call
	From    int
	Limit   int
	To      int // last call of the page
	Prev    int // first call of the previous page, 0 if none
	Next    int // first call of the next page, 0 if none
	Chart   chart
	Chain   chain
	Commits []inspect.CommitNode
	Graph   chain
	// Managed: how many of a recorded session's conversations went
	// through Claude Code's managed mode (managed.go).
	Managed int
	// Page is the page asked for (?page=): of the calls (From..To, unless
	// ?from= chose them) and of the commit graph; Pages the larger of the
	// two lists' page counts.
	Page, Pages int
	// CommitPages is the number of pages of the commit graph.
	CommitPages int
	// FirstDepth and LastDepth are the depths of the commit graph's page.
	FirstDepth, LastDepth int
	// Would is what a recorded session would have cost with ctxstore,
	// when `session show --replay` computed it (nil otherwise).
	Would *inspect.WouldCost
}

// session: a session's page. ?page=N (from 1) shows the Nth page of
// calls (Options.PageSize each, or ?limit=) and of the commit graph
// (inspect.CommitsPerPage depths each); ?from= starts the calls at a
// call instead. Either way the page reads what it shows.
func (h *Handler) session(q *req) (string, pageData, error) {
	sid := q.r.PathValue("sid")
	page, err := intArg("page", q.r.URL.Query().Get("page"), 1)
	if err != nil {
		return "", pageData{}, err
	}
	limit, err := intArg("limit", q.r.URL.Query().Get("limit"), h.o.PageSize)
	if err != nil {
		return "", pageData{}, err
	}
	limit = min(limit, 1000)
	if page > (math.MaxInt32-1)/limit {
		return "", pageData{}, badRequest("page %d: past any session's calls", page)
	}
	from, err := intArg("from", q.r.URL.Query().Get("from"), (page-1)*limit+1)
	if err != nil {
		return "", pageData{}, err
	}
	d, err := q.in.Session(q.ctx, sid)
	if err != nil {
		return "", pageData{}, err
	}
	cs, err := q.in.Calls(q.ctx, sid, inspect.Page{From: from, Limit: limit})
	if err != nil {
		return "", pageData{}, err
	}
	cp, err := q.in.CommitsPage(q.ctx, sid, page)
	if err != nil {
		return "", pageData{}, err
	}
	b := sessionBody{S: d, Calls: cs, From: from, To: from + len(cs) - 1, Limit: limit, Chart: timeline(cs), Chain: chainOf(cs),
		Commits: cp.Nodes, Graph: commitGraph(cp.Nodes), Page: page, Pages: max(cp.Pages, (d.Calls+limit-1)/limit), CommitPages: cp.Pages,
		FirstDepth: (page - 1) * inspect.CommitsPerPage, LastDepth: page*inspect.CommitsPerPage - 1}
	if d.Recorded {
		if b.Would, err = q.in.StoredWouldCost(q.ctx, d); err != nil {
			return "", pageData{}, err
		}
		if b.Managed, err = h.managedConversations(q, d.ID); err != nil {
			return "", pageData{}, err
		}
	}
	if from > 1 {
		b.Prev = max(1, from-limit)
	}
	if from+limit <= d.Calls {
		b.Next = from + limit
	}
	title := d.Name
	if title == "" {
		title = sid
	}
	return "session.html", pageData{Title: title, Crumbs: []crumb{{"Sessions", h.o.Prefix + "/"}}, Body: b}, nil
}

// chart is the timeline of a page of calls: a bar per call (cached part
// and written part), marks for rebases and collapses, a cost line.
type chart struct {
	W, H, Top, Bottom, Left int
	Bars                    []bar
	CostLine                string // SVG polyline points
	MaxTokens               int
	MaxCostUSD              float64
	Ticks                   []tick
	// CallTicks label the bars with their call numbers under the x axis:
	// every call when there is room, else every k-th (and the last).
	CallTicks []callTick
	LabelY    int
}

type callTick struct {
	X     float64
	Label string
}

// minCallTickGap is the least room between two call labels, in pixels.
const minCallTickGap = 28.0

type bar struct {
	N                  int
	X, W               float64
	CachedY, CachedH   float64
	WrittenY, WrittenH float64
	StaleX, StaleW     float64 // collapsed content still rendered: a narrow bar beside
	StaleY, StaleH     float64
	Rebase             bool
	Collapsed          int
	Cause              string
	Title              string
	Href               string
}

type tick struct {
	Y     float64
	Label string
}

func timeline(cs []inspect.Call) chart {
	c := chart{W: 960, H: 240, Top: 14, Bottom: 24, Left: 56}
	if len(cs) == 0 {
		return c
	}
	for _, x := range cs {
		c.MaxTokens = max(c.MaxTokens, x.Tokens)
		c.MaxCostUSD = math.Max(c.MaxCostUSD, x.CostUSD)
	}
	plotH := float64(c.H - c.Top - c.Bottom)
	plotW := float64(c.W - c.Left - 8)
	step := plotW / float64(len(cs))
	bw := math.Max(step*0.8, 0.5)
	scale := plotH / math.Max(float64(c.MaxTokens), 1)
	var pts []string
	for i, x := range cs {
		bx := float64(c.Left) + float64(i)*step
		ch := float64(x.CachedTokens) * scale
		wh := float64(x.WrittenTokens) * scale
		base := float64(c.H - c.Bottom)
		sh := float64(x.StaleTokens) * scale
		b := bar{N: x.N, X: bx, W: bw, CachedY: base - ch, CachedH: ch, WrittenY: base - ch - wh, WrittenH: wh,
			StaleX: bx + bw*0.65, StaleW: bw * 0.35, StaleY: base - sh, StaleH: sh,
			Rebase: x.Rebased, Collapsed: len(x.Collapsed), Cause: x.Break.Cause,
			Title: fmt.Sprintf("call %d: %d tokens, %.1f%% cached, $%.4f; break: %s; %d stale tokens; %d collapsed", x.N, x.Tokens, 100*x.CachedShare, x.CostUSD, x.Break.CauseKey(), x.StaleTokens, len(x.Collapsed))}
		c.Bars = append(c.Bars, b)
		cy := base
		if c.MaxCostUSD > 0 {
			cy = base - x.CostUSD/c.MaxCostUSD*plotH
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", bx+bw/2, cy))
	}
	c.CostLine = strings.Join(pts, " ")
	c.LabelY = c.H - c.Bottom + 14
	every := max(1, int(math.Ceil(minCallTickGap/step)))
	label := func(b bar) callTick { return callTick{X: b.X + bw/2, Label: strconv.Itoa(b.N)} }
	for i := 0; i < len(c.Bars); i += every {
		c.CallTicks = append(c.CallTicks, label(c.Bars[i]))
	}
	// the last call is labelled too: beside the last label when there is
	// room, else in its place (but never in the first's)
	if lastI := len(c.Bars) - 1; lastI%every != 0 {
		lt := label(c.Bars[lastI])
		switch n := len(c.CallTicks); {
		case lt.X-c.CallTicks[n-1].X >= minCallTickGap:
			c.CallTicks = append(c.CallTicks, lt)
		case n > 1:
			c.CallTicks[n-1] = lt
		}
	}
	for k := 0; k <= 4; k++ {
		v := c.MaxTokens * k / 4
		c.Ticks = append(c.Ticks, tick{Y: float64(c.H-c.Bottom) - float64(v)*scale, Label: strconv.Itoa(v)})
	}
	return c
}

// chain is the graph of call records by their parents: a node per call, in
// lanes, so that a record with two children shows a branch.
type chain struct {
	W, H  int
	Nodes []node
	Edges []edge
	Lanes int
}

type node struct {
	N        int
	ID       string
	X, Y     float64
	Lane     int
	Rebase   bool
	External bool // a parent in another session
	Branch   bool // a commit with more than one child
}

type edge struct{ X1, Y1, X2, Y2 float64 }

func chainOf(cs []inspect.Call) chain {
	ch := chain{}
	byID := map[string]int{}
	children := map[string]int{}
	const dx, dy = 18.0, 26.0
	for i, c := range cs {
		lane := 0
		if p, ok := byID[c.Parent]; ok {
			lane = ch.Nodes[p].Lane + children[c.Parent]
		}
		children[c.Parent]++
		n := node{N: c.N, ID: c.CommitID, Lane: lane, Rebase: c.Rebased, X: 16 + float64(i)*dx, Y: 14 + float64(lane)*dy}
		if p, ok := byID[c.Parent]; ok {
			pn := ch.Nodes[p]
			ch.Edges = append(ch.Edges, edge{pn.X, pn.Y, n.X, n.Y})
		}
		byID[c.CommitID] = len(ch.Nodes)
		ch.Nodes = append(ch.Nodes, n)
		ch.Lanes = max(ch.Lanes, lane+1)
	}
	ch.W = 32 + int(float64(len(cs))*dx)
	ch.H = 28 + int(float64(max(ch.Lanes-1, 0))*dy)
	return ch
}

// commitGraph draws context commits: one column per commit in order, one
// row per lane, an edge from each to its parent.
func commitGraph(ns []inspect.CommitNode) chain {
	ch := chain{}
	const dx, dy = 22.0, 26.0
	at := map[string]int{}
	for i, n := range ns {
		nd := node{ID: n.ID, Lane: n.Lane, X: 16 + float64(i)*dx, Y: 14 + float64(n.Lane)*dy, External: n.External, Branch: n.Children > 1}
		if p, ok := at[n.Parent]; ok {
			pn := ch.Nodes[p]
			ch.Edges = append(ch.Edges, edge{pn.X, pn.Y, nd.X, nd.Y})
		}
		at[n.ID] = len(ch.Nodes)
		ch.Nodes = append(ch.Nodes, nd)
		ch.Lanes = max(ch.Lanes, n.Lane+1)
	}
	ch.W = 32 + int(float64(len(ns))*dx)
	ch.H = 28 + int(float64(max(ch.Lanes-1, 0))*dy)
	return ch
}

// callBody is the call page's data.
type callBody struct {
	SID    string
	V      *inspect.CallView
	Prev   int
	Next   int
	Diff   int // the call the form proposes to compare with
	Totals map[string]int
	// Managed is a managed Claude Code call's form: what the model got
	// beside what Claude Code asked (managed.go); nil for none.
	Managed *ManagedCall
	// Blocks are the blocks the page shows: page Page of Pages, the
	// newest Options.BlocksPerPage first; Earlier is how many blocks
	// come before them (on later pages), Later how many after.
	Blocks                      []inspect.Block
	Page, Pages, Earlier, Later int
}

// call: a call's page. Its blocks are paged, the newest first: ?page=N
// (from 1) shows the Nth Options.BlocksPerPage of them counted from the
// last (a deep call's request holds every earlier message).
func (h *Handler) call(q *req) (string, pageData, error) {
	sid := q.r.PathValue("sid")
	n, err := intArg("call", q.r.PathValue("n"), 0)
	if err != nil {
		return "", pageData{}, err
	}
	page, err := intArg("page", q.r.URL.Query().Get("page"), 1)
	if err != nil {
		return "", pageData{}, err
	}
	if m := q.r.URL.Query().Get("diff"); m != "" {
		// the diff form submits here; send it on to the diff page
		mm, err := intArg("diff", m, 0)
		if err != nil {
			return "", pageData{}, err
		}
		return "", pageData{}, redirect{fmt.Sprintf("%s/s/%s/c/%d/diff/%d", h.o.Prefix, url.PathEscape(sid), n, mm)}
	}
	v, err := q.in.Call(q.ctx, sid, n)
	if err != nil {
		return "", pageData{}, err
	}
	b := callBody{SID: sid, V: v, Totals: map[string]int{}}
	if n > 1 {
		b.Prev, b.Diff = n-1, n-1
	}
	if next, err := q.in.Calls(q.ctx, sid, inspect.Page{From: n + 1, Limit: 1}); err == nil && len(next) == 1 {
		b.Next = n + 1
	}
	for _, bl := range v.Blocks {
		b.Totals[bl.Kind] += bl.Tokens
	}
	per, all := h.o.BlocksPerPage, len(v.Blocks)
	b.Page, b.Pages = page, max(1, (all+per-1)/per)
	if page <= b.Pages {
		end := all - min(all, (page-1)*per)
		start := max(0, end-per)
		b.Blocks, b.Earlier, b.Later = v.Blocks[start:end], start, all-end
	} else {
		b.Earlier = all
	}
	if v.Call.Recorded {
		if b.Managed, err = h.managedCall(q, sid, n); err != nil {
			return "", pageData{}, err
		}
	}
	return "call.html", pageData{Title: fmt.Sprintf("Call %d", n), Crumbs: h.sessionCrumbs(sid), Body: b}, nil
}

func (h *Handler) sessionCrumbs(sid string) []crumb {
	return []crumb{{"Sessions", h.o.Prefix + "/"}, {sid, h.o.Prefix + "/s/" + url.PathEscape(sid)}}
}

// redirect is returned by a page handler to answer 303.
type redirect struct{ to string }

func (r redirect) Error() string { return "see " + r.to }

// diffBody is the diff page's data.
type diffBody struct {
	SID string
	D   *inspect.Diff
}

func (h *Handler) diff(q *req) (string, pageData, error) {
	sid := q.r.PathValue("sid")
	n, err := intArg("call", q.r.PathValue("n"), 0)
	if err != nil {
		return "", pageData{}, err
	}
	m, err := intArg("diff", q.r.PathValue("m"), 0)
	if err != nil {
		return "", pageData{}, err
	}
	d, err := q.in.Diff(q.ctx, sid, m, n)
	if err != nil {
		return "", pageData{}, err
	}
	crumbs := append(h.sessionCrumbs(sid), crumb{fmt.Sprintf("Call %d", n), fmt.Sprintf("%s/s/%s/c/%d", h.o.Prefix, url.PathEscape(sid), n)})
	return "diff.html", pageData{Title: fmt.Sprintf("Call %d against call %d", n, m), Crumbs: crumbs, Body: diffBody{SID: sid, D: d}}, nil
}

// paging is a session's demand paging: the outputs shown as a preview or
// collapsed, and every call that read one back (it reads every call
// record's items, so the session page links here instead).
func (h *Handler) paging(q *req) (string, pageData, error) {
	sid := q.r.PathValue("sid")
	p, err := q.in.Paging(q.ctx, sid)
	if err != nil {
		return "", pageData{}, err
	}
	return "paging.html", pageData{Title: "Demand paging", Crumbs: h.sessionCrumbs(sid), Body: pagingBody{SID: sid, P: p}}, nil
}

type pagingBody struct {
	SID string
	P   *inspect.Paging
}

func (h *Handler) raw(w http.ResponseWriter, q *req) {
	sid := q.r.PathValue("sid")
	n, err := intArg("call", q.r.PathValue("n"), 0)
	if err != nil {
		h.error(w, q.r, err)
		return
	}
	v, err := q.in.Call(q.ctx, sid, n)
	if err != nil {
		h.error(w, q.r, err)
		return
	}
	raw := v.Raw
	if v.Call.Recorded && q.r.URL.Query().Get("asked") == "" {
		// a managed Claude Code call: what the model got (?asked=1: what
		// Claude Code asked to send)
		mc, err := h.managedCall(q, sid, n)
		if err != nil {
			h.error(w, q.r, err)
			return
		}
		if mc != nil {
			raw = mc.Sent
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(raw)
}

// objectBody is the object page's data.
type objectBody struct {
	O    *inspect.Object
	Axes axes
}

// axes draws the versions on the two time axes: transaction time above,
// valid time below, a line joining each version's two points.
type axes struct {
	W, H  int
	Marks []mark
	From  string
	To    string
}

type mark struct {
	Tx         int64
	XT, XV     float64
	Deleted    bool
	TxLabel    string
	ValidLabel string
}

func axesOf(vs []inspect.Version) axes {
	a := axes{W: 960, H: 120}
	if len(vs) == 0 {
		return a
	}
	lo, hi := vs[0].TxTime, vs[0].TxTime
	for _, v := range vs {
		for _, t := range []time.Time{v.TxTime, v.ValidTime} {
			if t.Before(lo) {
				lo = t
			}
			if t.After(hi) {
				hi = t
			}
		}
	}
	span := hi.Sub(lo)
	x := func(t time.Time) float64 {
		if span <= 0 {
			return float64(a.W) / 2
		}
		return 40 + float64(t.Sub(lo))/float64(span)*float64(a.W-80)
	}
	for _, v := range vs {
		a.Marks = append(a.Marks, mark{Tx: v.Tx, XT: x(v.TxTime), XV: x(v.ValidTime), Deleted: v.Deleted,
			TxLabel: v.TxTime.UTC().Format(time.RFC3339), ValidLabel: v.ValidTime.UTC().Format(time.RFC3339)})
	}
	a.From, a.To = lo.UTC().Format("2006-01-02 15:04:05"), hi.UTC().Format("2006-01-02 15:04:05")
	return a
}

func (h *Handler) object(q *req) (string, pageData, error) {
	id := q.r.PathValue("id")
	v := q.r.URL.Query()
	o, err := q.in.ObjectFrom(q.ctx, id, v.Get("session"), v.Get("after")) // a page of sessions
	if err != nil {
		return "", pageData{}, err
	}
	sort.SliceStable(o.Versions, func(i, j int) bool { return o.Versions[i].Tx < o.Versions[j].Tx })
	title := o.Nickname
	if title == "" {
		title = objects.DisplayID(id)
	}
	return "object.html", pageData{Title: title, Crumbs: []crumb{{"Sessions", h.o.Prefix + "/"}}, Body: objectBody{O: o, Axes: axesOf(o.Versions)}}, nil
}
