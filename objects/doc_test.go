package objects

import (
	"errors"
	"reflect"
	"testing"
)

func TestDocRoundTrip(t *testing.T) {
	for name, o := range sampleObjects(t) {
		t.Run(name, func(t *testing.T) {
			d := mustDoc(t, o)
			want := canon(t, d)
			for _, useNumber := range []bool{false, true} {
				back, err := FromDoc(jsonRoundTrip(t, d, useNumber))
				if err != nil {
					t.Fatalf("FromDoc (useNumber=%v): %v", useNumber, err)
				}
				if got := canon(t, mustDoc(t, back)); got != want {
					t.Fatalf("round trip changed the document:\n got %s\nwant %s", got, want)
				}
				if err := back.VerifyHashes(); err != nil {
					t.Fatal(err)
				}
			}
			direct, err := FromDoc(d)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(direct.Payload, o.Payload) || direct.Envelope() != o.Envelope() {
				t.Fatalf("FromDoc(Doc()) differs:\n got %+v\nwant %+v", direct.Payload, o.Payload)
			}
		})
	}
}

func TestDocShape(t *testing.T) {
	objs := sampleObjects(t)
	d := mustDoc(t, objs["toolcall"])
	for _, k := range []string{"xt/id", "type", "source", "identity_hash", "content", "content_hash",
		"metadata_view_hash", "tool", "args", "status", "chat_ref", "file_refs"} {
		if _, ok := d[k]; !ok {
			t.Errorf("toolcall doc lacks %q", k)
		}
	}
	for _, k := range []string{"source_hash", "args_display", "provider_id", "nickname"} {
		if _, ok := d[k]; ok {
			t.Errorf("toolcall doc has unset optional %q", k)
		}
	}
	if d["xt/id"] != "toolu_01" || d["source"] != nil || d["type"] != "toolcall" {
		t.Errorf("envelope fields: %v %v %v", d["xt/id"], d["source"], d["type"])
	}
	f := mustDoc(t, objs["file"])
	if f["source_hash"] != HashBytes([]byte("package main\n")) || f["file_type"] != "go" || f["char_count"] != int64(13) {
		t.Errorf("file fields: %v %v %v", f["source_hash"], f["file_type"], f["char_count"])
	}
	if f["xt/id"] != f["identity_hash"] {
		t.Error("a file's id is its identity hash")
	}
	// Docs are fresh: editing one leaves the object alone.
	d["args"].(map[string]any)["command"] = "rm -rf /"
	if objs["toolcall"].Toolcall.Args["command"] != "ls -la" {
		t.Fatal("Doc shares maps with the object")
	}
}

func TestDocPreservesUnknownFields(t *testing.T) {
	d := mustDoc(t, sampleObjects(t)["toolcall"])
	d["short_summary"] = "listed two files"
	d["provenance"] = map[string]any{"origin": "toolcall", "generator": "tool", "parent_refs": []any{}}
	d["view"] = []any{"tool", "short_summary"}
	o, err := FromDoc(d)
	if err != nil {
		t.Fatal(err)
	}
	if o.Extra["short_summary"] != "listed two files" {
		t.Fatalf("Extra = %v", o.Extra)
	}
	if err := o.VerifyHashes(); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("extra fields are part of content_hash; VerifyHashes = %v", err)
	}
	if err := o.Seal(); err != nil {
		t.Fatal(err)
	}
	back := mustDoc(t, o)
	delete(back, "content_hash")
	delete(d, "content_hash")
	if canon(t, back) != canon(t, d) {
		t.Fatalf("unknown fields lost:\n got %s\nwant %s", canon(t, back), canon(t, d))
	}
}

func TestDocRejectsUnsealed(t *testing.T) {
	o := sampleObjects(t)["user"]
	o.ContentHash = ""
	_, err := o.Doc()
	wantErr(t, err, ErrInvalid, `"content_hash"`)
}

