package replay

import (
	"context"
	"reflect"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// Message builders for constructed sessions.
func fUser(text string) conversation.Message {
	return conversation.Message{Role: conversation.RoleUser, Text: text}
}

func fCall(text, id, tool string, args map[string]any) conversation.Message {
	m := conversation.Message{Role: conversation.RoleAssistant, Text: text}
	if id != "" {
		m.ToolCalls = []conversation.ToolCall{{ID: id, Name: tool, Args: args}}
	}
	return m
}

func fResult(id, tool, out string) conversation.Message {
	return conversation.Message{Role: conversation.RoleToolResult, ToolCallID: id, ToolName: tool, Output: out}
}

func TestDistinctive(t *testing.T) {
	for tok, want := range map[string]bool{
		"internal/store/sqlite.go": true,
		"parseHeaderLine":          true, // camelCase
		"MAX_RETRY_COUNT":          true,
		"v1.24.3-rc1":              true,
		"8123456":                  true,
		"31337":                    true,
		"1234":                     false, // too few digits
		"a/b.go":                   false, // too short
		"configuration":            false, // a plain word
		"Configuration":            false,
	} {
		if got := isDistinctive(tok); got != want {
			t.Errorf("isDistinctive(%q) = %v, want %v", tok, got, want)
		}
	}
	m := fCall("The bug is in `internal/store/sqlite.go:42`, see parseHeaderLine.", "c", "Edit", map[string]any{
		"file_path":  "internal/store/sqlite.go",
		"old_string": "\tif err := parseHeaderLine(line); err != nil {\n\t\treturn err\n\t}",
	})
	want := []string{"internal/store/sqlite.go:42", "parseHeaderLine", "internal/store/sqlite.go",
		"if err := parseHeaderLine(line); err != nil {"}
	if got := distinctiveStrings(m); !reflect.DeepEqual(got, want) {
		t.Errorf("distinctiveStrings = %q\nwant %q", got, want)
	}
	// Well-known strings are left out, a path to a context file is not.
	m = fCall("See CLAUDE.md and AGENTS.md; docs/CLAUDE.md too.", "c", "Bash", map[string]any{
		"command": "go test ./... 2>/dev/null >/dev/stderr"})
	want = []string{"docs/CLAUDE.md"}
	if got := distinctiveStrings(m); !reflect.DeepEqual(got, want) {
		t.Errorf("distinctiveStrings = %q\nwant %q", got, want)
	}
}

// TestFaultRule checks the rule on constructed sessions with known
// answers: the strategy hides the outputs named in hidden; the last
// message is the response checked.
func TestFaultRule(t *testing.T) {
	const secret = "pkg/ledger/balance_sheet.go"
	out := "found: " + secret + "\n"
	read := func(id string) conversation.Message {
		return fCall("", id, "Read", map[string]any{"file_path": "notes/todo.md"})
	}
	answer := fCall("Now I edit "+secret+".", "", "", nil)
	cases := []struct {
		name   string
		msgs   []conversation.Message
		hidden []string
		faults int
		pageIn int
		back   []int // read-back messages used
	}{
		{name: "only in a cleared output: fault",
			msgs:   []conversation.Message{fUser("find it"), read("r1"), fResult("r1", "Read", out), answer},
			hidden: []string{"r1"}, faults: 1},
		{name: "in a shown output: not a fault",
			msgs:   []conversation.Message{fUser("find it"), read("r1"), fResult("r1", "Read", out), answer},
			faults: 0},
		{name: "also in a user message: not a fault",
			msgs:   []conversation.Message{fUser("look at " + secret), read("r1"), fResult("r1", "Read", out), answer},
			hidden: []string{"r1"}, faults: 0},
		{name: "also in an earlier response: not a fault",
			msgs: []conversation.Message{fUser("find it"), read("r1"), fResult("r1", "Read", out),
				fCall("It is "+secret, "", "", nil), fUser("go on"), answer},
			hidden: []string{"r1"}, faults: 0},
		{name: "also in another shown output: not a fault",
			msgs: []conversation.Message{fUser("find it"), read("r1"), fResult("r1", "Read", out),
				fCall("", "b1", "Bash", map[string]any{"command": "ls pkg"}), fResult("b1", "Bash", secret), answer},
			hidden: []string{"r1"}, faults: 0},
		{name: "read back by the same read: page-in",
			msgs: []conversation.Message{fUser("find it"), read("r1"), fResult("r1", "Read", out),
				read("r2"), fResult("r2", "Read", out), answer},
			hidden: []string{"r1"}, pageIn: 1, back: []int{4}},
		{name: "re-read of a shown output: visible, no page-in",
			msgs: []conversation.Message{fUser("find it"), read("r1"), fResult("r1", "Read", out),
				read("r2"), fResult("r2", "Read", out), answer}},
		{name: "re-read after an edit: a new output, visible",
			msgs: []conversation.Message{fUser("find it"), read("r1"), fResult("r1", "Read", out),
				fCall("", "e1", "Edit", map[string]any{"file_path": "notes/todo.md", "old_string": "x", "new_string": "y"}),
				fResult("e1", "Edit", "ok"), read("r2"), fResult("r2", "Read", out), answer},
			hidden: []string{"r1"}},
		{name: "activate: page-in",
			msgs: []conversation.Message{fUser("find it"), read("r1"), fResult("r1", "Read", out),
				fCall("", "a1", "activate", map[string]any{"id": "o-1"}), fResult("a1", "activate", out), answer},
			hidden: []string{"r1"}, pageIn: 1, back: []int{4}},
		{name: "spill-file read: page-in",
			msgs: []conversation.Message{fUser("find it"), read("r1"), fResult("r1", "Read", out),
				fCall("", "s1", "Read", map[string]any{"file_path": "/tmp/spill/r1.txt"}), fResult("s1", "Read", out), answer},
			hidden: []string{"r1"}, pageIn: 1, back: []int{4}},
		{name: "a read-back itself cleared: fault",
			msgs: []conversation.Message{fUser("find it"), read("r1"), fResult("r1", "Read", out),
				read("r2"), fResult("r2", "Read", out), answer},
			hidden: []string{"r1", "r2"}, faults: 1},
		{name: "a string seen nowhere before: new, not checked",
			msgs:   []conversation.Message{fUser("find it"), read("r1"), fResult("r1", "Read", "nothing"), answer},
			hidden: []string{"r1"}},
		{name: "a short or plain string in a cleared output: not distinctive",
			msgs: []conversation.Message{fUser("find it"), read("r1"), fResult("r1", "Read", "the answer is 1234 apples"),
				fCall("So 1234 apples.", "", "", nil)},
			hidden: []string{"r1"}},
		{name: "well-known strings in a cleared output: not checked",
			msgs: []conversation.Message{fUser("find it"), fCall("", "g1", "Grep", map[string]any{"pattern": "x"}),
				fResult("g1", "Grep", "CLAUDE.md:3: run tests 2>/dev/null\n/srv/app/CLAUDE.md"),
				fCall("", "b1", "Bash", map[string]any{"command": "cat CLAUDE.md /srv/app/CLAUDE.md >/dev/null"})},
			hidden: []string{"g1"}, faults: 1},
		{name: "a number in a tool argument from a cleared output: fault",
			msgs: []conversation.Message{fUser("find it"), fCall("", "b1", "Bash", map[string]any{"command": "ps"}),
				fResult("b1", "Bash", "pid 482913 running"), fCall("", "k1", "Bash", map[string]any{"command": "kill 482913"})},
			hidden: []string{"b1"}, faults: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := len(tc.msgs) - 1
			fx := newFaultIndex(tc.msgs, []int{k})
			hid := map[string]bool{}
			for _, id := range tc.hidden {
				hid[id] = true
			}
			fc := fx.check(k, &Step{Hidden: func(id string) bool { return hid[id] }})
			if fc.faults != tc.faults || fc.pageIns != tc.pageIn || !reflect.DeepEqual(fc.readBacks, tc.back) {
				t.Errorf("faults %d, page-ins %d, read-backs %v; want %d, %d, %v (checked %d, examples %+v)",
					fc.faults, fc.pageIns, fc.readBacks, tc.faults, tc.pageIn, tc.back, fc.checked, fc.examples)
			}
			if tc.faults > 0 && (len(fc.examples) == 0 || fc.examples[0].Source >= k || tc.msgs[fc.examples[0].Source].Role != conversation.RoleToolResult) {
				t.Errorf("fault examples %+v do not name an earlier tool result", fc.examples)
			}
			// Nothing hidden: never a fault nor a page-in.
			if fc := fx.check(k, &Step{}); fc.faults != 0 || fc.pageIns != 0 {
				t.Errorf("with nothing hidden: %+v", fc)
			}
		})
	}
}

