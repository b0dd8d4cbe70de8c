package transcript

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness"
)

// repeat is an endless reader of one byte.
type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// A line over harness.MaxLineBytes and a line nested too deeply
// are reported with their line numbers and skipped, without holding the
// long line in memory; the lines around them are read.
func TestLongAndDeepLines(t *testing.T) {
	u1 := ccUser("u1", "", `"first"`) + "\n"
	u2 := ccUser("u2", "u1", `"second"`) + "\n"
	long := io.MultiReader(strings.NewReader(`{"type":"user","x":"`), io.LimitReader(repeat('a'), harness.MaxLineBytes+10), strings.NewReader("\"}\n"))
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n"
	in := io.MultiReader(strings.NewReader(u1), long, strings.NewReader(deep), strings.NewReader(u2))
	s, err := Read(in, FormatClaudeCode)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.Report.Problems {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	if !strings.Contains(all, "line 2: the line is") || !strings.Contains(all, "over the limit") || !strings.Contains(all, "line 3: JSON nested too deeply") {
		t.Fatalf("problems:\n%s", all)
	}
	if len(s.Messages) != 2 || s.Messages[0].Text != "first" || s.Messages[1].Text != "second" || s.Report.Lines != 4 {
		t.Fatalf("messages %+v, lines %d", s.Messages, s.Report.Lines)
	}
	var b bytes.Buffer
	b.WriteString(u1)
	if s, err := Read(&b, FormatClaudeCode); err != nil || len(s.Messages) != 1 {
		t.Fatalf("a plain file: %v", err)
	}
}
