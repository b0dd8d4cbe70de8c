package opencode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects/events"
)

// pixel is the 1-pixel PNG the fixtures' images hold.
const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// images reads what a decoded session holds of files: each tool result's
// image blocks (media type and data), each file prompt (its part).
func images(evs []events.Event) (results, prompts []string) {
	for _, e := range evs {
		switch {
		case e.Type == events.ToolResult && e.Result != nil:
			for _, b := range e.Result.Blocks {
				if m, _ := b.(map[string]any); m["type"] == "image" {
					src, _ := m["source"].(map[string]any)
					results = append(results, e.Tool.ID+" "+src["media_type"].(string)+" "+src["data"].(string))
				}
			}
		case e.Type == events.Prompt && e.Metadata[MetaFile] != nil:
			f, _ := json.Marshal(e.Metadata[MetaFile])
			prompts = append(prompts, string(f))
		}
	}
	return results, prompts
}

// TestFilesDecode reads the images of two sessions the real opencode
// 1.18.33 wrote: a read of an image (the tool part's attachment) and a
// prompt with an image and a text file attached (`opencode run -f`).
func TestFilesDecode(t *testing.T) {
	evs, _ := Decode(readFixture(t, "image-read.jsonl"))
	res, _ := images(evs)
	if len(res) != 1 || res[0] != "toolu_img1 image/png "+pixel {
		t.Fatalf("the read's image: %q", res)
	}
	for _, e := range evs {
		if e.Type == events.ToolResult && e.Result.Content != "Image read successfully\n[image: image/png, 72 bytes]" {
			t.Errorf("the read's content: %q", e.Result.Content)
		}
	}
	evs, _ = Decode(readFixture(t, "image-attach.jsonl"))
	_, prompts := images(evs)
	if len(prompts) != 1 || prompts[0] != `{"filename":"pic.png","mime":"image/png","url":"data:image/png;base64,`+pixel+`"}` {
		t.Fatalf("the attached image: %q", prompts)
	}
	var notes []string
	for _, e := range evs {
		if e.Metadata[MetaFile] != nil && (!e.Meta || e.Text != "[image: image/png, 72 bytes]") {
			t.Errorf("the attached image's prompt: %+v", e)
		}
		if e.Type == events.Output && e.Subtype == "opencode/part/file" {
			notes = append(notes, e.Text)
		}
	}
	// The text file is not sent by opencode (its content is in the
	// synthetic parts beside it): an output event naming it.
	if len(notes) != 1 || notes[0] != "[file notes.txt: text/plain, /tmp/ocx/run/work/notes.txt]" {
		t.Errorf("the attached text file: %q", notes)
	}
}

// TestFilesRoundTrip: the images of opencode's rows, decoded, encoded
// again and placed under a new session in a database, read back as the
// same images: the read's attachment (its session and message ids those
// of the new rows) and the attached image's file part.
func TestFilesRoundTrip(t *testing.T) {
	for _, name := range []string{"image-read.jsonl", "image-attach.jsonl"} {
		t.Run(name, func(t *testing.T) {
			rows := readFixture(t, name)
			orig, _ := Decode(rows)
			wantRes, wantPrompts := images(orig)
			enc, lost, err := EncodeLost(orig)
			if err != nil || lost.AsText != 0 || lost.Unanswered != 0 {
				t.Fatalf("EncodeLost: %+v %v", lost, err)
			}
			const sid = "ses_files000000000000000000000"
			cp, err := SetSessionID(enc, sid)
			if err != nil {
				t.Fatal(err)
			}
			path := newDB(t, rows)
			if _, err := Place(context.Background(), path, cp, false); err != nil {
				t.Fatal(err)
			}
			ss := sessionLines(t, path)
			if len(ss) != 1 || ss[0].ID != sid {
				t.Fatalf("sessions %+v", ss)
			}
			back, _ := Decode(joined(ss[0].Rows))
			gotRes, gotPrompts := images(back)
			if strings.Join(gotRes, "\n") != strings.Join(wantRes, "\n") || strings.Join(gotPrompts, "\n") != strings.Join(wantPrompts, "\n") {
				t.Fatalf("read back: %q %q, want %q %q", gotRes, gotPrompts, wantRes, wantPrompts)
			}
			if conv(back) != conv(orig) {
				t.Errorf("conversation read back:\n%s\nwant\n%s", conv(back), conv(orig))
			}
			for _, r := range ss[0].Rows {
				var row Row
				if err := json.Unmarshal(r.Line, &row); err != nil {
					t.Fatal(err)
				}
				d, _ := row.data()
				st, _ := d["state"].(map[string]any)
				atts, _ := st["attachments"].([]any)
				for _, a := range atts {
					m := a.(map[string]any)
					if m["sessionID"] != sid || m["messageID"] != row.str("message_id") || !strings.HasPrefix(m["id"].(string), "prt_") || m["url"] != "data:image/png;base64,"+pixel {
						t.Errorf("attachment %v of part %s", m, row.ID())
					}
				}
			}
		})
	}
}

