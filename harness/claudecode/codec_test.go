package claudecode_test

import (
	"testing"

	"github.com/ctxstore/ctxstore/harness/claudecode"
	"github.com/ctxstore/ctxstore/objects/events"
)

// FuzzDecode: any bytes decode as claude-code-v1 without a panic or an
// error, into events that encode (events-v1 validates every one).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"user","uuid":"u","message":{"role":"user","content":"hi"}}` + "\n",
		`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","name":"Bash"}]}}` + "\n",
		`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"image"}]}]}}` + "\n",
		`{"type":"system","subtype":"compact_boundary","compactMetadata":{"trigger":"auto"}}{"type":"x"}` + "\n",
		"{\"type\":\"user\",\"message\":{\"content\":\"\xff\"}}\n{\"type\":",
		`{"type":"result","subtype":"success","total_cost_usd":"x","usage":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := claudecode.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := events.Encode(evs); err != nil {
			t.Fatalf("decoded events do not encode: %v", err)
		}
	})
}
