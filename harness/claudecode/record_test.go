package claudecode

import (
	"slices"
	"testing"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/objects/events"
)

// TestRecordTypes: every record type current Claude Code writes is known
// (a record type the reader does not know is kept and counted; it is
// never damage).
func TestRecordTypes(t *testing.T) {
	for _, typ := range []string{"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation",
		"progress", "attachment", "permission-mode", "last-prompt", "ai-title", "custom-title", "agent-name",
		"agent-setting", "mode", "bridge-session", "api-request", "api-request-blob", "api-request-shape",
		"atis-latch", "cost-state", "tools-used", "result"} {
		if !known(typ) {
			t.Errorf("record type %q is not known", typ)
		}
	}
}

// TestDecodeRecordRequest: api-request records decode into Request,
// whether the request is written at the top level or under "request";
// blobs and shapes give their hash and body; a field of an unexpected
// type is left empty, the record still decodes.
func TestDecodeRecordRequest(t *testing.T) {
	cases := []struct {
		name, line string
		want       Request
	}{
		{"top level", `{"type":"api-request","requestId":"req_1","model":"claude-opus-4-5","params":{"max_tokens":32000},"betas":["a","b"],"thinking":{"type":"enabled"},"cacheControlPaths":["system.1","messages.3.content.0"],"messages":["h1","h2"],"shape":"s1"}`,
			Request{RequestID: "req_1", Model: "claude-opus-4-5", Betas: []string{"a", "b"}, CacheControl: []string{"system.1", "messages.3.content.0"}, Messages: []string{"h1", "h2"}, Shape: "s1"}},
		{"nested, objects with hashes", `{"type":"api-request","request":{"request_id":"req_2","messages":[{"hash":"h1"},{"hash":"h2"}],"cache_control_paths":[{"path":"tools.9"}],"shapeHash":"s2"}}`,
			Request{RequestID: "req_2", Messages: []string{"h1", "h2"}, CacheControl: []string{"tools.9"}, Shape: "s2"}},
		{"blob", `{"type":"api-request-blob","hash":"h1","body":{"role":"user","content":"hi"}}`, Request{Hash: "h1"}},
		{"shape", `{"type":"api-request-shape","hash":"s1","content":{"system":[]}}`, Request{Hash: "s1"}},
		{"odd field types", `{"type":"api-request","requestId":7,"betas":"x","messages":{"a":1},"shape":["s"]}`, Request{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeRecord(harness.Record{Data: []byte(c.line)})
			if err != nil {
				t.Fatal(err)
			}
			q := r.Request
			if q == nil {
				t.Fatal("no request decoded")
			}
			if q.RequestID != c.want.RequestID || q.Model != c.want.Model || q.Shape != c.want.Shape || q.Hash != c.want.Hash ||
				!slices.Equal(q.Betas, c.want.Betas) || !slices.Equal(q.CacheControl, c.want.CacheControl) || !slices.Equal(q.Messages, c.want.Messages) {
				t.Errorf("got %+v, want %+v", *q, c.want)
			}
			if (c.name == "blob" || c.name == "shape") && len(q.Body) == 0 {
				t.Error("the blob's bytes are not kept")
			}
		})
	}
	r, _ := DecodeRecord(harness.Record{Data: []byte(`{"type":"api-request","params":{"max_tokens":5},"thinking":{"budget_tokens":9}}`)})
	if string(r.Request.Params) != `{"max_tokens":5}` || string(r.Request.Thinking) != `{"budget_tokens":9}` {
		t.Errorf("params %s, thinking %s", r.Request.Params, r.Request.Thinking)
	}
	if r, _ := DecodeRecord(harness.Record{Data: []byte(`{"type":"user","message":{"content":"x"}}`)}); r.Request != nil {
		t.Error("a user record has a request")
	}
}