// TestFilesFromOtherHarnesses: results holding images in the shapes of
// Claude Code (Messages API blocks), Pi ({data, mimeType}) and Codex
// (input_image data URLs) become the completed part's attachments, their
// text the result's own; an error result's image and a block opencode
// has no form for become notes; a call with no opencode tool has its
// result's image as a file part of the result's user message.
func TestFilesFromOtherHarnesses(t *testing.T) {
	call := func(id, name string, in map[string]any) events.Event {
		return events.Event{Type: events.ToolCall, MessageID: "m-" + id, Tool: &events.Tool{ID: id, Name: name, Input: in}}
	}
	result := func(id, text string, isErr bool, blocks ...any) events.Event {
		return events.Event{Type: events.ToolResult, Tool: &events.Tool{ID: id}, Result: &events.Result{Content: text + "\n[image: image/png, 72 bytes]", IsError: isErr, Blocks: blocks}}
	}
	read := map[string]any{"file_path": "/w/pic.png"}
	evs := []events.Event{
		{Type: events.Prompt, Source: "user", Text: "look"},
		call("cc", "Read", read),
		result("cc", "an image", false, map[string]any{"type": "text", "text": "an image"}, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": pixel}}),
		call("pi", "read", map[string]any{"path": "/w/pic.png"}),
		result("pi", "", false, map[string]any{"type": "image", "data": pixel, "mimeType": "image/png"}),
		call("cx", "exec_command", map[string]any{"cmd": "cat pic.png"}),
		result("cx", "", false, map[string]any{"type": "input_text", "text": "x"}, map[string]any{"type": "input_image", "image_url": "data:image/png;base64," + pixel}),
		call("err", "Read", read),
		result("err", "failed", true, map[string]any{"type": "text", "text": "failed"}, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": pixel}}, map[string]any{"type": "document"}),
		call("todo", "TodoWrite", map[string]any{"todos": []any{}}),
		result("todo", "drawn", false, map[string]any{"type": "text", "text": "drawn"}, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": pixel}}),
		{Type: events.Response, MessageID: "m-end", Text: "seen"},
	}
	b, lost, err := EncodeLost(evs)
	if err != nil {
		t.Fatal(err)
	}
	if lost.AsText != 1 {
		t.Errorf("lost %+v", lost)
	}
	states := map[string]map[string]any{}
	var userFiles []map[string]any
	readRows(b, func(_ int, r *Row) {
		d, err := r.data()
		if err != nil {
			return
		}
		switch d["type"] {
		case "tool":
			st, _ := d["state"].(map[string]any)
			states[d["callID"].(string)] = st
		case "file":
			userFiles = append(userFiles, d)
		}
	}, func(n int, msg string, _ []byte) { t.Fatalf("line %d: %s", n, msg) })
	for id, want := range map[string]string{"cc": "an image", "pi": "\n[image: image/png, 72 bytes]", "cx": "x"} {
		st := states[id]
		atts, _ := st["attachments"].([]any)
		if st["status"] != "completed" || st["output"] != want || len(atts) != 1 || atts[0].(map[string]any)["url"] != "data:image/png;base64,"+pixel {
			t.Errorf("%s: %v", id, st)
		}
	}
	if st := states["err"]; st["status"] != "error" || st["error"] != "failed\n[document block]\n[image: image/png, 72 bytes]" || st["attachments"] != nil {
		t.Errorf("the error result: %v", st)
	}
	if len(userFiles) != 1 || userFiles[0]["url"] != "data:image/png;base64,"+pixel || userFiles[0]["synthetic"] != true {
		t.Errorf("the text call's image: %v", userFiles)
	}
}
