package objects

import (
	"errors"
	"testing"
)

func TestNewEnvelope(t *testing.T) {
	note := testUUID(t, 7)
	tests := []struct {
		kind Kind
		id   string
		ok   bool
	}{
		{KindToolcall, "toolu_01", true},
		{KindToolcall, note, true}, // minted when provider ids are not unique
		{KindToolcall, "chat:s1", false},
		{KindToolcall, "session:s1", false},
		{KindToolcall, "has space", false},
		{KindChat, "chat:s1", true},
		{KindChat, "chat:", false},
		{KindChat, "session:s1", false},
		{KindSession, "session:s1", true},
		{KindSession, "s1", false},
		{KindSystemPrompt, "system_prompt:s1", true},
		{KindSystemPrompt, "chat:s1", false},
		{KindNote, note, true},
		{KindNote, "my-note", false},
		{KindUser, note, true},
		{KindUser, "0193a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5b", false}, // v4
		{KindFile, "anything", false},                             // files are sourced
		{Kind("blob"), "x", false},
	}
	for _, tt := range tests {
		e, err := NewEnvelope(tt.kind, tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("NewEnvelope(%s, %q) = %v, want ok=%v", tt.kind, tt.id, err, tt.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			continue
		}
		if e.ID() != tt.id || e.Kind() != tt.kind || e.Source() != nil || !isHash(e.IdentityHash()) {
			t.Errorf("envelope %+v", e)
		}
	}
}

func TestIdentityHash(t *testing.T) {
	src := FilesystemSource{FilesystemID: "fs1", Path: "/a"}
	e, err := NewSourcedEnvelope(KindFile, src)
	if err != nil {
		t.Fatal(err)
	}
	want := HashBytes([]byte(`{"source":{"filesystemId":"fs1","path":"/a","type":"filesystem"},"type":"file"}`))
	if e.ID() != want || e.IdentityHash() != want {
		t.Fatalf("sourced id %s, identity %s, want %s", e.ID(), e.IdentityHash(), want)
	}
	note, err := NewSourcedEnvelope(KindNote, src)
	if err != nil || note.ID() == e.ID() {
		t.Fatalf("sourced note: %v (id must differ from the file's)", err)
	}
	if _, err := NewSourcedEnvelope(KindToolcall, src); err == nil {
		t.Fatal("sourced toolcall accepted")
	}
	if _, err := NewSourcedEnvelope(KindFile, nil); err == nil {
		t.Fatal("nil source accepted")
	}
	if _, err := NewSourcedEnvelope(KindFile, FilesystemSource{FilesystemID: "fs1", Path: "rel"}); err == nil {
		t.Fatal("relative path accepted")
	}
	tc, _ := NewEnvelope(KindToolcall, "toolu_01")
	want = HashBytes([]byte(`{"id":"toolu_01","source":null,"type":"toolcall"}`))
	if tc.IdentityHash() != want {
		t.Fatalf("unsourced identity %s, want %s", tc.IdentityHash(), want)
	}
	// Same path on another filesystem is another object.
	other, _ := NewSourcedEnvelope(KindFile, FilesystemSource{FilesystemID: "fs2", Path: "/a"})
	if other.ID() == e.ID() {
		t.Fatal("different filesystems gave the same id")
	}
}

func TestKind(t *testing.T) {
	for _, k := range Kinds() {
		if !k.Valid() {
			t.Errorf("%s not valid", k)
		}
		got, err := ParseKind(string(k))
		if err != nil || got != k {
			t.Errorf("ParseKind(%s) = %s, %v", k, got, err)
		}
	}
	_, err := ParseKind("blob")
	wantErr(t, err, ErrUnknownKind, `"type"`, `"blob"`)
	if !KindChat.Locked() || !KindSystemPrompt.Locked() || KindFile.Locked() || KindToolcall.Locked() {
		t.Error("only chat and system_prompt are locked")
	}
}
