package ccproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// FuzzParseRequest drives the proxy's reading of a Messages request with
// arbitrary bodies: no panic; a body that parses is valid JSON; the warm
// request's body and a long-lived head are valid JSON objects that keep
// every other top-level field byte for byte.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":100,"tools":[{"name":"t"}],"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"{\"session_id\":\"s1\"}"}}`,
		`{"system":"plain","messages":[],"thinking":{"type":"enabled"}}`,
		`{"system":[{"cache_control":null},{"cache_control":{"ttl":"1h"}}],"tools":[{"cache_control":{"type":"ephemeral","ttl":"5m"}}]}`,
		`{"system":[1,2],"metadata":{"user_id":"not json"}}`,
		`[]`, `null`, `{"max_tokens":"x"}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseRequest(body)
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("invalid JSON parsed: %q", body)
		}
		_ = sessionOf(http.Header{}, r)
		_ = r.conversation()
		_ = r.ttl(5 * time.Minute)
		_, _ = r.agent(), r.replayable()
		if w, err := warmBody(body); err == nil {
			keepsOthers(t, body, w, "max_tokens")
			var top map[string]json.RawMessage
			json.Unmarshal(w, &top)
			if string(top["max_tokens"]) != "1" {
				t.Fatalf("warm body asks for %s tokens", top["max_tokens"])
			}
		}
		out, changed, err := longHead(body, r)
		if err != nil {
			return
		}
		if !changed {
			if !bytes.Equal(out, body) {
				t.Fatalf("unchanged head, changed body")
			}
			return
		}
		keepsOthers(t, body, out, "system")
	})
}

// keepsOthers fails unless out is a JSON object whose top-level fields,
// but the one named, are those of in byte for byte.
func keepsOthers(t *testing.T, in, out []byte, name string) {
	t.Helper()
	var a, b map[string]json.RawMessage
	if err := json.Unmarshal(out, &b); err != nil || b == nil {
		t.Fatalf("rewritten body is not an object (%v): %q", err, out)
	}
	if err := json.Unmarshal(in, &a); err != nil {
		t.Fatalf("rewrote a body that is not an object: %q", in)
	}
	for k, v := range a {
		if k != name && !bytes.Equal(v, b[k]) {
			t.Fatalf("field %q changed: %s -> %s", k, v, b[k])
		}
	}
	if len(b) != len(a) && !(len(b) == len(a)+1 && a[name] == nil) {
		t.Fatalf("%d fields became %d", len(a), len(b))
	}
}

// FuzzSniffer drives the reading of an answer's stream with arbitrary
// bytes: no panic, done called exactly once, and the outcome does not
// depend on how the body is cut into reads (the network cuts it anywhere).
func FuzzSniffer(f *testing.F) {
	for _, s := range []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"cache_read_input_tokens\":5}}}\n\n" +
			"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\r\n\r\ndata: {\"type\":\"message_stop\"}\n",
		"data:{\"type\":\"message_start\",\"message\":null}\n",
		"data: {\"type\":\"message_",
	} {
		f.Add([]byte(s), uint16(7), true)
	}
	f.Add([]byte(`{"type":"message","stop_reason":"end_turn","usage":{"input_tokens":1}}`), uint16(3), false)
	f.Fuzz(func(t *testing.T, body []byte, cut uint16, stream bool) {
		ct := "application/json"
		if stream {
			ct = "text/event-stream; charset=utf-8"
		}
		run := func(chunk int) (outcome, int) {
			var got outcome
			calls := 0
			s := newSniffer(io.NopCloser(&chunked{b: body, n: chunk}), ct, nil, func(o outcome) { got = o; calls++ })
			out, err := io.ReadAll(s)
			if err != nil || !bytes.Equal(out, body) {
				t.Fatalf("the body did not pass through whole (%v)", err)
			}
			s.Close()
			return got, calls
		}
		whole, calls := run(len(body) + 1)
		if calls != 1 {
			t.Fatalf("done called %d times", calls)
		}
		cutAt, _ := run(int(cut)%(len(body)+1) + 1)
		if cutAt != whole {
			t.Fatalf("outcome depends on the reads: %+v whole, %+v in pieces of %d", whole, cutAt, int(cut)%(len(body)+1)+1)
		}
	})
}

// chunked reads b at most n bytes at a time.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.b))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}
