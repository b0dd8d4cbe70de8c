package objects

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// fixedTime is the clock every test uses.
var fixedTime = time.Date(2026, 2, 21, 12, 0, 0, 0, time.UTC)

// testUUID mints a deterministic UUIDv7 whose random bits are all seed.
func testUUID(t testing.TB, seed byte) string {
	t.Helper()
	id, err := NewUUIDv7(fixedTime, bytes.NewReader(bytes.Repeat([]byte{seed}, 16)))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// mustFn returns a function that fails t on err and otherwise returns o.
func mustFn(t testing.TB) func(o *Object, err error) *Object {
	return func(o *Object, err error) *Object {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
}

// sampleObjects returns one sealed object of every kind, keyed by a name.
func sampleObjects(t testing.TB) map[string]*Object {
	t.Helper()
	mustObj := mustFn(t)
	src := FilesystemSource{FilesystemID: "fs-host-1", Path: "/workspace/src/main.go"}
	turns := []Turn{{
		User: "list the files",
		Assistant: []map[string]any{
			{"type": "text", "text": "Let me look."},
			{"type": "toolCall", "id": "toolu_01", "name": "bash", "arguments": map[string]any{"command": "ls -la"}},
		},
		ToolcallIDs:   []string{"toolu_01"},
		AssistantMeta: map[string]any{"provider": "anthropic", "model": "claude", "stopReason": "toolUse", "timestamp": int64(1771675200000)},
	}}
	return map[string]*Object{
		"file": mustObj(NewFile(src, Str("package main\n"), []byte("package main\n"))),
		"toolcall": mustObj(NewToolcall("toolu_01", ToolcallFields{
			Tool: "bash", Args: map[string]any{"command": "ls -la"}, Status: StatusOK,
			ChatRef: "chat:s1", FileRefs: []string{},
		}, Str("a.txt\nb.txt\n"))),
		"chat":          mustObj(NewChat("s1", turns, nil)),
		"system_prompt": mustObj(NewSystemPrompt("s1", "You are helpful.")),
		"session":       mustObj(NewSession("s1", map[string]any{"harness": "pi", "active_set": []any{"toolu_01"}})),
		"note": mustObj(NewNote(testUUID(t, 1), NoteFields{
			Title: "Plan", Tags: []string{"todo", "ctx/design"}, Links: []string{"other-note"},
		}, Str("# Plan\n#todo see [[other-note]]\n"))),
		"user": mustObj(NewUser(testUUID(t, 2), Str("a large paste"))),
	}
}

// mustDoc returns o.Doc() or fails.
func mustDoc(t testing.TB, o *Object) map[string]any {
	t.Helper()
	d, err := o.Doc()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// canon returns Canonical(v) as a string or fails.
func canon(t testing.TB, v any) string {
	t.Helper()
	c, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

// jsonRoundTrip marshals v and decodes it back, with json.Number if useNumber.
func jsonRoundTrip(t testing.TB, v any, useNumber bool) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if useNumber {
		dec.UseNumber()
	}
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// wantErr checks that err wraps target and mentions every fragment.
func wantErr(t testing.TB, err, target error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error wrapping %v, got nil", target)
	}
	if target != nil && !errors.Is(err, target) {
		t.Fatalf("error %q does not wrap %v", err, target)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("error %q does not mention %q", err, f)
		}
	}
}
