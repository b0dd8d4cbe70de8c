package apicheck

import (
	"errors"
	"strings"
	"testing"
)

// req is a request with the given messages (JSON) and extra top-level
// fields.
func req(msgs, extra string) []byte {
	return []byte(`{"model":"claude-x","max_tokens":100,` + extra + `"messages":[` + msgs + `]}`)
}

const (
	user  = `{"role":"user","content":"hi"}`
	asks  = `{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]}`
	reply = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}`
)

func TestCheck(t *testing.T) {
	cc := `"cache_control":{"type":"ephemeral"}`
	cc1h := `"cache_control":{"type":"ephemeral","ttl":"1h"}`
	for _, tc := range []struct {
		name, body, want string // want "" : valid
	}{
		{"valid", string(req(user+","+asks+","+reply, "")), ""},
		{"system-role message", string(req(user+`,{"role":"system","content":"note"},`+asks+","+reply, "")), ""},
		{"server tool", string(req(user+`,{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"text","text":"found"}]}`, "")), ""},
		{"unanswered tool use", string(req(user+","+asks+","+user, "")), "has no tool_result in the message after it"},
		{"tool use then assistant", string(req(user+","+asks+`,{"role":"assistant","content":"x"}`, "")), "no tool_result blocks immediately after"},
		{"result answers nothing", string(req(user+","+reply, "")), "answers no tool_use"},
		{"result after text", string(req(user+","+asks+`,{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}`, "")), "tool_result blocks come first"},
		{"tool use twice", string(req(user+","+asks+","+reply+","+asks+","+reply, "")), "used twice"},
		{"thinking without signature", string(req(user+`,{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"x"}]}`, "")), "without its signature"},
		{"thinking in a user message", string(req(`{"role":"user","content":[{"type":"thinking","thinking":"t","signature":"s"}]}`, "")), "a thinking block in a user message"},
		{"breakpoint on thinking", string(req(user+`,{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s",`+cc+`},{"type":"text","text":"x"}]}`, "")), "cache_control on a thinking block"},
		{"five breakpoints", string(req(`{"role":"user","content":[{"type":"text","text":"a",`+cc+`},{"type":"text","text":"b",`+cc+`},{"type":"text","text":"c",`+cc+`},{"type":"text","text":"d",`+cc+`},{"type":"text","text":"e",`+cc+`}]}`, "")), "5 breakpoints"},
		{"an hour after five minutes", string(req(`{"role":"user","content":[{"type":"text","text":"a",`+cc1h+`}]}`, `"system":[{"type":"text","text":"s",`+cc+`}],`)), "1h breakpoint after the 5m"},
		{"empty text", string(req(`{"role":"user","content":[{"type":"text","text":" "}]}`, "")), "without text"},
		{"unknown block", string(req(`{"role":"user","content":[{"type":"novel"}]}`, "")), "unknown block type"},
		{"bad role", string(req(`{"role":"tool","content":"x"}`, "")), `role "tool"`},
		{"empty content", string(req(`{"role":"user","content":[]}`, "")), "empty content"},
		{"no max_tokens", `{"model":"m","messages":[` + user + `]}`, "max_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := errors.Join(Check([]byte(tc.body))...)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("a valid request refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestPreserved(t *testing.T) {
	orig := req(user+","+asks+","+reply, `"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],`)
	ok := req(`{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]},`+asks+
		`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"[ctxstore] collapsed"}]}`,
		`"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"1h"}}],`)
	if err := Preserved(orig, ok); err != nil {
		t.Errorf("an allowed change refused: %v", err)
	}
	for name, bad := range map[string][]byte{
		"signature": req(user+","+strings.Replace(asks, `"signature":"s"`, `"signature":"z"`, 1)+","+reply, `"system":[{"type":"text","text":"s"}],`),
		"system":    req(user+","+asks+","+reply, `"system":[{"type":"text","text":"S"}],`),
		"dropped":   req(user, `"system":[{"type":"text","text":"s"}],`),
		"field":     req(user+","+asks+","+reply, `"system":[{"type":"text","text":"s"}],"temperature":1,`),
		"tool id":   req(user+","+asks+","+strings.Replace(reply, `"toolu_1"`, `"toolu_2"`, 1), `"system":[{"type":"text","text":"s"}],`),
	} {
		if Preserved(orig, bad) == nil {
			t.Errorf("%s: a forbidden change passed", name)
		}
	}
}
