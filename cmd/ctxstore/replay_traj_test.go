package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	datasetdir "github.com/ctxstore/ctxstore/internal/datasets"
)

// TestReplaySWEAgent: "ctxstore replay" reads a SWE-agent trajectory (one
// assistant call per action), and a truncated one with the damage named by
// file and line.
func TestReplaySWEAgent(t *testing.T) {
	path := filepath.Join(datasetdir.Dir(t), "swe-agent", "test__swe-agent__test-repo-i1__4da99171.traj")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"replay", "--json", "--tokenizer", "bytes", "--strategies", "naive", path},
		strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got replayJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != 1 || got.Sessions[0].Calls != 5 || !strings.Contains(errb.String(), "swe-agent, 12 messages, 0 problems") {
		t.Fatalf("output %s\n%s", out.String(), errb.String())
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.traj")
	if err := os.WriteFile(cut, b[:len(b)*3/4], 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"replay", "--json", "--tokenizer", "bytes", "--strategies", "naive", cut},
		strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), cut+":") || !strings.Contains(errb.String(), "the document ends early") {
		t.Fatalf("stderr does not name the damage: %s", errb.String())
	}
}

// TestReplayDeclinedStrategy: a trajectory records no usage, so the
// recorded strategy declines it (a note, no result of zeros), and in the
// sum its ratios are against naive on the Claude Code session alone, where
// it ran: recorded/naive there, not recorded over both sessions' naive.
func TestReplayDeclinedStrategy(t *testing.T) {
	dir := datasetdir.Dir(t)
	traj := filepath.Join(dir, "swe-agent", "test__swe-agent__test-repo-i1__4da99171.traj")
	cc := filepath.Join(dir, "claude-code", "raw", "claude-reliability__hello-world-script.jsonl")
	replayed := func(args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"replay", "--tokenizer", "bytes", "--strategies", "naive,recorded"}, args...),
			strings.NewReader(""), &out, &errb)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return out.String(), errb.String()
	}
	out, _ := replayed("--json", cc, traj)
	var got replayJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != 2 || len(got.Sessions[1].Results) != 1 || len(got.Sessions[1].Declined) != 1 ||
		got.Sessions[1].Declined[0].Strategy != "recorded" || !strings.Contains(got.Sessions[1].Declined[0].Reason, "no usage") {
		t.Fatalf("the trajectory's results %+v, declined %+v", got.Sessions[1].Results, got.Sessions[1].Declined)
	}
	rec := got.Total[1]
	ccRecorded, ccNaive := got.Sessions[0].Results[1].Totals.Cost, got.Sessions[0].Naive.Cost
	if rec.Strategy != "recorded" || rec.Sessions != 1 || got.Total[0].Sessions != 2 || rec.Totals.CostVsNaive != ccRecorded/ccNaive || rec.Totals.CostVsNaive < 0.9 {
		t.Fatalf("total %+v: want recorded on 1 session, cost/naive %.4f", rec, ccRecorded/ccNaive)
	}
	text, _ := replayed(cc, traj)
	if !strings.Contains(text, "recorded: not replayed: the transcript records no usage") || !strings.Contains(text, "recorded: replayed on 1 of the 2 sessions") {
		t.Fatalf("the text does not say what was declined:\n%s", text)
	}
	md, _ := replayed("--markdown", cc, traj)
	if !strings.Contains(md, "| recorded (1 of 2 sessions) |") || !strings.Contains(md, " | - |") {
		t.Fatalf("the markdown does not mark the declined cell and the partial total:\n%s", md)
	}
}
