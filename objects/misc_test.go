package objects

import (
	"slices"
	"testing"
)

func TestModeledKeys(t *testing.T) {
	keys := ModeledKeys(KindToolcall)
	for _, k := range []string{"xt/id", "content", "content_hash", "tool", "args", "file_refs"} {
		if !slices.Contains(keys, k) {
			t.Errorf("ModeledKeys(toolcall) lacks %q", k)
		}
	}
	if slices.Contains(ModeledKeys(KindFile), "tool") {
		t.Error("file models tool")
	}
	if got := (FilesystemSource{}).SourceType(); got != SourceFilesystem {
		t.Errorf("SourceType = %q", got)
	}
}

func TestTurnExtraAndClone(t *testing.T) {
	turns := []Turn{{
		User:          []map[string]any{{"type": "text", "text": "hi"}},
		ToolcallIDs:   []string{"a"},
		AssistantMeta: map[string]any{"usage": map[string]any{"input": 3}},
		Extra:         map[string]any{"compacted": true, "notes": []string{"x"}},
	}}
	o, err := NewChat("s9", turns, nil)
	if err != nil {
		t.Fatal(err)
	}
	turns[0].AssistantMeta["usage"].(map[string]any)["input"] = 99
	turns[0].User.([]map[string]any)[0]["text"] = "changed"
	d := mustDoc(t, o)
	want := `[{"compacted":true,"notes":["x"],"toolcall_ids":["a"],"user":[{"text":"hi","type":"text"}],"assistant_meta":{"usage":{"input":3}}}]`
	w, err := CanonicalJSON([]byte(want))
	if err != nil {
		t.Fatal(err)
	}
	if got := canon(t, d["turns"]); got != string(w) {
		t.Fatalf("turns %s\nwant %s", got, w)
	}
	back, err := FromDoc(d)
	if err != nil {
		t.Fatal(err)
	}
	if back.Chat.Turns[0].Extra["compacted"] != true {
		t.Fatalf("turn extra lost: %+v", back.Chat.Turns[0])
	}
	bad := o.Clone()
	bad.Chat.Turns[0].Extra = map[string]any{"user": "shadow"}
	if err := bad.Seal(); err == nil {
		t.Fatal("turn extra shadowing user accepted")
	}
	if _, err := (Ref{ID: "a b"}).MarshalText(); err == nil {
		t.Fatal("invalid ref marshalled")
	}
}
