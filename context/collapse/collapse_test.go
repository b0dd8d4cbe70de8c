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
