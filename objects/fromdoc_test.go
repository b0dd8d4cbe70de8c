package objects

import (
	"encoding/json"
	"math"
	"testing"
)

// nanValue hides NaN from vet's constant checks.
func nanValue() float64 { return math.NaN() }

func TestFromDocErrors(t *testing.T) {
	objs := sampleObjects(t)
	base := func(name string) map[string]any { return mustDoc(t, objs[name]) }
	with := func(name string, edit func(d map[string]any)) map[string]any {
		d := base(name)
		edit(d)
		return d
	}
	tests := []struct {
		name   string
		doc    map[string]any
		target error
		field  string
	}{
		{"nil doc", nil, ErrInvalid, "nil"},
		{"without id", with("user", func(d map[string]any) { delete(d, "xt/id") }), ErrInvalid, `"xt/id": missing`},
		{"non-string id", with("user", func(d map[string]any) { d["xt/id"] = 42.0 }), ErrInvalid, `"xt/id": must be a string, got number`},
		{"id of another object", with("user", func(d map[string]any) { d["xt/id"] = testUUID(t, 9) }), ErrHashMismatch, "identity_hash"},
		{"bad id syntax", with("toolcall", func(d map[string]any) { d["xt/id"] = "a b" }), ErrInvalid, `"xt/id"`},
		{"without type", with("user", func(d map[string]any) { delete(d, "type") }), ErrInvalid, `"type": missing`},
		{"non-string type", with("user", func(d map[string]any) { d["type"] = true }), ErrInvalid, `"type": must be a string, got boolean`},
		{"wrong type", with("user", func(d map[string]any) { d["type"] = "memory" }), ErrUnknownKind, `"memory"`},
		{"type of another kind", with("user", func(d map[string]any) { d["type"] = "note" }), ErrHashMismatch, "identity_hash"},
		{"without source", with("user", func(d map[string]any) { delete(d, "source") }), ErrInvalid, `"source": missing`},
		{"source on unsourced", with("user", func(d map[string]any) {
			d["source"] = map[string]any{"type": "filesystem", "filesystemId": "f", "path": "/a"}
		}), ErrInvalid, `"source"`},
		{"file without source", with("file", func(d map[string]any) { d["source"] = nil }), ErrInvalid, `"source": required`},
		{"source missing path", with("file", func(d map[string]any) { delete(d["source"].(map[string]any), "path") }), ErrInvalid, `"source.path": missing`},
		{"source missing filesystemId", with("file", func(d map[string]any) { delete(d["source"].(map[string]any), "filesystemId") }), ErrInvalid, `"source.filesystemId": missing`},
		{"unknown source type", with("file", func(d map[string]any) { d["source"].(map[string]any)["type"] = "git" }), ErrUnknownSourceType, `"git"`},
		{"moved file keeps id", with("file", func(d map[string]any) { d["source"].(map[string]any)["path"] = "/b" }), ErrInvalid, `"xt/id"`},
		{"without identity_hash", with("user", func(d map[string]any) { delete(d, "identity_hash") }), ErrInvalid, `"identity_hash": missing`},
		{"malformed identity_hash", with("user", func(d map[string]any) { d["identity_hash"] = "sha256:00" }), ErrInvalid, `"identity_hash"`},
		{"without content", with("user", func(d map[string]any) { delete(d, "content") }), ErrInvalid, `"content": missing`},
		{"numeric content", with("user", func(d map[string]any) { d["content"] = 1.0 }), ErrInvalid, `"content": must be a string or null`},
		{"invalid utf-8 content", with("user", func(d map[string]any) { d["content"] = "bad \xff" }), ErrInvalidUTF8, `"content"`},
		{"invalid utf-8 extra key", with("user", func(d map[string]any) { d["\xff"] = 1.0 }), ErrInvalidUTF8, ""},
		{"without content_hash", with("user", func(d map[string]any) { delete(d, "content_hash") }), ErrInvalid, `"content_hash": missing`},
		{"uppercase content_hash", with("user", func(d map[string]any) { d["content_hash"] = "AB" }), ErrInvalid, `"content_hash"`},
		{"without metadata_view_hash", with("user", func(d map[string]any) { delete(d, "metadata_view_hash") }), ErrInvalid, `"metadata_view_hash": missing`},
		{"source_hash on unsourced", with("user", func(d map[string]any) { d["source_hash"] = HashBytes(nil) }), ErrInvalid, `"source_hash"`},
		{"empty nickname", with("user", func(d map[string]any) { d["nickname"] = "" }), ErrInvalid, `"nickname": must be a non-empty string`},
		{"file without char_count", with("file", func(d map[string]any) { delete(d, "char_count") }), ErrInvalid, `"char_count": missing`},
		{"fractional char_count", with("file", func(d map[string]any) { d["char_count"] = 1.5 }), ErrInvalid, `"char_count"`},
		{"string char_count", with("file", func(d map[string]any) { d["char_count"] = "12" }), ErrInvalid, `"char_count"`},
		{"huge char_count", with("file", func(d map[string]any) { d["char_count"] = 1e300 }), ErrInvalid, `"char_count"`},
		{"file without file_type", with("file", func(d map[string]any) { delete(d, "file_type") }), ErrInvalid, `"file_type": missing`},
		{"toolcall without tool", with("toolcall", func(d map[string]any) { delete(d, "tool") }), ErrInvalid, `"tool": missing`},
		{"args not an object", with("toolcall", func(d map[string]any) { d["args"] = "ls -la" }), ErrInvalid, `"args": must be an object`},
		{"args with unsafe number", with("toolcall", func(d map[string]any) { d["args"] = map[string]any{"n": json.Number("9007199254740993")} }), ErrUnsafeNumber, `"args.n"`},
		{"args with NaN", with("toolcall", func(d map[string]any) { d["args"] = map[string]any{"n": nanValue()} }), ErrNonFinite, `"args.n"`},
		{"bad status", with("toolcall", func(d map[string]any) { d["status"] = "error" }), ErrInvalid, `"status"`},
		{"file_refs not strings", with("toolcall", func(d map[string]any) { d["file_refs"] = []any{1.0} }), ErrInvalid, `"file_refs[0]"`},
		{"empty args_display", with("toolcall", func(d map[string]any) { d["args_display"] = "" }), ErrInvalid, `"args_display"`},
		{"null args_display", with("toolcall", func(d map[string]any) { d["args_display"] = nil }), ErrInvalid, `"args_display"`},
		{"turns not an array", with("chat", func(d map[string]any) { d["turns"] = map[string]any{} }), ErrInvalid, `"turns"`},
		{"turn not an object", with("chat", func(d map[string]any) { d["turns"] = []any{"hi"} }), ErrInvalid, `"turns[0]"`},
		{"turn with null user", with("chat", func(d map[string]any) { d["turns"] = []any{map[string]any{"user": nil}} }), ErrInvalid, `"turns[0].user"`},
		{"turn block not object", with("chat", func(d map[string]any) {
			d["turns"] = []any{map[string]any{"assistant": []any{"text"}}}
		}), ErrInvalid, `"turns[0].assistant[0]"`},
		{"chat without toolcall_refs", with("chat", func(d map[string]any) { delete(d, "toolcall_refs") }), ErrInvalid, `"toolcall_refs": missing`},
		{"tags not array", with("note", func(d map[string]any) { d["tags"] = "todo" }), ErrInvalid, `"tags"`},
		{"frontmatter not object", with("note", func(d map[string]any) { d["frontmatter"] = []any{} }), ErrInvalid, `"frontmatter"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromDoc(tt.doc)
			wantErr(t, err, tt.target, tt.field)
		})
	}
}

func TestFromDocAcceptsNumberForms(t *testing.T) {
	for _, v := range []any{int64(13), 13.0, json.Number("13"), json.Number("13.0"), json.Number("1.3e1"), 13} {
		d := mustDoc(t, sampleObjects(t)["file"])
		d["char_count"] = v
		o, err := FromDoc(d)
		if err != nil {
			t.Fatalf("char_count %T %v: %v", v, v, err)
		}
		if o.File.CharCount != 13 {
			t.Fatalf("char_count %v read as %d", v, o.File.CharCount)
		}
	}
}
