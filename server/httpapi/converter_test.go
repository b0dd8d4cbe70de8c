package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/context/runtime"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/harness/transcript/transcripttest"
	"github.com/ctxstore/ctxstore/session"
)

// piSample is a Pi log with every role the converter knows, an unknown
// one, an image, thinking, a truncated bash run, an excluded one and an
// aborted response with a tool result.
func piSample() []map[string]any {
	ts := int64(1767268800000) // 2026-01-01T12:00:00Z
	n := 0
	m := func(fields map[string]any) map[string]any {
		n++
		fields["timestamp"] = ts + int64(n)*1000
		return fields
	}
	text := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }
	return []map[string]any{
		m(map[string]any{"role": "user", "content": "Fix the build."}),
		m(map[string]any{"role": "assistant", "api": "anthropic-messages", "provider": "anthropic", "model": "m1", "stopReason": "toolUse",
			"usage":   map[string]any{"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 10, "totalTokens": 25},
			"content": []any{map[string]any{"type": "thinking", "thinking": "hmm"}, map[string]any{"type": "text", "text": "Looking."}, map[string]any{"type": "toolCall", "id": "c1", "name": "bash", "arguments": map[string]any{"command": "echo hi"}}}}),
		m(map[string]any{"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "content": text("hi"), "isError": false}),
		m(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Look at this"}, map[string]any{"type": "image", "data": "QUJDRA==", "mimeType": "image/png"}}}),
		m(map[string]any{"role": "bashExecution", "command": "make", "output": "error: x\n", "exitCode": 2, "cancelled": false, "truncated": true, "fullOutputPath": "/tmp/out.txt"}),
		m(map[string]any{"role": "bashExecution", "command": "env", "output": "SECRET=1", "exitCode": 0, "excludeFromContext": true}),
		m(map[string]any{"role": "custom", "customType": "note", "content": "An extension's note.", "display": true}),
		m(map[string]any{"role": "hookMessage", "customType": "old", "content": text("An older extension's note.")}),
		m(map[string]any{"role": "robot", "content": "beep"}),
		m(map[string]any{"role": "assistant", "model": "m1", "stopReason": "aborted", "usage": map[string]any{"input": 3, "output": 1},
			"content": []any{map[string]any{"type": "text", "text": "partial"}, map[string]any{"type": "toolCall", "id": "c2", "name": "bash", "arguments": map[string]any{"command": "ls"}}}}),
		m(map[string]any{"role": "toolResult", "toolCallId": "c2", "toolName": "bash", "content": text("aborted"), "isError": true}),
		m(map[string]any{"role": "compactionSummary", "summary": "We fixed the build.", "tokensBefore": 1000}),
		m(map[string]any{"role": "branchSummary", "summary": "Tried another way.", "fromId": "x"}),
		m(map[string]any{"role": "user", "content": "Thanks."}),
	}
}

// piSessionFile writes msgs as a Pi v3 session file: a header, then one
// message entry per message, each the child of the one before, with the
// message's time as the entry's.
func piSessionFile(t *testing.T, cwd string, msgs []map[string]any) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T12:00:00Z","cwd":%q}`+"\n", cwd)
	parent := any(nil)
	for i, msg := range msgs {
		id := fmt.Sprintf("e%d", i+1)
		ms := msg["timestamp"].(int64)
		line, err := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": parent,
			"timestamp": time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z"), "message": msg})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
		parent = id
	}
	return b.String()
}

// TestPiServiceAndReaderAgree: the same Pi messages, sent
// to the service as its context call and read from a Pi session file by
// the transcript reader, give the assembler the same messages and the
// same bytes.
func TestPiServiceAndReaderAgree(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, func(o *Options) { o.Guide = "-" })
	msgs := piSample()
	const sid, prompt = "same", "You are careful."
	e.ok("PUT", "/v1/sessions/"+sid, OpenRequest{Cwd: e.dir, SystemPrompt: prompt, Harness: "pi"}, nil)
	var resp ContextResponse
	e.ok("POST", "/v1/sessions/"+sid+"/context", map[string]any{"messages": msgs}, &resp)
	if resp.Converted == nil || resp.Converted.Unknown["message/robot"] != 1 || resp.Converted.Aborted != 1 || resp.Converted.Images != 1 {
		t.Errorf("converted %+v", resp.Converted)
	}
	served, err := assemble.Rebuild(ctx, e.st, sid, resp.Call)
	if err != nil {
		t.Fatal(err)
	}
	// The service's conversion (the server keeps only what the ingester
	// may read again, so it is made again here by the same code).
	var st0 piState
	raws := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		if raws[i], err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
	}
	converted, _, err := st0.apply(0, "", raws)
	if err != nil || converted.Start != 0 {
		t.Fatalf("converting: %v (from %d)", err, converted.Start)
	}
	serviceLog := append([]transcript.Message(nil), converted.Messages...)

	read, err := transcripttest.Read(strings.NewReader(piSessionFile(t, e.dir, msgs)), transcript.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if read.Format != transcript.FormatPi || read.Report.Unknown["message/robot"] != 1 || read.Report.Aborted != 1 {
		t.Errorf("reader: format %s report %+v", read.Format, read.Report)
	}
	readerLog := append([]transcript.Message(nil), read.Messages...)
	for i := range readerLog {
		readerLog[i].ID = "" // the entry's id: the service's messages have none
	}
	if !reflect.DeepEqual(serviceLog, readerLog) {
		sj, _ := json.MarshalIndent(serviceLog, "", " ")
		rj, _ := json.MarshalIndent(readerLog, "", " ")
		t.Fatalf("the service and the reader convert differently:\nservice %s\nreader  %s", sj, rj)
	}

	// The reader's messages through the same runtime, in a store of their own.
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "r.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err := runtime.Open(ctx, st, sid, runtime.Options{
		Create:  session.CreateOptions{SystemPrompt: prompt, Harness: "pi"},
		Indexer: files.NewIndexer(st, newResolver(t), 0),
		Ingest:  ingest.Options{Cwd: e.dir},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := rt.Ingester.Context(ctx, read.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes, served.Bytes) {
		t.Fatalf("the assembler got different bytes:\nservice %q\nreader  %q", served.Bytes, got.Bytes)
	}
	for _, want := range []string{"[image: image/png, 6 bytes]", "Command exited with code 2", "[Output truncated. Full output: /tmp/out.txt]",
		"<summary>\nWe fixed the build.\n</summary>", "An older extension's note."} {
		if !bytes.Contains(got.Bytes, []byte(want)) {
			t.Errorf("the context lacks %q", want)
		}
	}
	for _, not := range []string{"SECRET", "beep", "partial"} {
		if bytes.Contains(got.Bytes, []byte(not)) {
			t.Errorf("the context holds %q", not)
		}
	}
}
