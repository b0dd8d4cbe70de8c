package objects

import (
	"errors"
	"testing"
)

func TestContentHashScope(t *testing.T) {
	o := sampleObjects(t)["file"]
	in, err := o.ContentHashInput()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"char_count":13,"content":"package main\n","file_type":"go"}`
	if string(in) != want {
		t.Fatalf("content hash input %s, want %s", in, want)
	}
	if o.ContentHash != HashBytes(in) {
		t.Fatal("ContentHash is not the hash of its input")
	}
	tests := []struct {
		name    string
		edit    func(o *Object)
		changes bool
	}{
		{"source_hash excluded", func(o *Object) { o.SourceHash = HashBytes([]byte("other")) }, false},
		{"content_hash excluded", func(o *Object) { o.ContentHash = HashBytes(nil) }, false},
		{"metadata_view_hash excluded", func(o *Object) { o.MetadataViewHash = HashBytes(nil) }, false},
		{"content included", func(o *Object) { o.Content = Str("package other\n") }, true},
		{"null content differs from empty", func(o *Object) { o.Content = nil }, true},
		{"kind field included", func(o *Object) { o.File.FileType = "txt" }, true},
		{"nickname included", func(o *Object) { o.Nickname = "main" }, true},
		{"extra included", func(o *Object) { o.Extra = map[string]any{"short_summary": "x"} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := o.Clone()
			tt.edit(c)
			h, err := c.ComputeContentHash()
			if err != nil {
				t.Fatal(err)
			}
			if (h != o.ContentHash) != tt.changes {
				t.Fatalf("hash changed = %v, want %v", h != o.ContentHash, tt.changes)
			}
		})
	}
	empty := o.Clone()
	empty.Content = Str("")
	h1, _ := empty.ComputeContentHash()
	empty.Content = nil
	h2, _ := empty.ComputeContentHash()
	if h1 == h2 {
		t.Fatal("null and empty content hash alike")
	}
}

func TestMetadataViewHashScope(t *testing.T) {
	o := sampleObjects(t)["toolcall"]
	content := o.Clone()
	content.Content = Str("different output")
	if h, _ := content.ComputeMetadataViewHash(); h != o.MetadataViewHash {
		t.Fatal("content changed the metadata view hash")
	}
	status := o.Clone()
	status.Toolcall.Status = StatusFail
	if h, _ := status.ComputeMetadataViewHash(); h == o.MetadataViewHash {
		t.Fatal("status did not change the metadata view hash")
	}
	want, _ := HashValue(MetadataView(o))
	if o.MetadataViewHash != want {
		t.Fatal("MetadataViewHash is not the hash of MetadataView")
	}
}

func TestVerifyHashes(t *testing.T) {
	o := sampleObjects(t)["toolcall"]
	if err := o.VerifyHashes(); err != nil {
		t.Fatal(err)
	}
	tampered := o.Clone()
	tampered.Content = Str("forged")
	err := tampered.VerifyHashes()
	var hm *HashMismatchError
	if !errors.As(err, &hm) || hm.Hash != "content_hash" || hm.ID != "toolu_01" {
		t.Fatalf("VerifyHashes = %v", err)
	}
	wantErr(t, err, ErrHashMismatch, "content_hash", "toolu_01")
	view := o.Clone()
	view.MetadataViewHash = HashBytes(nil)
	if err := view.VerifyHashes(); !errors.As(err, &hm) || hm.Hash != "metadata_view_hash" {
		t.Fatalf("VerifyHashes = %v", err)
	}
	if err := tampered.Seal(); err != nil || tampered.VerifyHashes() != nil {
		t.Fatal("Seal did not repair the hashes")
	}
}

func TestVerifySource(t *testing.T) {
	o := sampleObjects(t)["file"]
	if err := o.VerifySource([]byte("package main\n")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, o.VerifySource([]byte("changed")), ErrHashMismatch, "source_hash")
}
