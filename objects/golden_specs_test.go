package objects

import (
	"encoding/hex"
	"encoding/json"
	"testing"
)

// canonicalSpecs are the inputs of the canonical JSON vectors.
func canonicalSpecs() []canonicalVector {
	return []canonicalVector{
		{Name: "object key order", Input: `{"b":2,"a":1,"c":{"z":null,"y":[]}}`},
		{Name: "keys sort by UTF-16 code units", Input: `{"\ue000":1,"\ud83d\ude00":2,"\u00e9":3,"a":4,"A":5,"":6}`},
		{Name: "string escapes", Input: `{"s":"quote \" backslash \\ slash \/ nl \n cr \r tab \t bs \b ff \f ctl \u0001 del \u007f html <>& ls \u2028"}`},
		{Name: "unicode text", Input: `{"s":"héllo wörld ✓ 😀 中文 \u00e9"}`},
		{Name: "numbers", Input: `[0,-0,1,-1,1.5,-1.5,0.1,1e21,1E21,1e20,1e-6,1e-7,2.50,100,1.0,9007199254740992,-9007199254740992,123456789012345680000,5e-324,1.7976931348623157e308]`},
		{Name: "empty containers and literals", Input: `{"a":[],"o":{},"n":null,"t":true,"f":false,"s":""}`},
		{Name: "whitespace", Input: " {\n\t\"a\" : [ 1 , 2 ] \r\n} "},
		{Name: "nested args", Input: `{"args":{"command":"ls -la","opts":{"depth":2,"follow":false,"globs":["*.go","**/*.md"]},"env":[]}}`},
		{Name: "top-level string", Input: `"x"`},
		{Name: "integer above 2^53", Input: `{"n":9007199254740993}`},
		{Name: "2^60 written in full", Input: `[1152921504606846976]`},
		{Name: "more precision than a double", Input: `[0.10000000000000001]`},
		{Name: "number overflow", Input: `[1e400]`},
		{Name: "duplicate key", Input: `{"a":1,"a":2}`},
		{Name: "lone surrogate", Input: `{"s":"\ud800"}`},
		{Name: "invalid UTF-8", InputHex: hex.EncodeToString([]byte("{\"s\":\"\xff\"}"))},
	}
}

type sourceSpec struct {
	name string
	raw  []byte
}

// sourceSpecs are the inputs of the source_hash vectors.
func sourceSpecs() []sourceSpec {
	return []sourceSpec{
		{"empty file", []byte{}},
		{"text file", []byte("package main\n")},
		{"binary bytes", []byte{0x89, 'P', 'N', 'G', 0, 0xff, 0xfe}},
	}
}

type objectSpec struct {
	name string
	obj  *Object
}

// objectSpecs are the objects of the object vectors.
func objectSpecs(t *testing.T) []objectSpec {
	must := mustFn(t)
	samples := sampleObjects(t)
	fs := "6f1ed002ab5595859014ebf0951522d9"
	unicodeFile := must(NewFile(FilesystemSource{FilesystemID: fs, Path: "/workspace/docs/naïve café.md"},
		Str("# Café ☕\n\"quoted\" \\ tab\t😀 \u2028\n"), []byte("# Café ☕\n\"quoted\" \\ tab\t😀 \u2028\n")))
	deleted := must(NewFile(FilesystemSource{FilesystemID: fs, Path: "/workspace/gone.bin"}, nil, nil))
	deleted.Nickname = "gone"
	if err := deleted.Seal(); err != nil {
		t.Fatal(err)
	}
	nested := must(NewToolcall("call_nested_1", ToolcallFields{
		Tool: "grep",
		Args: map[string]any{
			"pattern": "TODO\\(\"x\"\\)",
			"opts": map[string]any{
				"limit": 1.5, "big": 1e21, "n": int64(3), "neg": int64(-9007199254740992),
				"list": []any{}, "obj": map[string]any{},
				"nested": map[string]any{"deep": []any{int64(1), "two", nil, true, json.Number("2.50")}},
			},
		},
		ArgsDisplay: `grep "TODO" (limit 1.5)`,
		Status:      StatusFail,
		ChatRef:     "chat:sess-1",
		FileRefs:    []string{unicodeFile.ID()},
	}, Str("grep: bad pattern\n")))
	noOutput := must(NewToolcall("toolu_01XFDUDYJgAACzvnptvVer6R", ToolcallFields{
		Tool: "bash", Args: map[string]any{"command": "true"}, Status: StatusOK, ProviderID: "provider-7",
	}, nil))
	withExtra := samples["toolcall"].Clone()
	withExtra.Extra = map[string]any{
		"short_summary": "listed two files",
		"provenance":    map[string]any{"origin": "toolcall", "generator": "tool", "parent_refs": []any{}},
	}
	if err := withExtra.Seal(); err != nil {
		t.Fatal(err)
	}
	chat := must(NewChat("sess-1", []Turn{
		{
			User: []any{map[string]any{"type": "text", "text": "Résumé this: 😀"}, map[string]any{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}},
			Assistant: []map[string]any{
				{"type": "thinking", "thinking": "Need grep.", "thinkingSignature": "sig"},
				{"type": "toolCall", "id": "call_nested_1", "name": "grep", "arguments": map[string]any{"pattern": "TODO"}},
			},
			ToolcallIDs: []string{"call_nested_1"},
			AssistantMeta: map[string]any{
				"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet", "stopReason": "toolUse",
				"timestamp": int64(1771675200123),
				"usage":     map[string]any{"input": int64(1200), "output": int64(40), "cost": map[string]any{"total": 0.00123}},
			},
		},
		{User: "thanks", Assistant: []map[string]any{{"type": "text", "text": "Done."}}, ToolcallIDs: []string{}},
	}, Str("--- user\nthanks\n")))
	note := must(NewNote(testUUID(t, 0x42), NoteFields{
		Title: "Design: refs", Tags: []string{"design", "refs/static"}, Links: []string{"chat:sess-1", "Other Note"},
		Aliases: []string{}, Frontmatter: map[string]any{"status": "draft", "priority": int64(2), "tags": []any{"design"}},
	}, Str("---\nstatus: draft\n---\n# Design: refs\nSee [[Other Note]] #design\n")))
	note.Nickname = "refs-design"
	if err := note.Seal(); err != nil {
		t.Fatal(err)
	}
	sourcedNote := must(New(must2(t)(NewSourcedEnvelope(KindNote, FilesystemSource{FilesystemID: fs, Path: "/vault/Plan.md"})),
		Payload{Content: Str("# Plan\n"), SourceHash: HashBytes([]byte("# Plan\n")), Note: NoteFields{Title: "Plan"}}))
	return []objectSpec{
		{"file", samples["file"]},
		{"file with unicode path and content", unicodeFile},
		{"deleted file (null content)", deleted},
		{"toolcall", samples["toolcall"]},
		{"toolcall with nested args and numbers", nested},
		{"toolcall with null content and provider id", noOutput},
		{"toolcall with unknown fields", withExtra},
		{"chat", chat},
		{"system prompt", samples["system_prompt"]},
		{"session", samples["session"]},
		{"note", note},
		{"sourced note", sourcedNote},
		{"user", samples["user"]},
	}
}

// must2 returns a function that fails t on err and otherwise returns e.
func must2(t *testing.T) func(e Envelope, err error) Envelope {
	return func(e Envelope, err error) Envelope {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
}
