package transcript

import (
	"bytes"
	datasetdir "github.com/ctxstore/ctxstore/internal/datasets"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSeeds adds the table tests' inputs, some hand-made damage, and the
// first lines of the dataset files of the format when they are present.
func fuzzSeeds(f *testing.F, dir string, extra ...string) {
	for _, s := range extra {
		f.Add([]byte(s))
	}
	ds := datasetsIfPresent()
	if ds == "" {
		return
	}
	files, _ := filepath.Glob(filepath.Join(ds, dir, "*.jsonl"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// A few kilobytes of whole lines keep each seed small.
		if len(b) > 4<<10 {
			if i := bytes.LastIndexByte(b[:4<<10], '\n'); i > 0 {
				b = b[:i+1]
			}
		}
		f.Add(b)
	}
}

// datasetsIfPresent is datasets without failing or skipping.
func datasetsIfPresent() string { return datasetdir.Find() }

// fuzzCheck reads in with the format and checks the invariants: no panic,
// no error (a bytes.Reader has no I/O errors and the format is given),
// tool results after their calls, line numbers in range.
func fuzzCheck(t *testing.T, in []byte, format Format) {
	s, err := Read(bytes.NewReader(in), format)
	if err != nil {
		t.Fatalf("error: %v", err)
	}
	checkInvariants(t, s)
	if want := bytes.Count(in, []byte("\n")); s.Report.Lines != want && s.Report.Lines != want+1 {
		t.Fatalf("%d lines counted for %d newlines", s.Report.Lines, want)
	}
	// Reading auto-detected must not panic either.
	if s2, err := Read(bytes.NewReader(in), FormatAuto); err == nil {
		checkInvariants(t, s2)
	}
}

func FuzzClaudeCode(f *testing.F) {
	fuzzSeeds(f, "claude-code",
		lines(ccUser("u1", "", `"read a"`), ccAsst("a1", "u1", "m1", toolUse1), ccUser("u2", "a1", toolResult1)),
		ccUser("u1", "", `"hi"`)+ccAsst("a1", "u1", "m1", `[{"type":"text","text":"hello"}]`),
		lines(ccUser("c1", "", `"x"`, `,"isCompactSummary":true`), ccAsst("a1", "c1", "m1", toolUse1), ccUser("r", "a0", toolResult1)),
		`{"type":"system","subtype":"compact_boundary","parentUuid":null,"logicalParentUuid":"a1","uuid":"b1"}`+"\n"+ccAsst("a1", "b1", "m", toolUse1),
		`{"parentUuid":"x","uuid":"x","type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image"}]}]}}`,
		`{"type":"assistant","uuid":"a","message":{"id":"m","content":[{"type":"tool_use","id":"t","input":"str"}],"usage":{"input_tokens":-5}}}{"x`,
	)
	f.Fuzz(func(t *testing.T, in []byte) { fuzzCheck(t, in, FormatClaudeCode) })
}

func FuzzPi(f *testing.F) {
	fuzzSeeds(f, "pi",
		strings.Join([]string{
			`{"type":"session","version":3,"id":"s"}`,
			`{"type":"message","id":"e1","parentId":null,"message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"bash","arguments":{}}]}}`,
			`{"type":"message","id":"e2","parentId":"e1","message":{"role":"toolResult","toolCallId":"c","content":"s"}}`,
			`{"type":"message","id":"e3","parentId":"e3","message":{"role":"user","content":"loop"}}`,
		}, "\n"),
		`{"type":"message","message":{"role":"bashExecution","command":"ls","exitCode":"x"}}{"type":"compaction","summary":"s"}`+"\n"+`{"type":"mess`,
		`{"type":"message","message":{"role":"user","content":[{"type":"image","data":"AAAA"},7]}}`,
	)
	f.Fuzz(func(t *testing.T, in []byte) { fuzzCheck(t, in, FormatPi) })
}
