package sweagent

import (
	"strings"
	"testing"
)

// FuzzRead: any bytes read as a trajectory give messages or reported
// problems, never a panic, and what comes out keeps the invariants (tool
// results after their calls, once; line numbers in range).
func FuzzRead(f *testing.F) {
	f.Add([]byte(small))
	f.Add([]byte(small[:len(small)/2]))
	f.Add([]byte(small + small))
	f.Add([]byte(strings.Replace(small, `"role": "user"`, `"role": 5`, -1)))
	f.Add([]byte(`{"history": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "x", "arguments": "{\"n\": 18446744073709551616}"}}]}, {"role": "tool", "tool_call_ids": "c"}, {"role": "tool", "tool_call_ids": ["c", "d"]}]}`))
	f.Add([]byte(`{"history": [{"role": "assistant", "tool_calls": [{"id": "c"}, {"id": "c"}]}, {"role": "tool", "tool_call_ids": ["c"]}, {"role": "tool", "tool_call_ids": ["c"]}]}`))
	f.Add([]byte(`{"trajectory": [{"action": "a"}, 1, null], "history": null}`))
	f.Add([]byte("{\n\"history\": [[[[[[]]]]]], \"info\": {\"model_stats\": {\"tokens_sent\": \"x\"}}}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		read(t, in)
	})
}
