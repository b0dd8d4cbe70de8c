package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
	"unsafe"
)

// decodeWhole is how a context request was decoded before it streamed:
// the whole body through one json.Decoder (as q.decode decodes other
// bodies).
func decodeWhole(body []byte) (ContextRequest, bool) {
	var req ContextRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&req) != nil {
		return req, false
	}
	// Nothing but white space after the value (dec.More alone passes a
	// stray ']' or '}').
	_, err := dec.Token()
	return req, errors.Is(err, io.EOF)
}

var contextBodies = []string{
	`{"messages":[{"role":"user","content":"hi"}]}`,
	`{"messages":[]}`,
	`{"messages":null,"log":[{"role":"user","text":"x"}]}`,
	` { "messages" : [ {"a":1} ,  "s", 1.5e3, null, [1,{"b":[]}] ] , "base":2, "base_sha256":"ab", "have_call":3 } `,
	`{"Messages":[{"x":"\u00e9\"]"}],"BASE":1,"unknown":{"deep":[1,2,{"z":null}]},"events":[{"type":"fork","n":12345678901234567890}]}`,
	`{"log":[{"role":"assistant","tool_calls":[{"id":"c","name":"bash","args":{"n":1}}]}],"cache_renewed_at":"2026-01-01T00:00:00Z"}`,
	`{"messages":[{"role":"user"}]} {}`,
	`{"messages":[{"role":"user"},]}`,
	`{"messages":{"role":"user"}}`,
	`{"base":"1","messages":[]}`,
	`{"messages":[1 2]}`,
	`[]`,
	`{"messages":[`,
	``,
	`{}`,
	`{}]`,
	`{"messages":[]}}`,
}

// A context request decodes, streaming, to what the whole-body decoder
// gives (or fails where it fails), and Pi's messages are the body's own
// bytes, not copies.
func TestDecodeContextBody(t *testing.T) {
	for _, s := range contextBodies {
		checkContextDecode(t, []byte(s))
	}
	out, _ := json.Marshal(proseText(1<<16, 3))
	body := []byte(`{"messages":[{"role":"toolResult","content":` + string(out) + `},{"role":"user"}]}`)
	var req ContextRequest
	if err := decodeContextBody(body, &req); err != nil {
		t.Fatal(err)
	}
	lo, hi := uintptr(unsafe.Pointer(&body[0])), uintptr(unsafe.Pointer(&body[len(body)-1]))
	for i, m := range req.Messages {
		if p := uintptr(unsafe.Pointer(&m[0])); p < lo || p > hi {
			t.Errorf("message %d is a copy, not the body's bytes", i)
		}
		if cap(m) != len(m) {
			t.Errorf("message %d: capacity %d past its length %d (an append would write into the body)", i, cap(m), len(m))
		}
	}
}

func checkContextDecode(t *testing.T, body []byte) {
	t.Helper()
	want, ok := decodeWhole(body)
	var got ContextRequest
	err := decodeContextBody(body, &got)
	if (err == nil) != ok {
		t.Fatalf("%q: streaming decode error %v; the whole decoder ok=%v", body, err, ok)
	}
	if !ok {
		return
	}
	if len(got.Messages) != len(want.Messages) || (got.Messages == nil) != (want.Messages == nil) {
		t.Fatalf("%q: %d messages (nil %v), want %d (nil %v)", body, len(got.Messages), got.Messages == nil, len(want.Messages), want.Messages == nil)
	}
	for i := range want.Messages {
		if !bytes.Equal(got.Messages[i], want.Messages[i]) {
			t.Fatalf("%q: message %d is %s, want %s", body, i, got.Messages[i], want.Messages[i])
		}
	}
	got.Messages, want.Messages = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v, want %+v", body, got, want)
	}
}

// FuzzDecodeContextBody: the streaming decoder agrees with the whole-body
// decoder on every body.
func FuzzDecodeContextBody(f *testing.F) {
	for _, s := range contextBodies {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkContextDecode(t, body)
	})
}
