package recorded_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/internal/datasets"
)

// ccFile writes a Claude Code transcript: each step a user prompt (or a
// compaction) and the answer with its usage, at its time.
type ccStep struct {
	at       time.Duration // after the session's start
	parent   string        // the user record's parent ("": the previous answer)
	prompt   string
	model    string
	read     int
	write5m  int
	write1h  int
	miss     string
	compact  bool
	noAnswer bool
}

func ccFile(t *testing.T, steps []ccStep) string {
	t.Helper()
	t0 := time.Date(2030, 3, 1, 9, 0, 0, 0, time.UTC)
	var lines []string
	prev := ""
	for i, s := range steps {
		ts := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }
		parent := prev
		if s.parent != "" {
			parent = s.parent
		}
		pj := "null"
		if parent != "" {
			pj = fmt.Sprintf("%q", parent)
		}
		u := fmt.Sprintf("u%d", i+1)
		if s.compact {
			lines = append(lines, fmt.Sprintf(`{"type":"system","subtype":"compact_boundary","uuid":"b%d","parentUuid":null,"logicalParentUuid":%s,"sessionId":"s-attr","timestamp":%q,"content":"Conversation compacted"}`, i+1, pj, ts(s.at)))
			lines = append(lines, fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":"b%d","isCompactSummary":true,"sessionId":"s-attr","timestamp":%q,"message":{"role":"user","content":"This session is being continued. Summary: %s"}}`, u, i+1, ts(s.at), s.prompt))
		} else {
			lines = append(lines, fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":%s,"sessionId":"s-attr","timestamp":%q,"message":{"role":"user","content":%q}}`, u, pj, ts(s.at), s.prompt))
		}
		if s.noAnswer {
			prev = u
			continue
		}
		model := s.model
		if model == "" {
			model = "claude-sonnet-4-5"
		}
		diag := ""
		if s.miss != "" {
			diag = fmt.Sprintf(`,"diagnostics":{"cache_miss_reason":%q}`, s.miss)
		}
		a := fmt.Sprintf("a%d", i+1)
		lines = append(lines, fmt.Sprintf(`{"type":"assistant","uuid":%q,"parentUuid":%q,"sessionId":"s-attr","timestamp":%q,"message":{"id":"m%d","role":"assistant","model":%q,"content":[{"type":"text","text":"answer %d"}],"usage":{"input_tokens":10,"output_tokens":20,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d,"cache_creation":{"ephemeral_5m_input_tokens":%d,"ephemeral_1h_input_tokens":%d}}}%s}`,
			a, u, ts(s.at+time.Second), i+1, model, i+1, s.read, s.write5m+s.write1h, s.write5m, s.write1h, diag))
		prev = a
	}
	p := filepath.Join(t.TempDir(), "attr.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAttribution: each cause of a cache break is told from the record:
// the provider's miss reason, a model switch, a compaction, an expiry
// after a pause (an hour when the harness wrote 1-hour entries), a
// changed message (a prompt edited and sent again), and a miss nothing
// recorded explains; a call that read the previous request from the cache
// is no break.
func TestAttribution(t *testing.T) {
	p := ccFile(t, []ccStep{
		{at: 0, prompt: "start", write5m: 2000},                                                                    // 1 first
		{at: 10 * time.Second, prompt: "next", read: 2010, write5m: 50},                                            // 2 none
		{at: 11 * time.Minute, prompt: "after lunch", write5m: 2100},                                               // 3 expired
		{at: 12 * time.Minute, prompt: "tools", write5m: 2200, miss: "tools_changed"},                              // 4 reported: tools
		{at: 13 * time.Minute, prompt: "bigger", model: "claude-opus-4-5", write5m: 2300},                          // 5 model switch
		{at: 14 * time.Minute, parent: "a3", prompt: "edited", model: "claude-opus-4-5", write5m: 2100},            // 6 message changed
		{at: 15 * time.Minute, prompt: "hour", model: "claude-opus-4-5", read: 2100, write1h: 40},                  // 7 none, 1-hour writes
		{at: 40 * time.Minute, prompt: "within the hour", model: "claude-opus-4-5", read: 100, write1h: 2100},      // 8 unknown: 25m < 1h
		{at: 41 * time.Minute, prompt: "summary of it all", model: "claude-opus-4-5", compact: true, write1h: 500}, // 9 compaction
	})
	svc, sids := importFiles(t, p)
	d, err := recorded.Derive(context.Background(), svc, sids[0][0])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{recorded.CauseFirst, recorded.CauseNone, recorded.CauseExpired, recorded.CauseTools, recorded.CauseModel,
		recorded.CauseChanged, recorded.CauseNone, recorded.CauseUnknown, recorded.CauseCompact}
	if len(d.Calls) != len(want) {
		t.Fatalf("%d calls, want %d", len(d.Calls), len(want))
	}
	for i, c := range d.Calls {
		if c.Cause != want[i] {
			t.Errorf("call %d: cause %s (%s), want %s", c.N, c.Cause, c.Detail, want[i])
		}
		broke := want[i] != recorded.CauseNone && want[i] != recorded.CauseFirst
		if broke != (c.RewrittenTokens > 0) {
			t.Errorf("call %d (%s): %d tokens rewritten", c.N, c.Cause, c.RewrittenTokens)
		}
	}
	if c := d.Calls[2]; !strings.Contains(c.Detail, "pause of 10m50s") {
		t.Errorf("expiry detail %q", c.Detail)
	}
	if c := d.Calls[3]; c.MissReason != "tools_changed" {
		t.Errorf("miss reason %q", c.MissReason)
	}
	if c := d.Calls[5]; c.PrefixMessages != 6 || c.Messages != 7 {
		t.Errorf("the edited prompt's call shares %d of %d messages; want 6 of 7 (the path to a3, then the edit)", c.PrefixMessages, c.Messages)
	}
	if c := d.Calls[7]; !strings.Contains(c.Detail, "1h0m0s lifetime") {
		t.Errorf("a pause within the hour: %q", c.Detail)
	}
	if c := d.Calls[8]; c.Messages != 1 {
		t.Errorf("after a compaction the request holds %d messages, want the summary alone", c.Messages)
	}
	// A request too short to be cached leaves nothing to read: the next
	// call's first write is no break.
	p = ccFile(t, []ccStep{{at: 0, prompt: "hi"}, {at: 5 * time.Second, prompt: "now the long work", write5m: 3000}})
	svc, sids = importFiles(t, p)
	if d, err = recorded.Derive(context.Background(), svc, sids[0][0]); err != nil || len(d.Calls) != 2 {
		t.Fatalf("%v, %+v", err, d)
	}
	if c := d.Calls[1]; c.Cause != recorded.CauseNone || c.RewrittenTokens != 0 {
		t.Errorf("after a request that cached nothing: cause %s, %d rewritten (%s)", c.Cause, c.RewrittenTokens, c.Detail)
	}
}

// TestDatasetBreaks: the cache breaks of two real Claude Code sessions,
// from their recorded usage: a pause past the cache's lifetime and a
// compaction in one; pauses and misses nothing recorded explains in the
// other. Every break rewrote tokens; no other call did.
func TestDatasetBreaks(t *testing.T) {
	dir := datasets.Dir(t)
	files := []string{filepath.Join(dir, "claude-code/templar__35fb9f94__ee2ab929.jsonl"),
		filepath.Join(dir, "claude-code/attio-mcp-server__1ff6f4ee__c7428042.jsonl")}
	want := []map[string]int{
		{recorded.CauseFirst: 1, recorded.CauseNone: 161, recorded.CauseExpired: 1, recorded.CauseCompact: 1},
		{recorded.CauseFirst: 1, recorded.CauseNone: 43, recorded.CauseExpired: 4, recorded.CauseUnknown: 2},
	}
	svc, sids := importFiles(t, files...)
	for i := range files {
		d, err := recorded.Derive(context.Background(), svc, sids[i][0])
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, c := range d.Calls {
			got[c.Cause]++
			broke := c.Cause != recorded.CauseNone && c.Cause != recorded.CauseFirst
			if broke != (c.RewrittenTokens > 0) {
				t.Errorf("%s call %d (%s): %d tokens rewritten", filepath.Base(files[i]), c.N, c.Cause, c.RewrittenTokens)
			}
			if c.Cause == recorded.CauseExpired && (c.GapSeconds < 300 || !strings.Contains(c.Detail, "pause of")) {
				t.Errorf("%s call %d: expired after %.0f s: %s", filepath.Base(files[i]), c.N, c.GapSeconds, c.Detail)
			}
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("%s: causes %v, want %v", filepath.Base(files[i]), got, want[i])
		}
	}
}
