package objects

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json from the specs in golden_specs_test.go")

const vectorsPath = "testdata/vectors.json"

// vectorFile is the layout of testdata/vectors.json, meant to be checked by
// implementations in other languages.
type vectorFile struct {
	Comment    []string          `json:"comment"`
	Canonical  []canonicalVector `json:"canonical"`
	SourceHash []sourceVector    `json:"source_hash"`
	Objects    []objectVector    `json:"objects"`
}

// canonicalVector: JSON text (or raw bytes in hex) → canonical text and its
// SHA-256, or the class of error expected.
type canonicalVector struct {
	Name      string `json:"name"`
	Input     string `json:"input,omitempty"`
	InputHex  string `json:"input_hex,omitempty"`
	Canonical string `json:"canonical,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	Error     string `json:"error,omitempty"`
}

// sourceVector: raw bytes → source_hash.
type sourceVector struct {
	Name       string `json:"name"`
	BytesHex   string `json:"bytes_hex"`
	SourceHash string `json:"source_hash"`
}

// objectVector: a document without its three computed hashes → the hash
// inputs, the hashes, the complete canonical document and the metadata line.
type objectVector struct {
	Name             string          `json:"name"`
	Doc              json.RawMessage `json:"doc"`
	IdentityInput    string          `json:"identity_input"`
	IdentityHash     string          `json:"identity_hash"`
	ContentInput     string          `json:"content_input"`
	ContentHash      string          `json:"content_hash"`
	MetadataView     string          `json:"metadata_view"`
	MetadataViewHash string          `json:"metadata_view_hash"`
	CanonicalDoc     string          `json:"canonical_doc"`
	MetadataLine     string          `json:"metadata_line"`
}

// errorClass names the error classes used in the vectors.
func errorClass(err error) string {
	switch {
	case errors.Is(err, ErrInvalidUTF8):
		return "invalid_utf8"
	case errors.Is(err, ErrUnsafeNumber):
		return "unsafe_number"
	case errors.Is(err, ErrNonFinite):
		return "non_finite"
	}
	return "invalid"
}

// computeCanonical fills in the expected outputs of a canonical vector.
func computeCanonical(t *testing.T, v canonicalVector) canonicalVector {
	in := []byte(v.Input)
	if v.InputHex != "" {
		var err error
		if in, err = hex.DecodeString(v.InputHex); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
	}
	out := canonicalVector{Name: v.Name, Input: v.Input, InputHex: v.InputHex}
	c, err := CanonicalJSON(in)
	if err != nil {
		out.Error = errorClass(err)
		return out
	}
	out.Canonical, out.SHA256 = string(c), HashBytes(c)
	return out
}

// computeObject derives every expected output of an object vector from its
// document alone, the way another implementation would.
func computeObject(t *testing.T, name string, doc json.RawMessage) objectVector {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var d map[string]any
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	kind, err := ParseKind(d["type"].(string))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	src, err := ParseSource(d["source"])
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	id, _ := d["xt/id"].(string)
	idIn, err := IdentityHashInput(kind, id, src)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	zero := HashBytes(nil)
	d["identity_hash"], d["content_hash"], d["metadata_view_hash"] = HashBytes(idIn), zero, zero
	o, err := FromDoc(d)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := o.Seal(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	contentIn, err := o.ContentHashInput()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	full, err := o.Doc()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return objectVector{
		Name: name, Doc: doc,
		IdentityInput: string(idIn), IdentityHash: o.IdentityHash(),
		ContentInput: string(contentIn), ContentHash: o.ContentHash,
		MetadataView: canon(t, MetadataView(o)), MetadataViewHash: o.MetadataViewHash,
		CanonicalDoc: canon(t, full), MetadataLine: RenderMetadata(o),
	}
}

// generateVectors builds the vector file from the specs.
func generateVectors(t *testing.T) vectorFile {
	f := vectorFile{Comment: []string{
		"ctxstore object hash vectors; see docs/objects.md.",
		"Hashes are SHA-256 as 64 lowercase hex digits. Canonical JSON is RFC 8785.",
		"objects[].doc omits identity_hash, content_hash and metadata_view_hash; recompute them.",
		"Regenerate with: go test ./objects -run TestGoldenVectors -update",
	}}
	for _, v := range canonicalSpecs() {
		f.Canonical = append(f.Canonical, computeCanonical(t, v))
	}
	for _, s := range sourceSpecs() {
		f.SourceHash = append(f.SourceHash, sourceVector{
			Name: s.name, BytesHex: hex.EncodeToString(s.raw), SourceHash: HashBytes(s.raw),
		})
	}
	for _, s := range objectSpecs(t) {
		d := mustDoc(t, s.obj)
		delete(d, "identity_hash")
		delete(d, "content_hash")
		delete(d, "metadata_view_hash")
		raw, err := marshalNoEscape(d)
		if err != nil {
			t.Fatal(err)
		}
		f.Objects = append(f.Objects, computeObject(t, s.name, raw))
	}
	return f
}

// marshalNoEscape marshals without HTML escaping and without a newline.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func TestGoldenVectors(t *testing.T) {
	gen := generateVectors(t)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(gen); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(vectorsPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsPath, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	var file vectorFile
	if err := json.Unmarshal(stored, &file); err != nil {
		t.Fatal(err)
	}
	// Recompute every vector from its inputs alone.
	for _, v := range file.Canonical {
		if got := computeCanonical(t, v); got != v {
			t.Errorf("canonical %q: got %+v, want %+v", v.Name, got, v)
		}
	}
	for _, v := range file.SourceHash {
		raw, err := hex.DecodeString(v.BytesHex)
		if err != nil || HashBytes(raw) != v.SourceHash {
			t.Errorf("source_hash %q: got %s (%v), want %s", v.Name, HashBytes(raw), err, v.SourceHash)
		}
	}
	for _, v := range file.Objects {
		got := computeObject(t, v.Name, v.Doc)
		got.Doc = v.Doc
		if !sameObjectVector(got, v) {
			t.Errorf("object %q:\n got %+v\nwant %+v", v.Name, got, v)
		}
	}
	if !bytes.Equal(stored, buf.Bytes()) {
		t.Errorf("%s is out of date with the specs; run go test ./objects -run TestGoldenVectors -update", vectorsPath)
	}
}

func sameObjectVector(a, b objectVector) bool {
	a.Doc, b.Doc = nil, nil
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
