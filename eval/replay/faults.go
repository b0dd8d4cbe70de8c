package replay

import (
	"index/suffixarray"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// The fault rule (docs/replay.md, "Faults"): a distinctive string a call's
// response writes whose only earlier sources are tool outputs the
// strategy's context did not show in full at that call is a fault; one
// whose visible sources are only outputs that read a hidden output back (a
// re-read, a re-run, activate, a spill-file read) is a page-in.

const (
	// minDistinctive is the shortest distinctive token, in bytes; a number
	// (digits only) needs minDistinctiveNumber digits.
	minDistinctive       = 8
	minDistinctiveNumber = 5
	// minQuotedLine is the shortest line of a multi-line tool argument
	// (an edit's old text, a file written) taken whole, once trimmed.
	minQuotedLine = 24
	// maxNeedsPerCall caps the distinctive strings checked per response
	// (a large file written would otherwise weigh more than everything
	// else), the first ones in order kept.
	maxNeedsPerCall = 200
	// defaultFaultList is how many faults a call lists (Call.FaultStrings)
	// unless Options.FaultList says otherwise.
	defaultFaultList = 3
)

// Fault is one string of a call's response found only in outputs the
// strategy had hidden.
type Fault struct {
	// String is the distinctive string the response wrote.
	String string `json:"string"`
	// Source is the index of the message holding its latest hidden
	// source (a tool result), Tool that result's tool name.
	Source int    `json:"source"`
	Tool   string `json:"tool,omitempty"`
}

// faultNeed is one distinctive string of a response and its earlier
// sources.
type faultNeed struct {
	s string
	// shown: an earlier user or assistant message holds it (no strategy
	// hides those from the fault rule's view).
	shown bool
	// results are the earlier tool result messages holding it, latest
	// first.
	results []int
}

// faultIndex is built once per session: the distinctive strings of every
// response with their earlier sources, found with one suffix array over
// every message's text, and what each tool result reads back.
type faultIndex struct {
	msgs  []conversation.Message
	needs map[int][]faultNeed // response message index -> its strings
	// callOf maps a tool result message to its call; again lists, per
	// tool result message, the earlier calls with the same need key and
	// no write since (the outputs it reads again); direct marks results
	// that read back whatever they name (activate, a spill-file read).
	callOf map[int]conversation.ToolCall
	again  map[int][]string
	direct map[int]bool
	// list is how many faults a call lists.
	list int
}

// newFaultIndex indexes the session's messages; calls are the indexes of
// the responses to check.
func newFaultIndex(msgs []conversation.Message, calls []int) *faultIndex {
	fx := &faultIndex{msgs: msgs, needs: map[int][]faultNeed{}, callOf: map[int]conversation.ToolCall{},
		again: map[int][]string{}, direct: map[int]bool{}, list: defaultFaultList}
	var b strings.Builder
	starts := make([]int, len(msgs))
	for i, m := range msgs {
		starts[i] = b.Len()
		b.WriteString(sourceText(m))
		b.WriteByte(0)
	}
	text := []byte(b.String())
	sa := suffixarray.New(text)
	msgOf := func(off int) int { return sort.SearchInts(starts, off+1) - 1 }
	for _, k := range calls {
		var ns []faultNeed
		for _, s := range distinctiveStrings(msgs[k]) {
			n := faultNeed{s: s}
			seen := map[int]bool{}
			for _, off := range sa.Lookup([]byte(s), -1) {
				i := msgOf(off)
				if i >= k || seen[i] {
					continue
				}
				seen[i] = true
				if msgs[i].Role == conversation.RoleToolResult {
					n.results = append(n.results, i)
				} else {
					n.shown = true
				}
			}
			if n.shown || len(n.results) == 0 {
				// Visible in every strategy's context, or new: nothing
				// to check per strategy.
				if n.shown {
					ns = append(ns, faultNeed{s: s, shown: true})
				}
				continue
			}
			sort.Sort(sort.Reverse(sort.IntSlice(n.results)))
			ns = append(ns, n)
		}
		fx.needs[k] = ns
	}
	fx.indexReadBacks()
	return fx
}

// indexReadBacks finds, for every tool result, the earlier outputs it
// gives again: the calls with the same need key (needKey) and no write
// since that could have changed the output (the rule of needs.check), or
// any output for activate and a read of a spill file.
func (fx *faultIndex) indexReadBacks() {
	type at struct {
		id  string
		seq int
	}
	byID := map[string]conversation.ToolCall{}
	pending := map[string][]string{} // call id -> the earlier calls it reads again
	last := map[string][]at{}
	written := map[string]int{}
	anyMod, seq := -1, 0
	for i, m := range fx.msgs {
		switch m.Role {
		case conversation.RoleAssistant:
			for _, c := range m.ToolCalls {
				seq++
				byID[c.ID] = c
				switch ingest.DefaultTools[strings.ToLower(c.Name)] {
				case ingest.KindWrite, ingest.KindEdit:
					written[pathOf(c.Args)] = seq
					anyMod = seq
					continue
				}
				k := needKey(c)
				if k == "" {
					continue
				}
				since := anyMod
				if strings.HasPrefix(k, "read:") {
					since = written[pathOf(c.Args)]
				}
				for _, e := range last[k] {
					if e.seq > since {
						pending[c.ID] = append(pending[c.ID], e.id)
					}
				}
				last[k] = append(last[k], at{id: c.ID, seq: seq})
			}
		case conversation.RoleToolResult:
			c, ok := byID[m.ToolCallID]
			if !ok {
				continue
			}
			fx.callOf[i] = c
			if ids := pending[c.ID]; len(ids) > 0 {
				fx.again[i] = ids
			}
			name := strings.ToLower(c.Name)
			if name == "activate" {
				fx.direct[i] = true
			} else if ingest.DefaultTools[name] == ingest.KindRead {
				// A spill file names a call of the session.
				if id, ok := tools.SpillCallID(filepath.Base(pathOf(c.Args))); ok && byID[id].ID != "" {
					fx.direct[i] = true
				}
			}
		}
	}
}

// faultCheck is one call's faults and page-ins under one strategy.
type faultCheck struct {
	checked, faults, pageIns int
	examples                 []Fault
	// readBacks are the tool result messages that served page-ins.
	readBacks []int
}

// check classifies the strings of the response at message index k under
// the step's context: a string shown in a user or assistant message, or
// in a tool output the step shows in full that reads nothing back, is
// visible; else one in a shown output that reads a hidden output back is
// a page-in; else it is a fault.
func (fx *faultIndex) check(k int, step *Step) faultCheck {
	var fc faultCheck
	ns := fx.needs[k]
	if step.Hidden == nil {
		fc.checked = len(ns)
		return fc
	}
	memo := map[string]bool{}
	hidden := func(id string) bool {
		h, ok := memo[id]
		if !ok {
			h = step.Hidden(id)
			memo[id] = h
		}
		return h
	}
	readBack := func(i int) bool {
		if fx.direct[i] {
			return true
		}
		for _, id := range fx.again[i] {
			if hidden(id) {
				return true
			}
		}
		return false
	}
	used := map[int]bool{}
	for _, n := range ns {
		fc.checked++
		if n.shown {
			continue
		}
		visible, back := false, -1
		for _, i := range n.results {
			if hidden(fx.callOf[i].ID) {
				continue
			}
			if readBack(i) {
				if back < 0 {
					back = i
				}
				continue
			}
			visible = true
			break
		}
		switch {
		case visible:
		case back >= 0:
			fc.pageIns++
			if !used[back] {
				used[back] = true
				fc.readBacks = append(fc.readBacks, back)
			}
		default:
			fc.faults++
			if len(fc.examples) < fx.list {
				src := n.results[0]
				fc.examples = append(fc.examples, Fault{String: n.s, Source: src, Tool: fx.msgs[src].ToolName})
			}
		}
	}
	return fc
}

// sourceText is what a message shows the model, as the fault rule
// searches it: the text, every tool-call argument value, the output.
func sourceText(m conversation.Message) string {
	var b strings.Builder
	b.WriteString(m.Text)
	for _, c := range m.ToolCalls {
		for _, v := range argStrings(c.Args) {
			b.WriteByte('\n')
			b.WriteString(v)
		}
	}
	if m.Output != "" {
		b.WriteByte('\n')
		b.WriteString(m.Output)
	}
	return strings.ReplaceAll(b.String(), "\x00", " ")
}

// argStrings returns the string and number values of tool arguments,
// nested ones included, keys in sorted order.
func argStrings(v any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case float64:
			out = append(out, strconv.FormatFloat(x, 'f', -1, 64))
		case int:
			out = append(out, strconv.Itoa(x))
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(v)
	return out
}

// harnessContextFiles are the file names the harnesses' own system
// prompts name (the project instructions each one loads), which a
// transcript does not record: the model knows them from its prompt.
var harnessContextFiles = map[string]bool{"CLAUDE.md": true, "AGENTS.md": true}

// wellKnown tells a distinctive string the model knows without the
// session: a device path (/dev/null, /dev/stderr: fixed names of every
// Unix system) or a bare harness context file name (harnessContextFiles;
// a path to one names the project's directory, which the session shows).
func wellKnown(s string) bool {
	return strings.HasPrefix(s, "/dev/") || harnessContextFiles[s]
}

// distinctiveStrings returns the distinctive strings a response writes,
// each once, in order, at most maxNeedsPerCall: the distinctive tokens of
// its text and tool arguments (isDistinctive) but the well-known ones
// (wellKnown), and the lines of at least minQuotedLine bytes (trimmed) of
// its multi-line tool arguments (an edit's old text, a file's content).
func distinctiveStrings(m conversation.Message) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] && !wellKnown(s) && len(out) < maxNeedsPerCall {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, t := range distinctiveTokens(m.Text) {
		add(t)
	}
	for _, c := range m.ToolCalls {
		for _, v := range argStrings(c.Args) {
			for _, t := range distinctiveTokens(v) {
				add(t)
			}
			if strings.Contains(v, "\n") {
				for _, l := range strings.Split(v, "\n") {
					if l = strings.TrimSpace(l); len(l) >= minQuotedLine && strings.IndexFunc(l, isWordRune) >= 0 {
						add(l)
					}
				}
			}
		}
	}
	return out
}

func isWordRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
}

// isTokenRune: a token is a maximal run of letters, digits and
// _ . / \ - : (a path, an identifier, a dotted name, a number, a
// file:line).
func isTokenRune(r rune) bool {
	return isWordRune(r) || strings.ContainsRune("./\\-:", r)
}

// distinctiveTokens returns the distinctive tokens of s: maximal runs of token runes
// with leading and trailing . : - trimmed, kept by isDistinctive.
func distinctiveTokens(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !isTokenRune(r) }) {
		if f = strings.Trim(f, ".:-"); isDistinctive(f) {
			out = append(out, f)
		}
	}
	return out
}

// isDistinctive tells a token the model is unlikely to write without
// having seen it: a number of at least minDistinctiveNumber digits, or at
// least minDistinctive bytes holding a path separator, a dot, an
// underscore or a digit, or a lower-case letter followed by an upper-case
// one (camelCase). Plain words, however long, are not distinctive.
func isDistinctive(t string) bool {
	digits, marked := 0, false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '/' || c == '\\' || c == '.' || c == '_':
			marked = true
		case c >= 'A' && c <= 'Z' && i > 0 && t[i-1] >= 'a' && t[i-1] <= 'z':
			marked = true
		}
	}
	if digits == len(t) {
		return digits >= minDistinctiveNumber
	}
	return len(t) >= minDistinctive && (marked || digits > 0)
}