func TestNewValidation(t *testing.T) {
	tc, _ := NewEnvelope(KindToolcall, "toolu_01")
	file, _ := NewSourcedEnvelope(KindFile, FilesystemSource{FilesystemID: "fs", Path: "/x"})
	chat, _ := NewEnvelope(KindChat, "chat:s1")
	okTool := ToolcallFields{Tool: "bash", Status: StatusOK}
	tests := []struct {
		name  string
		env   Envelope
		p     Payload
		field string
	}{
		{"zero envelope", Envelope{}, Payload{}, "zero envelope"},
		{"missing tool", tc, Payload{Toolcall: ToolcallFields{Status: StatusOK}}, `"tool"`},
		{"bad status", tc, Payload{Toolcall: ToolcallFields{Tool: "bash", Status: "maybe"}}, `"status"`},
		{"nan arg", tc, Payload{Toolcall: ToolcallFields{Tool: "bash", Status: StatusOK, Args: map[string]any{"x": nanValue()}}}, `"args.x"`},
		{"bad chat_ref", tc, Payload{Toolcall: ToolcallFields{Tool: "bash", Status: StatusOK, ChatRef: "a b"}}, `"chat_ref"`},
		{"bad file ref", tc, Payload{Toolcall: ToolcallFields{Tool: "bash", Status: StatusOK, FileRefs: []string{""}}}, `"file_refs[0]"`},
		{"file fields on toolcall", tc, Payload{Toolcall: okTool, File: FileFields{CharCount: 1}}, "file fields set on a toolcall"},
		{"source hash on unsourced", tc, Payload{Toolcall: okTool, SourceHash: HashBytes(nil)}, `"source_hash"`},
		{"bad source hash", file, Payload{SourceHash: "abc"}, `"source_hash"`},
		{"negative char_count", file, Payload{File: FileFields{CharCount: -1}}, `"char_count"`},
		{"invalid utf-8 content", file, Payload{Content: Str("\xff")}, `"content"`},
		{"extra shadows field", file, Payload{Extra: map[string]any{"content": "x"}}, `"content"`},
		{"extra shadows kind field", tc, Payload{Toolcall: okTool, Extra: map[string]any{"tool": "x"}}, `"tool"`},
		{"extra invalid value", file, Payload{Extra: map[string]any{"k": []any{"\xff"}}}, `"k[0]"`},
		{"missing session_ref", chat, Payload{}, `"session_ref"`},
		{"bad turn block", chat, Payload{Chat: ChatFields{SessionRef: "session:s1", Turns: []Turn{{Assistant: []map[string]any{{"text": "no type"}}}}}}, `"turns[0].assistant[0].type"`},
		{"bad turn user", chat, Payload{Chat: ChatFields{SessionRef: "session:s1", Turns: []Turn{{User: 5}}}}, `"turns[0].user"`},
		{"bad turn id", chat, Payload{Chat: ChatFields{SessionRef: "session:s1", Turns: []Turn{{ToolcallIDs: []string{"a@b"}}}}}, `"turns[0].toolcall_ids[0]"`},
		{"empty tag", mustNoteEnv(t), Payload{Note: NoteFields{Tags: []string{""}}}, `"tags[0]"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.env, tt.p)
			wantErr(t, err, ErrInvalid, tt.field)
		})
	}
}

func mustNoteEnv(t *testing.T) Envelope {
	e, err := NewEnvelope(KindNote, testUUID(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestNewCopiesInput(t *testing.T) {
	args := map[string]any{"command": "ls"}
	o, err := NewToolcall("toolu_9", ToolcallFields{Tool: "bash", Args: args, Status: StatusOK}, nil)
	if err != nil {
		t.Fatal(err)
	}
	args["command"] = "rm"
	if o.Toolcall.Args["command"] != "ls" {
		t.Fatal("New kept the caller's map")
	}
	c := o.Clone()
	c.Toolcall.Args["command"] = "rm"
	if o.Toolcall.Args["command"] != "ls" {
		t.Fatal("Clone shares maps")
	}
}
