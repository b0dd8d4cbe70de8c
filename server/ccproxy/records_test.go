package ccproxy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"
)

// body is a request whose messages are a prompt, then for each tool use
// id an assistant tool use and its result (content results[id], else
// "out").
func body(prompt string, results map[string]string, ids ...string) []byte {
	msgs := []string{fmt.Sprintf(`{"role":"user","content":%q}`, prompt)}
	for _, id := range ids {
		out, ok := results[id]
		if !ok {
			out = "out"
		}
		msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Bash","input":{}}]}`, id),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":%q}]}`, id, out))
	}
	return []byte(`{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`)
}

// TestMatch: a main thread and a subagent started while it waits on the
// Agent tool, each conversation's first request without a tool use, a
// retried request, a request passed through unmanaged, and an exact
// recording paired by its SHA-256 although its tool uses say otherwise.
func TestMatch(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	collapsed := map[string]string{"toolu_m1": "[ctxstore] output collapsed"}
	type mc struct {
		conv string
		t    float64
		b    []byte
	}
	managed := []mc{
		{"main", 0, body("task", nil)},                                        // 0: main's first
		{"main", 3, body("task", nil, "toolu_m1")},                            // 1: failed, retried
		{"main", 4, body("task", nil, "toolu_m1")},                            // 2: the retry
		{"sub", 6, body("subtask", nil)},                                      // 3: the subagent's first
		{"sub", 9, body("subtask", nil, "toolu_s1")},                          // 4
		{"main", 12, body("task", collapsed, "toolu_m1", "toolu_agent")},      // 5
		{"main", 20, body("task", collapsed, "toolu_m1", "toolu_agent", "x")}, // 6: exact
	}
	var calls []RecordedCall
	var sent [][]byte
	for i, m := range managed {
		calls = append(calls, RecordedCall{N: i + 1, Conversation: m.conv, Time: at(m.t)})
		sent = append(sent, m.b)
	}
	exact := []byte(`{"recorded":"exactly"}`)
	sum := sha256.Sum256(exact)
	calls[6].Asked = hex.EncodeToString(sum[:])
	asked := []Asked{
		{N: 1, Time: at(2), Body: body("task", nil)},
		{N: 2, Time: at(5), Body: body("task", nil, "toolu_m1")},
		{N: 3, Lane: "agent-1", Time: at(7), Body: body("subtask", nil)},
		{N: 4, Lane: "agent-1", Time: at(10), Body: body("subtask", nil, "toolu_s1")},
		{N: 5, Time: at(13), Body: body("task", nil, "toolu_m1", "toolu_agent")},
		{N: 6, Time: at(16), Body: body("task", nil, "toolu_m1", "toolu_agent", "toolu_m2")}, // passed through
		{N: 7, Time: at(21), Body: exact},
	}
	got := Match(calls, sent, asked)
	want := []int{0, 2, 3, 4, 5, -1, 6}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Match = %v, want %v", got, want)
	}
	// The subagent's first request goes to its lane even when the main
	// thread's first is not yet answered, by the conversations the other
	// pairs tie.
	asked[0].Time = at(6.5)
	if got := Match(calls, sent, asked); got[0] != 0 || got[2] != 3 {
		t.Fatalf("first requests crossed: %v", got)
	}

	ch := Changes(asked[4].Body, sent[5])
	if len(ch) != 1 || ch[0].ToolUseID != "toolu_m1" || ch[0].Asked != 3 || ch[0].Sent != len("[ctxstore] output collapsed") || ch[0].Missing {
		t.Fatalf("Changes = %+v", ch)
	}
	if ch := Changes(sent[4], sent[4]); len(ch) != 0 {
		t.Fatalf("Changes of a request with itself: %+v", ch)
	}
	if ch := Changes(body("task", nil), sent[2]); len(ch) != 1 || !ch[0].Missing {
		t.Fatalf("a result the asked request lacks: %+v", ch)
	}
}