// TestDecodeRecordUsage: an assistant record's usage, with the cache
// writes split by lifetime when cache_creation says so (5-minute when it
// does not), and the cache miss reason from the message's diagnostics or
// the record's.
func TestDecodeRecordUsage(t *testing.T) {
	cases := []struct {
		name, line string
		want       *Usage
		why        string
	}{
		{"split", `{"type":"assistant","message":{"id":"m","usage":{"input_tokens":3,"output_tokens":5,"cache_read_input_tokens":1000,"cache_creation_input_tokens":300,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":200}},"diagnostics":{"cache_miss_reason":"tools_changed"}}}`,
			&Usage{Input: 3, Output: 5, CacheRead: 1000, CacheWrite: 300, CacheWrite5m: 100, CacheWrite1h: 200}, "tools_changed"},
		{"no split", `{"type":"assistant","message":{"id":"m","usage":{"input_tokens":3,"output_tokens":5,"cache_creation_input_tokens":40}}}`,
			&Usage{Input: 3, Output: 5, CacheWrite: 40, CacheWrite5m: 40}, ""},
		{"split without total", `{"type":"assistant","message":{"usage":{"cache_creation":{"ephemeral_1h_input_tokens":70}}}}`,
			&Usage{CacheWrite: 70, CacheWrite1h: 70}, ""},
		{"record diagnostics", `{"type":"assistant","diagnostics":{"cache_miss_reason":"ttl_expired"},"message":{"usage":{"input_tokens":1}}}`,
			&Usage{Input: 1}, "ttl_expired"},
		{"usage not an object", `{"type":"assistant","message":{"usage":"many"}}`, nil, ""},
		{"no usage", `{"type":"assistant","message":{"content":[]}}`, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeRecord(harness.Record{Data: []byte(c.line)})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case (r.Recorded == nil) != (c.want == nil):
				t.Fatalf("usage %+v, want %+v", r.Recorded, c.want)
			case c.want != nil && *r.Recorded != *c.want:
				t.Errorf("usage %+v, want %+v", *r.Recorded, *c.want)
			}
			if r.CacheMissReason != c.why {
				t.Errorf("cache miss reason %q, want %q", r.CacheMissReason, c.why)
			}
		})
	}
}

// TestDecodeNewRecords: in the commit codec, the 1-hour writes and the
// miss reason reach the response's event; request records are output
// events naming the request, not damage.
func TestDecodeNewRecords(t *testing.T) {
	b := []byte(`{"type":"api-request","uuid":"r","requestId":"req_1","model":"claude-x","messages":["h1"]}
{"type":"assistant","uuid":"a","message":{"id":"m","model":"claude-x","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1,"cache_creation_input_tokens":9,"cache_creation":{"ephemeral_1h_input_tokens":9}},"diagnostics":{"cache_miss_reason":"system_changed"}}}
{"type":"cost-state","costUSD":1}
`)
	evs, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 {
		t.Fatalf("%d events: %+v", len(evs), evs)
	}
	if e := evs[0]; e.Type != events.Output || e.Subtype != "api-request" || e.Metadata["request_id"] != "req_1" {
		t.Errorf("request event %+v", e)
	}
	if e := evs[1]; e.Usage == nil || e.Usage.CacheWrite != 9 || e.Usage.CacheWrite1h != 9 || e.Metadata["cache_miss_reason"] != "system_changed" {
		t.Errorf("response event %+v (usage %+v)", e, e.Usage)
	}
	for _, e := range evs {
		if e.Subtype == "damaged" || len(e.Subtype) > 8 && e.Subtype[:8] == "unknown/" {
			t.Errorf("event %+v", e)
		}
	}
	if _, err := events.Encode(evs); err != nil {
		t.Fatal(err)
	}
}

// TestTitleRecords: ai-title and custom-title records are the session's
// title, as system/title events; one without a title is an output event.
func TestTitleRecords(t *testing.T) {
	evs, err := Decode([]byte(`{"type":"ai-title","sessionId":"s","aiTitle":"Fix the cart"}
{"type":"custom-title","sessionId":"s","customTitle":"Cart bug"}
{"type":"ai-title","sessionId":"s"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[0].Subtype != "title" || evs[0].Text != "Fix the cart" || evs[0].Metadata["kind"] != "ai-title" ||
		evs[1].Subtype != "title" || evs[1].Text != "Cart bug" || evs[2].Type != events.Output {
		t.Fatalf("events %+v", evs)
	}
}

// TestOneHourWritesRoundTrip: a usage with 1-hour writes is written with
// cache_creation and reads back the same.
func TestOneHourWritesRoundTrip(t *testing.T) {
	evs, err := Decode([]byte(`{"type":"user","uuid":"u","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"a","parentUuid":"u","message":{"id":"m","model":"claude-x","content":[{"type":"text","text":"yo"}],"usage":{"input_tokens":1,"cache_creation_input_tokens":30,"cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":20}}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	file, err := SessionFile(evs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range back {
		if e.Usage != nil {
			if e.Usage.CacheWrite != 30 || e.Usage.CacheWrite1h != 20 {
				t.Fatalf("usage read back %+v from\n%s", *e.Usage, file)
			}
			return
		}
	}
	t.Fatalf("no usage read back from\n%s", file)
}
