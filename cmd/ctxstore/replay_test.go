package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/eval/replay"
	datasetdir "github.com/ctxstore/ctxstore/internal/datasets"
)

// TestReplayCommand runs "ctxstore replay" on a small real transcript:
// --json on stdout, progress on stderr, a chart file, the per-call table.
func TestReplayCommand(t *testing.T) {
	path := filepath.Join(datasetdir.Dir(t), "claude-code", "raw", "claude-reliability__hello-world-script.jsonl")
	chart := filepath.Join(t.TempDir(), "c.svg")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"replay", "--json", "--tokenizer", "bytes", "--chart", chart,
		"--strategies", "naive,recorded,ctxstore_stream", path}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got replayJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(got.Sessions) != 1 || got.Sessions[0].Calls != 4 || len(got.Total) != 3 || got.Total[0].Strategy != "naive" {
		t.Fatalf("output %s", out.String())
	}
	if !strings.Contains(errb.String(), "ctxstore_stream 4/4 calls") {
		t.Fatalf("stderr %s", errb.String())
	}
	b, err := os.ReadFile(chart)
	if err != nil || !bytes.HasPrefix(b, []byte("<svg ")) {
		t.Fatalf("chart: %v", err)
	}

	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"replay", "--per-call", "--tokenizer", "bytes", "--strategies", "naive,clear_tool_uses", path},
		strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "naive, per call") || !strings.Contains(out.String(), "cost/naive") {
		t.Fatalf("exit %d: %s\n%s", code, out.String(), errb.String())
	}
	if code := run(context.Background(), []string{"replay", "--strategies", "magic", path}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Fatalf("unknown strategy: exit %d", code)
	}

	// --warm: said in the header and in the JSON; the session's calls
	// come within the cache's lifetime, so only the last call is
	// followed by warm requests (the harness does not know it was the
	// last), on every strategy but recorded.
	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"replay", "--warm", "idle", "--tokenizer", "bytes", "--strategies", "naive,recorded", path}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "cache warming: idle (every strategy but recorded)") {
		t.Fatalf("exit %d: %s\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	code = run(context.Background(), []string{"replay", "--json", "--warm", "idle", "--tokenizer", "bytes", "--strategies", "naive,recorded", path}, strings.NewReader(""), &out, &errb)
	got = replayJSON{}
	if err := json.Unmarshal(out.Bytes(), &got); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, errb.String())
	}
	if s := got.Sessions[0]; s.Warm != "idle" || s.Results[0].Totals.Warms == 0 || s.Results[1].Totals.Warms != 0 || s.Naive.Warms != s.Results[0].Totals.Warms {
		t.Fatalf("warm %q, naive %d warms, recorded %d, baseline %d", s.Warm, s.Results[0].Totals.Warms, s.Results[1].Totals.Warms, s.Naive.Warms)
	}
	if code := run(context.Background(), []string{"replay", "--warm", "always", path}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Fatalf("--warm always: exit %d", code)
	}

	// --claude-code-proxy: a Claude Code session replayed through the
	// proxy, said in the header and the JSON; its warming replaces --warm.
	out.Reset()
	code = run(context.Background(), []string{"replay", "--claude-code-proxy", "idle", "--tokenizer", "bytes", "--strategies", "naive,recorded", path}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "through ctxstore's Claude Code proxy, warming idle (every strategy but recorded)") {
		t.Fatalf("exit %d: %s\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	code = run(context.Background(), []string{"replay", "--json", "--claude-code-proxy", "off", "--warm", "idle", "--tokenizer", "bytes", "--strategies", "naive", path}, strings.NewReader(""), &out, &errb)
	got = replayJSON{}
	if err := json.Unmarshal(out.Bytes(), &got); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, errb.String())
	}
	if s := got.Sessions[0]; !s.ClaudeCodeProxy || s.Warm != "off" || s.Results[0].Totals.Warms != 0 {
		t.Fatalf("through the proxy warming off: proxy %v, warm %q, %d warms", s.ClaudeCodeProxy, s.Warm, s.Results[0].Totals.Warms)
	}
	if code := run(context.Background(), []string{"replay", "--claude-code-proxy", "always", path}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Fatalf("--claude-code-proxy always: exit %d", code)
	}
}

// Replay lists every damaged line of a transcript on
// stderr with its file and line (terminal escapes made harmless) and reads
// past them.
func TestReplayListsDamagedLines(t *testing.T) {
	src := filepath.Join(datasetdir.Dir(t), "claude-code", "raw", "claude-reliability__hello-world-script.jsonl")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	damaged := strings.Join(lines[:2], "") + "{\"type\":\"user\",\x1b[31m broken\n" + strings.Repeat("[", 500) + "\n" + strings.Join(lines[2:], "")
	path := filepath.Join(t.TempDir(), "damaged.jsonl")
	if err := os.WriteFile(path, []byte(damaged), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"replay", "--json", "--tokenizer", "bytes", "--strategies", "naive", path}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{path + ":3: invalid JSON", path + ":4: JSON nested too deeply", `\x1b`} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	if strings.Contains(errb.String(), "\x1b") {
		t.Error("a raw terminal escape reached stderr")
	}
}

