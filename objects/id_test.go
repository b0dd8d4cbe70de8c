package objects

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"toolu_01XFDUDYJgAACzvnptvVer6R", true},
		{"call_1", true},
		{"chat:0193a1b2-c3d4", true},
		{"3f2a", true},
		{"ünïcode-ok", true},
		{"", false},
		{"has space", false},
		{"tab\there", false},
		{"new\nline", false},
		{"a@b", false},
		{"a#b", false},
		{"[[x]]", false},
		{"a|b", false},
		{"bad\xff", false},
		{strings.Repeat("x", MaxIDLen), true},
		{strings.Repeat("x", MaxIDLen+1), false},
	}
	for _, tt := range tests {
		err := ValidateID(tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateID(%q) error %v does not wrap ErrInvalid", tt.id, err)
		}
	}
}

func TestSessionIDs(t *testing.T) {
	if got := ChatObjectID("s1"); got != "chat:s1" {
		t.Errorf("ChatObjectID = %q", got)
	}
	if got := SessionObjectID("s1"); got != "session:s1" {
		t.Errorf("SessionObjectID = %q", got)
	}
	if got := SystemPromptObjectID("s1"); got != "system_prompt:s1" {
		t.Errorf("SystemPromptObjectID = %q", got)
	}
	tests := []struct {
		id   string
		kind Kind
		sid  string
		ok   bool
	}{
		{"chat:s1", KindChat, "s1", true},
		{"session:a:b", KindSession, "a:b", true},
		{"system_prompt:x", KindSystemPrompt, "x", true},
		{"chat:", "", "", false},
		{"toolu_01", "", "", false},
	}
	for _, tt := range tests {
		k, sid, ok := SessionIDOf(tt.id)
		if k != tt.kind || sid != tt.sid || ok != tt.ok {
			t.Errorf("SessionIDOf(%q) = %q, %q, %v", tt.id, k, sid, ok)
		}
	}
}

func TestNewUUIDv7(t *testing.T) {
	rand := bytes.Repeat([]byte{0xff}, 16)
	id, err := NewUUIDv7(fixedTime, bytes.NewReader(rand))
	if err != nil {
		t.Fatal(err)
	}
	// 2026-02-21T12:00:00Z = 1771675200000 ms = 0x019c80122a00.
	if want := "019c8012-2a00-7fff-bfff-ffffffffffff"; id != want {
		t.Fatalf("NewUUIDv7 = %s, want %s", id, want)
	}
	if !IsUUIDv7(id) {
		t.Fatal("minted id is not a UUIDv7")
	}
	ts, ok := UUIDv7Time(id)
	if !ok || !ts.Equal(fixedTime) {
		t.Fatalf("UUIDv7Time = %v, %v", ts, ok)
	}
	again, _ := NewUUIDv7(fixedTime, bytes.NewReader(rand))
	if again != id {
		t.Fatal("same inputs gave different ids")
	}
	later, _ := NewUUIDv7(fixedTime.Add(time.Millisecond), bytes.NewReader(make([]byte, 16)))
	if later <= id[:13] {
		t.Fatalf("later id %s does not sort after %s", later, id)
	}
	if _, err := NewUUIDv7(fixedTime, bytes.NewReader([]byte{1, 2})); err == nil {
		t.Fatal("short reader accepted")
	}
	if _, err := NewUUIDv7(time.Unix(-1, 0), bytes.NewReader(rand)); err == nil {
		t.Fatal("time before the epoch accepted")
	}
}

func TestIsUUIDv7(t *testing.T) {
	tests := []struct {
		s  string
		ok bool
	}{
		{"019c8049-f000-7fff-bfff-ffffffffffff", true},
		{"019C8049-F000-7FFF-BFFF-FFFFFFFFFFFF", false}, // not canonical
		{"019c8049-f000-4fff-bfff-ffffffffffff", false}, // version 4
		{"019c8049-f000-7fff-7fff-ffffffffffff", false}, // wrong variant
		{"019c8049f0007fffbfffffffffffffff", false},     // no hyphens
		{"{019c8049-f000-7fff-bfff-ffffffffffff}", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsUUIDv7(tt.s); got != tt.ok {
			t.Errorf("IsUUIDv7(%q) = %v", tt.s, got)
		}
	}
}
