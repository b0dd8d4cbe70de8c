package ccproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/ccmanaged/apicheck"
	"github.com/ctxstore/ctxstore/integrations/claudecode/hooks"
)

// FuzzManaged drives managed mode with arbitrary bodies, twice in a row
// (the second with the state the first left): no panic; a body it does
// not understand is an errUnknown; a managed body is a request the
// Messages API's rules accept whenever Claude Code's was, and changes
// nothing but tool_result contents and message breakpoints.
func FuzzManaged(f *testing.F) {
	c := &conv{session: "s1"}
	c.user("Go.")
	for i := range 9 {
		c.call("Bash", map[string]any{"command": fmt.Sprint(i)}, output(fmt.Sprint(i), 60))
	}
	c.call("Read", map[string]any{"file_path": "/a"}, output("a", 60))
	c.call("Read", map[string]any{"file_path": "/a"}, output("b", 60))
	f.Add(c.body(&testing.T{}))
	for _, s := range []string{
		`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral","ttl":"1h"}}]}],"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]}`,
		`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"redacted_thinking","data":"x"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}}]}]}]}`,
		`{"messages":[{"role":"system","content":"x"}]}`, `{"messages":[{"role":"user","content":[1]}]}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte) {
		mc := &ManagedConfig{Spill: hooks.Spill{Root: root}, MinChars: 100}
		var st convState
		now := time.Now()
		for i := range 2 {
			out, _, err := mc.manage("s1", &st, body, now.Add(time.Duration(i)*time.Second), 5*time.Minute)
			if err != nil {
				var u errUnknown
				if !errors.As(err, &u) && json.Valid(body) {
					t.Fatalf("not an errUnknown: %v", err)
				}
				return
			}
			if len(apicheck.Check(body)) == 0 {
				if errs := apicheck.Check(out); len(errs) > 0 {
					t.Fatalf("a valid request became an invalid one: %v\n%s", errs, out)
				}
				if err := apicheck.Preserved(body, out); err != nil {
					t.Fatalf("changed beyond what it may: %v", err)
				}
			}
		}
	})
}