// TestReplayConversations: every conversation of a file is replayed by
// default, named FILE#N; --conversations last replays the last and names
// the others as skipped. The text output prints the set-aside counts and a
// legend line for every column of the totals table.
func TestReplayConversations(t *testing.T) {
	rec := func(uuid, parent, typ, content, extra string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		msg := `{"role":"user","content":` + content + `}`
		if typ == "assistant" {
			msg = `{"id":"m` + uuid + `","model":"claude-sonnet-4-20250514","role":"assistant","content":` + content +
				`,"usage":{"input_tokens":3,"cache_creation_input_tokens":2000,"cache_read_input_tokens":0,"output_tokens":5}}`
		}
		return `{"parentUuid":` + p + `,"isSidechain":false,"sessionId":"s1","type":"` + typ + `","message":` + msg +
			`,"uuid":"` + uuid + `","timestamp":"2025-01-01T00:00:0` + uuid[1:] + `Z"` + extra + `}`
	}
	in := strings.Join([]string{
		rec("a1", "", "user", `"first task"`, ""),
		rec("a2", "a1", "assistant", `[{"type":"text","text":"first done"}]`, ""),
		rec("b3", "", "user", `"second task"`, ""),
		rec("b4", "b3", "assistant", `[{"type":"text","text":"answer"}]`, ""),
		rec("b5", "b4", "user", `"more"`, ""),
		rec("b6", "b5", "assistant", `[{"type":"text","text":"second done"}]`, ""),
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "two.jsonl")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"replay", "--json", "--tokenizer", "bytes", "--strategies", "naive,naive_capped,recorded", path}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got replayJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != 2 || got.Sessions[0].Session != path+"#1" || got.Sessions[0].Calls != 1 || got.Sessions[1].Calls != 2 ||
		got.Sessions[1].Read.Conversation != 2 || got.Sessions[1].Read.Conversations != 2 || got.Total[0].Totals.Calls != 3 {
		t.Fatalf("sessions: %s", out.String())
	}
	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"replay", "--conversations", "last", "--tokenizer", "bytes", "--strategies", "naive,naive_capped,recorded", path}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(errb.String(), "skipped conversation 1 of 2 (2 messages") || !strings.Contains(errb.String(), "2 conversations") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	if !strings.Contains(text, path+" (claude-code): 4 messages, 2 calls") || !strings.Contains(text, "transcript: 0 problems; set aside: 0 sidechain records") {
		t.Fatalf("output: %s", text)
	}
	// A legend line for every column of the totals table.
	var header string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "strategy") && strings.Contains(l, "cost/naive") {
			header = l
		}
	}
	legend := text[strings.Index(text, "columns ("):]
	cols := regexpColumns.FindAllString(header, -1)
	if len(cols) != 20 {
		t.Fatalf("columns %q", cols)
	}
	for _, col := range cols {
		if col == "strategy" {
			continue
		}
		if !strings.Contains(legend, "\n  "+col+" ") {
			t.Errorf("column %q has no legend line", col)
		}
	}
	// --check-also: more sessions in the harness's check, not replayed.
	errb.Reset()
	out.Reset()
	code = run(context.Background(), []string{"replay", "--json", "--tokenizer", "bytes", "--strategies", "naive", "--check-also", path, path}, strings.NewReader(""), &out, &errb)
	got = replayJSON{}
	if code != 0 || json.Unmarshal(out.Bytes(), &got) != nil || len(got.Sessions) != 2 || got.CacheChecks["claude-code"] == nil || got.CacheChecks["claude-code"].Calls != 6 {
		t.Fatalf("--check-also: exit %d: %s\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	code = run(context.Background(), []string{"replay", "--markdown", "--tokenizer", "bytes", "--strategies", "naive,recorded", path}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "| two#1 | 1 |") || !strings.Contains(out.String(), "#### All 2 sessions") {
		t.Fatalf("markdown: %s", out.String())
	}
}

// regexpColumns splits a totals header into its column names (names are
// separated by two spaces or more).
var regexpColumns = regexp.MustCompile(`[a-z/]+( [a-z/]+)*`)

// TestReplayHelpListsDefaults: `replay --help` names every strategy a run
// without --strategies replays, and each other one as optional, so the
// help cannot drift from the code.
func TestReplayHelpListsDefaults(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"replay", "--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	help := strings.Join(strings.Fields(out.String()+errb.String()), " ")
	def, others, ok := strings.Cut(help, "; also ")
	if !ok {
		t.Fatalf("no default and optional lists in:\n%s", help)
	}
	for _, s := range replay.DefaultStrategies() {
		if !strings.Contains(def, s.Name()+",") && !strings.Contains(def, s.Name()+";") && !strings.HasSuffix(def, s.Name()) {
			t.Errorf("help's defaults lack %s", s.Name())
		}
	}
	for _, s := range replay.OtherStrategies() {
		if !strings.Contains(others, s.Name()) {
			t.Errorf("help's optional strategies lack %s", s.Name())
		}
	}
}
