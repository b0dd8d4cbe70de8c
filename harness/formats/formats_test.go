package formats_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/claudecode"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/pi"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/session/commits"
)

// TestRegistry: the codecs a registry is built with, and only those, give
// the commit formats their functions and read transcripts.
func TestRegistry(t *testing.T) {
	reg := formats.Commits()
	for _, name := range []string{commits.FormatClaudeCode, commits.FormatPi} {
		f, ok := reg.Lookup(name)
		if !ok || f.Decode == nil || f.Encode == nil || f.ForSession == nil {
			t.Errorf("%s: no codec in formats.Commits()", name)
		}
		if f, _ := commits.NewRegistry().Lookup(name); f.Decode != nil || f.Encode != nil {
			t.Errorf("%s: a codec in commits.NewRegistry(), which has no harness codec", name)
		}
	}

	onlyCC := harness.NewRegistry(claudecode.Codec{})
	if f, _ := onlyCC.Commits().Lookup(commits.FormatPi); f.Decode != nil {
		t.Error("pi-v3 has a decoder in a registry without pi.Codec")
	}
	piFile := `{"type":"session","version":3,"id":"s1"}` + "\n" +
		`{"type":"message","id":"e1","parentId":null,"message":{"role":"user","content":"hi"}}` + "\n"
	s, err := transcript.Reader{Formats: formats.Registry()}.Read(strings.NewReader(piFile), transcript.FormatAuto)
	if err != nil || s.Format != harness.FormatPi || len(s.Messages) != 1 {
		t.Fatalf("the full registry reads a Pi file: %v, %+v", err, s)
	}
	if _, err := (transcript.Reader{Formats: onlyCC}).Read(strings.NewReader(piFile), transcript.FormatAuto); err == nil {
		t.Error("a registry without pi.Codec read a Pi file")
	}

	own := harness.NewRegistry(lineCodec{})
	if f, ok := own.Commits().Lookup("lines-v1"); !ok || f.Concat == nil || f.Decode != nil {
		t.Errorf("a codec's own commit format is not registered as it set it: %+v", f)
	}

	defer func() {
		if recover() == nil {
			t.Error("two codecs of one format were accepted")
		}
	}()
	harness.NewRegistry(pi.Codec{}, pi.Codec{})
}

// lineCodec is a format whose commit format is not built in.
type lineCodec struct{}

func (lineCodec) Format() harness.Format { return "lines" }
func (lineCodec) CommitFormat() string   { return "lines-v1" }
func (lineCodec) Commit(f *commits.Format) {
	f.Concat = func(parts [][]byte) ([]byte, error) { return bytes.Join(parts, nil), nil }
}
