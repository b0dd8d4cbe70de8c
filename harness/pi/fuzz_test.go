package pi

import (
	"encoding/json"
	"testing"

	"github.com/ctxstore/ctxstore/objects/events"
)

// FuzzConverter: any JSON value given as a Pi message is converted or
// reported, never a panic, and what goes into the log has a known role.
func FuzzConverter(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hi","timestamp":1}`,
		`{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"n":18446744073709551616}}],"stopReason":"toolUse"}`,
		`{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"out"}],"isError":false}`,
		`{"role":"bashExecution","command":"ls","output":"a","exitCode":0}`,
		`{"role":"compactionSummary","summary":"s"}`,
		`{"role":"assistant","content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`,
		`[1,2]`, `{"role":5}`, `{"content":{"a":[[[[]]]]}}`,
	} {
		f.Add([]byte(s), []byte(`{"role":"user","content":"next"}`))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var c Converter
		c.AddJSON(json.RawMessage(a), 1)
		c.AddJSON(json.RawMessage(b), 2)
		for _, m := range c.Log {
			if m.Role == "" {
				t.Fatalf("a message without a role: %+v", m)
			}
		}
	})
}

// FuzzDecode: any bytes decode as pi-v3 without a panic or an error, into
// events that encode.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"session","version":3,"id":"s"}` + "\n",
		`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","name":"bash"}],"stopReason":"aborted"}}` + "\n",
		`{"type":"message","message":{"role":"toolResult","content":"x"}}{"type":"compaction","summary":"s"}` + "\n",
		`{"type":"custom_message","customType":"c","content":[{"type":"image"}],"display":false}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := events.Encode(evs); err != nil {
			t.Fatalf("decoded events do not encode: %v", err)
		}
	})
}
