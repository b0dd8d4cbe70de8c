package collapse

import (
	"fmt"
	"reflect"
	"testing"
)

// calls builds n counted calls in turn, with ids "t<turn>-<i>" and
// increasing seq starting at seq0.
func calls(turn, n int, seq0 int64) []Call {
	out := make([]Call, n)
	for i := range out {
		out[i] = Call{ID: fmt.Sprintf("t%d-%d", turn, i), Turn: turn, Seq: seq0 + int64(i)}
	}
	return out
}

func join(cs ...[]Call) []Call {
	var out []Call
	for _, c := range cs {
		out = append(out, c...)
	}
	return out
}

func TestDecide(t *testing.T) {
	mgmt := Call{ID: "m", Turn: 5, Seq: 100, Management: true}
	pinnedOld := Call{ID: "p", Turn: 0, Seq: 0, Pinned: true}
	tests := []struct {
		name     string
		calls    []Call
		current  int
		cfg      Config
		keep     []string
		collapse []string
		ignored  []string
	}{
		{name: "empty", current: 3, cfg: Default()},
		{name: "under the limit", calls: calls(1, 3, 1), current: 1, cfg: Default(),
			keep: []string{"t1-2", "t1-1", "t1-0"}},
		{name: "five per turn", calls: calls(1, 7, 1), current: 1, cfg: Default(),
			keep:     []string{"t1-6", "t1-5", "t1-4", "t1-3", "t1-2"},
			collapse: []string{"t1-1", "t1-0"}},
		{name: "three turns back", calls: join(calls(1, 1, 1), calls(2, 1, 2), calls(3, 1, 3), calls(4, 1, 4)), current: 4, cfg: Default(),
			keep: []string{"t4-0", "t3-0", "t2-0"}, collapse: []string{"t1-0"}},
		{name: "a new turn without calls still ages old ones", calls: calls(1, 2, 1), current: 4, cfg: Default(),
			collapse: []string{"t1-1", "t1-0"}},
		{name: "pinned never collapse and take no slot", calls: join([]Call{pinnedOld}, calls(5, 5, 1)), current: 5, cfg: Default(),
			keep: []string{"t5-4", "t5-3", "t5-2", "t5-1", "t5-0", "p"}},
		{name: "management calls do not count", calls: join(calls(5, 5, 1), []Call{mgmt}), current: 5, cfg: Default(),
			keep: []string{"t5-4", "t5-3", "t5-2", "t5-1", "t5-0"}, ignored: []string{"m"}},
		{name: "configurable", calls: join(calls(1, 2, 1), calls(2, 3, 10)), current: 2, cfg: Config{PerTurn: 2, TurnsBack: 1},
			keep: []string{"t2-2", "t2-1"}, collapse: []string{"t2-0", "t1-1", "t1-0"}},
		{name: "zero keeps nothing", calls: calls(1, 2, 1), current: 1, cfg: Config{},
			collapse: []string{"t1-1", "t1-0"}},
		{name: "re-activated call counts at its new turn", calls: []Call{{ID: "old", Turn: 9, Seq: 50}, {ID: "x", Turn: 1, Seq: 1}}, current: 9, cfg: Default(),
			keep: []string{"old"}, collapse: []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.calls, tt.current, tt.cfg)
			if !reflect.DeepEqual(d.Keep, tt.keep) || !reflect.DeepEqual(d.Collapse, tt.collapse) || !reflect.DeepEqual(d.Ignored, tt.ignored) {
				t.Errorf("got keep=%v collapse=%v ignored=%v\nwant keep=%v collapse=%v ignored=%v",
					d.Keep, d.Collapse, d.Ignored, tt.keep, tt.collapse, tt.ignored)
			}
			// Order of input does not matter.
			rev := append([]Call(nil), tt.calls...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			if d2 := Decide(rev, tt.current, tt.cfg); !reflect.DeepEqual(d, d2) {
				t.Errorf("order dependent: %+v vs %+v", d, d2)
			}
		})
	}
}

