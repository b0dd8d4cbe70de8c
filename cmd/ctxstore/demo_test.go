package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestDemo runs the demo as make demo does and checks what a first-time
// reader needs from it: every line fits 100 columns, block previews show
// content rather than framing tags, collapses are said in plain words, and
// the last lines state what ctxstore saved against sending the whole
// history (0.58 of its cost when written; the bound leaves room for small
// changes in the assembly, not for the demo to stop showing a saving).
func TestDemo(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--store", filepath.Join(dir, "demo.db"), "demo", "--dir", filepath.Join(dir, "project")},
		strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	text := out.String()
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	block := regexp.MustCompile(`^  \[\s*\d+\] (.*?)\s+\d+ tok  (.*)$`)
	blocks, tagged := 0, 0
	for _, l := range lines {
		m := block.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		blocks++
		if strings.HasPrefix(m[2], "<<") {
			tagged++
		}
		if strings.HasPrefix(m[1], "content · file calc.sh") && m[2] != "#!/bin/sh" {
			t.Errorf("calc.sh's content block previews %q, not its first line", m[2])
		}
		if strings.Contains(m[1], dir) {
			t.Errorf("block label holds the temporary directory: %q", l)
		}
	}
	if blocks < 20 || tagged > 0 {
		t.Errorf("%d blocks listed, %d of them previewed by a tag only:\n%s", blocks, tagged, text)
	}
	words := strings.Join(strings.Fields(text), " ")
	for _, w := range []string{"(rebase:stale): ctxstore replaced", "by one-line references (bash ls, bash sh test.sh,", "so the context went from"} {
		if !strings.Contains(words, w) {
			t.Errorf("output lacks %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, "from item ") {
		t.Errorf("output uses the inspector's item jargon:\n%s", text)
	}
	last := strings.Join(lines[len(lines)-2:], " ")
	m := regexp.MustCompile(`^Result: this session cost \$[0-9.]+ with ctxstore and \$[0-9.]+ sending the whole history every call: ([0-9.]+) of the cost, (\d+)% less; its last call sent (\d+) tokens instead of (\d+)\.$`).FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("the demo does not end with its result:\n%s", text)
	}
	// the stats of the demo's session fit the same width
	out.Reset()
	if code := run(context.Background(), []string{"--store", filepath.Join(dir, "demo.db"), "stats"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("stats: exit %d\n%s", code, errb.String())
	}
	if !strings.Contains(out.String(), "tool calls") {
		t.Errorf("stats:\n%s", out.String())
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("stats: a line of %d columns: %q", n, l)
		}
	}
	ratio, _ := strconv.ParseFloat(m[1], 64)
	if ratio <= 0 || ratio > 0.7 {
		t.Errorf("ctxstore costs %.2f of the whole history, want at most 0.70", ratio)
	}
	got, _ := strconv.Atoi(m[3])
	whole, _ := strconv.Atoi(m[4])
	if got <= 0 || 3*got > whole {
		t.Errorf("last call sent %d tokens against %d for the whole history, want at most a third", got, whole)
	}
}
