package httpapi

import (
	"strings"
	"testing"
)

// TestSearchRoutes: the store-wide search (unrestricted tokens) and the
// agent's search tool, which a token limited to a session uses to find only
// what that session may see.
func TestSearchRoutes(t *testing.T) {
	const all, onlyA = "token-for-everything-0123", "token-for-session-a-0123"
	e := newEnv(t, func(o *Options) {
		o.Tokens = []Token{{Secret: all}, {Secret: onlyA, Sessions: []string{"a"}}}
	})
	e.token = all
	e.open("a")
	e.open("b")
	// Session b runs a command whose output mentions a rare word.
	out := "error: the flux capacitor overheated"
	e.ok("POST", "/v1/sessions/b/observe", ObserveRequest{ToolCallID: "call_b1", Tool: "bash",
		Args: map[string]any{"command": "make"}, Output: &out}, nil)

	var sr SearchResponse
	e.ok("POST", "/v1/search", SearchRequest{Text: "capacitor"}, &sr)
	if len(sr.Hits) != 1 || sr.Hits[0].ID != "call_b1" || sr.Hits[0].Session != "b" || !strings.Contains(sr.Hits[0].Snippet, "«capacitor»") {
		t.Fatalf("search: %+v", sr)
	}
	e.ok("POST", "/v1/search", SearchRequest{Text: "capacitor", Kinds: []string{"note"}}, &sr)
	if len(sr.Hits) != 0 {
		t.Errorf("kind note: %+v", sr)
	}
	e.fails(400, CodeBadRequest, "POST", "/v1/search", SearchRequest{Text: "*** ..."})

	// The tool with an unrestricted token finds it and pools it in a.
	var tr ToolResponse
	e.ok("POST", "/v1/sessions/a/tools/search", ToolRequest{ToolCallID: "call_a1", Args: map[string]any{"query": "capacitor"}}, &tr)
	if !tr.OK || !strings.Contains(tr.Message, "id=call_b1") {
		t.Fatalf("search tool: %+v", tr)
	}
	e.ok("POST", "/v1/sessions/a/tools/activate", ToolRequest{Args: map[string]any{"id": "call_b1"}}, &tr)
	if !tr.OK {
		t.Fatalf("activating the found toolcall: %+v", tr)
	}

	// A token limited to a: no store-wide search, and the tool does not
	// see b's toolcall.
	e.token = onlyA
	e.fails(403, CodeForbidden, "POST", "/v1/search", SearchRequest{Text: "capacitor"})
	e.ok("POST", "/v1/sessions/a/tools/search", ToolRequest{Args: map[string]any{"query": "capacitor"}}, &tr)
	if !tr.OK || strings.Contains(tr.Message, "call_b1") {
		t.Fatalf("limited token found another session's toolcall: %+v", tr)
	}
	e.fails(403, CodeForbidden, "POST", "/v1/sessions/b/tools/search", ToolRequest{Args: map[string]any{"query": "capacitor"}})
}
