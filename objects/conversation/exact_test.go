package conversation

import (
	"encoding/json"
	"testing"
)

func TestExact(t *testing.T) {
	for s, ok := range map[string]bool{
		"1": true, "-0": true, "1.5": true, "0.1": true, "1e21": true, "1e300": true, "9007199254740992": true,
		"9007199254740993": false, "18446744073709551616": false, "1.2345678901234567e19": false,
		"0.10000000000000001": false, "1e400": false,
	} {
		if Storable(s) != ok {
			t.Errorf("Storable(%s) = %v", s, !ok)
		}
	}
	m := Message{Role: RoleAssistant, ToolCalls: []ToolCall{
		{ID: "a", Args: map[string]any{"n": json.Number("18446744073709551616"), "k": json.Number("3"), "deep": []any{map[string]any{"x": json.Number("9007199254740993")}}}},
		{ID: "b", Args: map[string]any{"s": "x"}},
	}}
	e := m.Exact()
	a := e.ToolCalls[0].Args
	if a["n"] != "18446744073709551616" || a["k"] != json.Number("3") || a["deep"].([]any)[0].(map[string]any)["x"] != "9007199254740993" {
		t.Fatalf("exact args %v", a)
	}
	if m.ToolCalls[0].Args["n"] != json.Number("18446744073709551616") {
		t.Fatal("Exact changed its input")
	}
	if e.ToolCalls[1].Args["s"] != "x" {
		t.Fatal("untouched args changed")
	}
}