// File loads (reads) have slots of their own and follow the same window.
func TestDecideFiles(t *testing.T) {
	file := func(id string, turn int, seq int64) Call { return Call{ID: id, Turn: turn, Seq: seq, File: true} }
	outputs := calls(3, 5, 10) // five outputs fill the turn's output slots
	for _, tc := range []struct {
		name     string
		calls    []Call
		cfg      Config
		keep     []string
		collapse []string
	}{
		{"files do not take output slots", append(outputs, file("r1", 3, 1)), Default(),
			[]string{"t3-4", "t3-3", "t3-2", "t3-1", "t3-0", "r1"}, nil},
		{"six reads in a turn: the oldest collapses",
			[]Call{file("r1", 3, 1), file("r2", 3, 2), file("r3", 3, 3), file("r4", 3, 4), file("r5", 3, 5), file("r6", 3, 6)}, Default(),
			[]string{"r6", "r5", "r4", "r3", "r2"}, []string{"r1"}},
		{"out of the turn window", []Call{file("old", 0, 1), file("new", 3, 2)}, Default(), []string{"new"}, []string{"old"}},
		{"FilesPerTurn of its own", []Call{file("r1", 3, 1), file("r2", 3, 2)}, Config{PerTurn: 5, TurnsBack: 3, FilesPerTurn: 1},
			[]string{"r2"}, []string{"r1"}},
		{"negative: files stay", []Call{file("old", 0, 1)}, Config{PerTurn: 5, TurnsBack: 3, FilesPerTurn: -1}, []string{"old"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.calls, 3, tc.cfg)
			if !reflect.DeepEqual(d.Keep, tc.keep) || !reflect.DeepEqual(d.Collapse, tc.collapse) {
				t.Fatalf("keep %v collapse %v, want %v and %v", d.Keep, d.Collapse, tc.keep, tc.collapse)
			}
		})
	}
}

// The budget: beyond the most recent PerTurn outputs and FilesPerTurn file
// loads, kept calls stay only while they fit, most recent first.
func TestDecideBudget(t *testing.T) {
	sized := func(id string, turn int, seq int64, tokens int, file bool) Call {
		return Call{ID: id, Turn: turn, Seq: seq, Tokens: tokens, File: file}
	}
	cfg := Config{PerTurn: 2, TurnsBack: 3, Budget: 1000}
	for _, tc := range []struct {
		name     string
		calls    []Call
		keep     []string
		collapse []string
	}{
		{"the most recent are kept whatever their size",
			[]Call{sized("a", 3, 1, 5000, false), sized("b", 3, 2, 5000, false)}, []string{"b", "a"}, nil},
		{"an older large output goes, a smaller older one stays",
			[]Call{sized("old-small", 1, 1, 100, false), sized("big", 2, 2, 900, false), sized("r1", 3, 3, 300, false), sized("r2", 3, 4, 300, false)},
			[]string{"r2", "r1", "old-small"}, []string{"big"}},
		{"without sizes nothing changes",
			[]Call{sized("a", 1, 1, 0, false), sized("b", 2, 2, 0, false), sized("c", 3, 3, 0, false)}, []string{"c", "b", "a"}, nil},
		{"file loads have recent slots of their own",
			[]Call{sized("f-old", 1, 1, 800, true), sized("f1", 3, 2, 600, true), sized("f2", 3, 3, 600, true), sized("out", 3, 4, 10, false)},
			[]string{"out", "f2", "f1"}, []string{"f-old"}},
		{"pinned calls are not counted", []Call{{ID: "p", Turn: 1, Seq: 1, Tokens: 50000, Pinned: true},
			sized("x", 1, 2, 600, false), sized("y", 2, 3, 10, false), sized("z", 3, 4, 10, false)},
			[]string{"z", "y", "x", "p"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.calls, 3, cfg)
			if !reflect.DeepEqual(d.Keep, tc.keep) || !reflect.DeepEqual(d.Collapse, tc.collapse) {
				t.Fatalf("keep %v collapse %v, want %v and %v", d.Keep, d.Collapse, tc.keep, tc.collapse)
			}
		})
	}
}
