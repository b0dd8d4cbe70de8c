package tools

// Definition is one of ctxstore's tools as a model is offered it: its
// name, what the model is told it does, and its parameters as a JSON
// Schema object.
type Definition struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// idParameters are the parameters of the tools that take an object id.
func idParameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"id": map[string]any{"type": "string", "description": "A tool call's id, an object id, a nickname or a file path"},
		},
		"required": []any{"id"},
	}
}

// Definitions are ctxstore's own tools, defined once: the
// service answers them at GET /v1/tools, the Pi extension registers them
// from there, and replay renders the management tools (Management) in the
// contexts it measures. read replaces the harness's own read; activate,
// deactivate, pin and unpin manage the context.
func Definitions() []Definition {
	return []Definition{
		{Name: "read", Description: "Read a file into your active context. Its content appears in a <<content id=… version=…>> block and is kept " +
			"current when the file changes on disk (a change shows as what changed). offset (first line, from 1) and limit (lines) load a part.",
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"path":   map[string]any{"type": "string", "description": "Path of the file, relative to the working directory or absolute"},
					"offset": map[string]any{"type": "number"},
					"limit":  map[string]any{"type": "number"},
				},
				"required": []any{"path"},
			}},
		{Name: "activate", Description: "Show an object's content again: a collapsed tool output or file.", Parameters: idParameters()},
		{Name: "deactivate", Description: "Collapse an object's content you no longer need.", Parameters: idParameters()},
		{Name: "pin", Description: "Keep an object's content from collapsing.", Parameters: idParameters()},
		{Name: "unpin", Description: "Let a pinned object collapse again.", Parameters: idParameters()},
		{Name: "search", Description: "Full-text search over everything ctxstore has seen: files, notes, tool outputs, chats of other " +
			"sessions, session summaries. Answers metadata lines with snippets, best first; the objects found join your metadata " +
			"pool, so activate(id) loads one. All words must occur; word* is a prefix, \"quoted words\" a phrase.",
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"query":    map[string]any{"type": "string", "description": "The words to find"},
					"kinds":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Only these kinds: file, toolcall, chat, note, user, session_meta"},
					"sessions": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Only objects of these sessions"},
					"limit":    map[string]any{"type": "number", "description": "At most this many hits (default 20)"},
				},
				"required": []any{"query"},
			}},
		{Name: "query_session", Description: "Ask a question about another session (by its id or its name, as in @@name): a cheap model " +
			"answers from that session's conversation, or, without a model, its best-matching passages with ids you can activate.",
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"session":  map[string]any{"type": "string", "description": "A session id or name"},
					"question": map[string]any{"type": "string", "description": "What to ask"},
				},
				"required": []any{"session", "question"},
			}},
	}
}

// recallTools are the Definitions of memory across sessions (context/recall).
var recallTools = map[string]bool{"search": true, "query_session": true}

// Management are the Definitions that manage the context (all but read,
// which stands in for the harness's own read, and the recall tools search
// and query_session).
func Management() []Definition {
	var out []Definition
	for _, d := range Definitions() {
		if d.Name != "read" && !recallTools[d.Name] {
			out = append(out, d)
		}
	}
	return out
}

// Defined reports whether name is one of Definitions.
func Defined(name string) bool {
	for _, d := range Definitions() {
		if d.Name == name {
			return true
		}
	}
	return false
}

// Guide tells the model how its context works: the service appends it to
// the harness's system prompt of a new session, and the replay's ctxstore
// strategies put it in their system prompt, so their figures count it.
const Guide = `# Your context (ctxstore)

Lines starting "[ctxstore]" are ctxstore's, never the user's words. Older tool outputs collapse to
"[ctxstore] collapsed: <tool> output, N chars", and a very long one shows only its start and end:
activate(<call id>) shows it whole. Files you read are "<<content id=… version=…>>" blocks (a higher
version is newer); "[ctxstore] <id> changed, version A -> B" gives the change to apply to the block
you hold, or names your own edit that made it. Files unused for a few turns collapse to their
"[ctxstore] file id=… path=…" line: activate(path or id) loads one again. read(path, offset, limit)
loads only those lines. deactivate(id) drops content you no longer need, pin(id) keeps it, unpin(id)
lets it go. A note says when something was dropped to fit the window.`