// TestFaultsReported replays a constructed session: clear_tool_uses
// clears the output the last response quotes, naive shows it.
func TestFaultsReported(t *testing.T) {
	big := func(s string) string {
		b := make([]byte, 0, 4000)
		for len(b) < 3000 {
			b = append(b, "filler line of a long output\n"...)
		}
		return string(b) + s
	}
	s := &transcript.Session{Format: transcript.FormatClaudeCode, ID: "faults", Messages: []conversation.Message{
		fUser("find the config"),
		fCall("", "b1", "Bash", map[string]any{"command": "grep -r port ."}), fResult("b1", "Bash", big("config/server_prod.yaml: port 48213")),
		fCall("", "b2", "Bash", map[string]any{"command": "ls"}), fResult("b2", "Bash", big("")),
		fCall("", "b3", "Bash", map[string]any{"command": "pwd"}), fResult("b3", "Bash", big("")),
		fCall("The port is set in config/server_prod.yaml to 48213.", "", "", nil),
	}}
	rep, err := Run(context.Background(), s, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Calibrate: "none",
		Strategies: []Strategy{&Naive{}, &ClearToolUses{Trigger: 100, Keep: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Totals{}
	for _, r := range rep.Results {
		got[r.Strategy] = r.Totals
	}
	if n := got["naive"]; n.Faults != 0 || n.Checked != 2 {
		t.Errorf("naive: faults %d, checked %d; want 0, 2", n.Faults, n.Checked)
	}
	c := got["clear_tool_uses"]
	if c.Faults != 2 || c.FaultCalls != 1 || c.Checked != 2 {
		t.Errorf("clear_tool_uses: faults %d in %d calls, checked %d; want 2 in 1, 2", c.Faults, c.FaultCalls, c.Checked)
	}
	last := rep.Results[1].Calls[len(rep.Results[1].Calls)-1]
	if last.Faults != 2 || len(last.FaultStrings) != 2 || last.FaultStrings[0].Source != 2 || last.FaultStrings[0].Tool != "Bash" {
		t.Errorf("last call: %+v", last)
	}
	if sum := Sum([]*Report{rep, rep}); sum[1].Totals.Faults != 4 || sum[1].Totals.FaultCalls != 2 {
		t.Errorf("sum: %+v", sum[1].Totals)
	}
}

// checkFaults checks the fault counts of a replay: the totals sum the
// calls, faults and page-ins are among the checked strings, every strategy
// that renders a context checks the same strings, and those that hide
// nothing (naive, clear_tool_uses below its trigger) have no fault.
func checkFaults(t *testing.T, rep *Report, hideNothing ...string) {
	t.Helper()
	checked := -1
	for _, r := range rep.Results {
		var sum Totals
		for _, c := range r.Calls {
			if c.Faults+c.PageIns > c.Checked || len(c.FaultStrings) > min(c.Faults, defaultFaultList) {
				t.Errorf("%s call %d: %d faults, %d page-ins of %d checked, %d examples", r.Strategy, c.N, c.Faults, c.PageIns, c.Checked, len(c.FaultStrings))
			}
			for _, f := range c.FaultStrings {
				if f.Source >= c.Message {
					t.Errorf("%s call %d: fault source %d not before the call's message %d", r.Strategy, c.N, f.Source, c.Message)
				}
			}
			sum.Checked += c.Checked
			sum.Faults += c.Faults
			sum.PageIns += c.PageIns
			sum.PageInTokens += int64(c.PageInTokens)
			if c.Faults > 0 {
				sum.FaultCalls++
			}
		}
		if got := r.Totals; got.Checked != sum.Checked || got.Faults != sum.Faults || got.FaultCalls != sum.FaultCalls ||
			got.PageIns != sum.PageIns || got.PageInTokens != sum.PageInTokens {
			t.Errorf("%s: totals %+v, calls sum to %+v", r.Strategy, got, sum)
		}
		if r.Strategy == (Recorded{}).Name() {
			if sum.Checked != 0 {
				t.Errorf("recorded: %d strings checked", sum.Checked)
			}
			continue
		}
		if checked >= 0 && sum.Checked != checked {
			t.Errorf("%s checked %d strings, another strategy %d", r.Strategy, sum.Checked, checked)
		}
		checked = sum.Checked
		for _, name := range hideNothing {
			if r.Strategy == name && (sum.Faults != 0 || sum.PageIns != 0) {
				t.Errorf("%s hides nothing but has %d faults, %d page-ins", name, sum.Faults, sum.PageIns)
			}
		}
	}
	if checked <= 0 {
		t.Errorf("no string checked")
	}
}
