package objects

import (
	"strings"
	"unicode/utf8"
)

// Turn is one exchange of a chat: the user's message, the
// assistant's content blocks and the ids of the tool calls it made. Content
// blocks are kept as the provider's JSON objects ("store rich, render
// adapted"), each with a string "type": "text", "thinking", "toolCall" (with
// the provider's "id"), "image", and so on. Every field is optional and
// absent when nil.
type Turn struct {
	// User is "user": a string, or a []any of content blocks.
	User any
	// Assistant is "assistant": the assistant's content blocks.
	Assistant []map[string]any
	// ToolcallIDs is "toolcall_ids": the provider tool-call ids, which are
	// the ids of the toolcall objects.
	ToolcallIDs []string
	// AssistantMeta is "assistant_meta": api, provider, model, usage,
	// stopReason, timestamp and whatever else the harness reports.
	AssistantMeta map[string]any
	// Extra holds every other member of the turn object.
	Extra map[string]any
}

// UserText returns the text of the turn's user message: the string, or its
// "text" blocks joined with a newline ("" when it has none).
func (t Turn) UserText() string {
	switch u := t.User.(type) {
	case string:
		return u
	case []any:
		var parts []string
		for _, b := range u {
			if m, ok := b.(map[string]any); ok && m["type"] == "text" {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// turnKeys are the members of a turn object that Turn models.
var turnKeys = []string{"user", "assistant", "toolcall_ids", "assistant_meta"}

// ChatFieldsFromTurns derives a chat's fields from its turns: the session
// reference, the turn count and every toolcall id in order.
func ChatFieldsFromTurns(sessionID string, turns []Turn) ChatFields {
	refs := []string{}
	for _, t := range turns {
		refs = append(refs, t.ToolcallIDs...)
	}
	return ChatFields{
		Turns:        turns,
		SessionRef:   SessionObjectID(sessionID),
		TurnCount:    int64(len(turns)),
		ToolcallRefs: refs,
	}
}

// clone deep-copies t.
func (t Turn) clone() Turn {
	t.User = cloneValue(t.User)
	if t.Assistant != nil {
		a := make([]map[string]any, len(t.Assistant))
		for i, b := range t.Assistant {
			a[i] = cloneMap(b)
		}
		t.Assistant = a
	}
	t.ToolcallIDs = cloneStrings(t.ToolcallIDs)
	t.AssistantMeta = cloneMap(t.AssistantMeta)
	t.Extra = cloneMap(t.Extra)
	return t
}

// doc validates t and returns its JSON object; path names t in errors.
func (t Turn) doc(path string) (map[string]any, error) {
	m := map[string]any{}
	switch u := t.User.(type) {
	case nil:
	case string:
		if !utf8.ValidString(u) {
			return nil, fieldErr(joinPath(path, "user"), ErrInvalidUTF8, "string is not valid UTF-8")
		}
		m["user"] = u
	default:
		blocks, err := contentBlocks(u, joinPath(path, "user"))
		if err != nil {
			return nil, err
		}
		m["user"] = blocks
	}
	if t.Assistant != nil {
		blocks, err := contentBlocks(t.Assistant, joinPath(path, "assistant"))
		if err != nil {
			return nil, err
		}
		m["assistant"] = blocks
	}
	if t.ToolcallIDs != nil {
		p := joinPath(path, "toolcall_ids")
		if err := checkIDList(p, t.ToolcallIDs); err != nil {
			return nil, err
		}
		m["toolcall_ids"] = stringsToAny(t.ToolcallIDs)
	}
	if t.AssistantMeta != nil {
		meta, err := normalize(t.AssistantMeta, joinPath(path, "assistant_meta"), 1)
		if err != nil {
			return nil, err
		}
		m["assistant_meta"] = meta
	}
	for k, v := range t.Extra {
		for _, known := range turnKeys {
			if k == known {
				return nil, fieldErr(joinPath(path, k), nil, "extra member shadows a modeled turn field")
			}
		}
		n, err := normMember(k, v, path, 1)
		if err != nil {
			return nil, err
		}
		m[k] = n
	}
	return m, nil
}

// contentBlocks normalises v as an array of content blocks: JSON objects
// with a non-empty string "type".
func contentBlocks(v any, path string) ([]any, error) {
	n, err := normalize(v, path, 1)
	if err != nil {
		return nil, err
	}
	arr, ok := n.([]any)
	if !ok {
		return nil, fieldErr(path, nil, "must be a string or an array of content blocks, got %s", typeName(n))
	}
	for i, b := range arr {
		p := indexPath(path, i)
		obj, ok := b.(map[string]any)
		if !ok {
			return nil, fieldErr(p, nil, "content block must be an object, got %s", typeName(b))
		}
		if s, ok := obj["type"].(string); !ok || s == "" {
			return nil, fieldErr(joinPath(p, "type"), nil, "content block needs a non-empty string type")
		}
	}
	return arr, nil
}

// turnFromDoc reads a turn object; path names it in errors.
func turnFromDoc(v any, path string) (Turn, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Turn{}, fieldErr(path, nil, "turn must be an object, got %s", typeName(v))
	}
	var t Turn
	for k, e := range m {
		p := joinPath(path, k)
		switch k {
		case "user":
			switch e.(type) {
			case string, []any:
				t.User = cloneValue(e)
			default:
				return Turn{}, fieldErr(p, nil, "must be a string or an array of content blocks, got %s", typeName(e))
			}
		case "assistant":
			arr, ok := e.([]any)
			if !ok {
				return Turn{}, fieldErr(p, nil, "must be an array of content blocks, got %s", typeName(e))
			}
			t.Assistant = make([]map[string]any, len(arr))
			for i, b := range arr {
				obj, ok := b.(map[string]any)
				if !ok {
					return Turn{}, fieldErr(indexPath(p, i), nil, "content block must be an object, got %s", typeName(b))
				}
				t.Assistant[i] = cloneMap(obj)
			}
		case "toolcall_ids":
			ids, err := stringList(e, p)
			if err != nil {
				return Turn{}, err
			}
			t.ToolcallIDs = ids
		case "assistant_meta":
			obj, ok := e.(map[string]any)
			if !ok {
				return Turn{}, fieldErr(p, nil, "must be an object, got %s", typeName(e))
			}
			t.AssistantMeta = cloneMap(obj)
		default:
			if t.Extra == nil {
				t.Extra = map[string]any{}
			}
			t.Extra[k] = cloneValue(e)
		}
	}
	if _, err := t.doc(path); err != nil {
		return Turn{}, err
	}
	return t, nil
}

// stringList reads a JSON array of strings.
func stringList(v any, path string) ([]string, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fieldErr(path, nil, "must be an array of strings, got %s", typeName(v))
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, fieldErr(indexPath(path, i), nil, "must be a string, got %s", typeName(e))
		}
		out[i] = s
	}
	return out, nil
}

// stringsToAny converts s to a JSON array.
func stringsToAny(s []string) []any {
	out := make([]any, len(s))
	for i, e := range s {
		out[i] = e
	}
	return out
}

// Doc validates t and returns its JSON object, as it appears in a chat's
// "turns" (the session package stores each turn of a chat in a document of
// its own).
func (t Turn) Doc() (map[string]any, error) { return t.doc("turn") }

// TurnFromDoc reads a turn object as Doc writes it.
// Values are normalised as FromDoc normalises a document.
func TurnFromDoc(v any) (Turn, error) {
	n, err := normalize(v, "turn", 1)
	if err != nil {
		return Turn{}, err
	}
	return turnFromDoc(n, "turn")
}
