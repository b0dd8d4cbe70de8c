package opencode

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/objects/events"
)

// opencode keeps images and attached files as file parts, {type: file,
// mime, url, filename, source}: a person's attachment is a user message's
// part (an image with a data URL, which opencode sends to a model that
// takes images; a text file with a file URL, which it does not send, its
// content being in synthetic text parts beside it), and a tool's image is
// one of its completed state's attachments (file parts with id, sessionID
// and messageID, the image as a data URL, sent with the tool's result).
// Seen with 1.18.33: `opencode run -f pic.png` and a read of an image.

// MetaFile is the event metadata key holding an opencode file part (mime,
// url, filename) that a prompt event stands for: Encode writes it back
// as a file part; other harnesses' encoders write the event's text, a
// note naming the file.
const MetaFile = "opencode_file"

// dataURL splits a data URL into its media type and base64 data.
func dataURL(u string) (mime, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	i := strings.Index(rest, ";base64,")
	if i < 0 {
		return "", "", false
	}
	return rest[:i], rest[i+len(";base64,"):], true
}

// fileNote is the one-line text a file part stands for where it cannot
// cross as a file: an image as harness.ImageNote, another file by name,
// type and size (or its URL when it is not data).
func fileNote(mime, u, name string) string {
	if m, data, ok := dataURL(u); ok {
		if mime == "" {
			mime = m
		}
		if strings.HasPrefix(mime, "image/") {
			return harness.ImageNote(mime, len(data))
		}
		return fmt.Sprintf("[file %s: %s, %d bytes]", name, mime, len(data)*3/4)
	}
	where := u
	if p, err := url.Parse(u); err == nil && p.Scheme == "file" {
		where = p.Path
	}
	return fmt.Sprintf("[file %s: %s, %s]", name, mime, where)
}

// filePartEvents reads a file part: a person's (or opencode's synthetic)
// attachment that opencode sends to the model, an image or another
// non-text file, is a prompt whose text is the file's note and whose
// metadata holds the part (MetaFile); a text file or a folder (opencode
// sends their content as the synthetic text parts beside them, not the
// part) and an assistant's file are output events naming the file.
func filePartEvents(r *Row, d map[string]any, role string, at time.Time) []events.Event {
	str := func(k string) string { s, _ := d[k].(string); return s }
	mime, u, name := str("mime"), str("url"), str("filename")
	note := fileNote(mime, u, name)
	if role == "user" && mime != "text/plain" && mime != "application/x-directory" {
		f := map[string]any{"mime": mime, "url": u}
		if name != "" {
			f["filename"] = name
		}
		x := events.Event{Type: events.Prompt, Source: "user", Text: note, ID: r.ID(), Time: at, Metadata: map[string]any{MetaFile: f}}
		if d["synthetic"] == true {
			x.Source, x.Meta = "system", true
		}
		return []events.Event{x}
	}
	return []events.Event{{Type: events.Output, Subtype: "opencode/part/file", Text: note, ID: r.ID(), Time: at}}
}

// attachmentResult is a completed tool's result with its attachments:
// the content the output and a note for each attachment, the blocks the
// output as a text block, then each image as a Messages API image block
// (base64 source) and each other file as recorded (a file part), its
// note in the text block so that harnesses without a form for it read
// it.
func attachmentResult(output string, atts []any) *events.Result {
	res := &events.Result{Content: output}
	if len(atts) == 0 {
		return res
	}
	text, notes := output, []string{output}
	var files []any
	for _, a := range atts {
		m, ok := a.(map[string]any)
		if !ok {
			continue
		}
		mime, _ := m["mime"].(string)
		u, _ := m["url"].(string)
		name, _ := m["filename"].(string)
		note := fileNote(mime, u, name)
		notes = append(notes, note)
		if mt, data, ok := dataURL(u); ok && strings.HasPrefix(mt, "image/") {
			files = append(files, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": mt, "data": data}})
			continue
		}
		text = harness.JoinNonEmpty([]string{text, note}, "\n")
		f := map[string]any{"type": "file", "mime": mime, "url": u}
		if name != "" {
			f["filename"] = name
		}
		files = append(files, f)
	}
	res.Content = harness.JoinNonEmpty(notes, "\n")
	res.Blocks = append([]any{map[string]any{"type": "text", "text": text}}, files...)
	return res
}

// resultFiles reads a result's recorded blocks for opencode: the text of
// its text blocks (ok when it has one: the result's own text, without the
// notes a decoder added for its images), the images and files as file
// parts (from Messages API base64 sources, Pi's {data, mimeType}, Codex's
// input_image data URLs and opencode's own file parts), and a note for
// each other block, which opencode has no form for.
func resultFiles(r *events.Result) (text string, ok bool, files []map[string]any, notes []string) {
	if r == nil {
		return "", false, nil, nil
	}
	var texts []string
	for _, b := range r.Blocks {
		m, isMap := b.(map[string]any)
		if !isMap {
			continue
		}
		switch m["type"] {
		case "text", "input_text", "output_text":
			s, _ := m["text"].(string)
			texts, ok = append(texts, s), true
			continue
		case "image":
			data, _ := m["data"].(string)
			mime, _ := m["mimeType"].(string)
			if src, isSrc := m["source"].(map[string]any); isSrc && src["type"] == "base64" {
				data, _ = src["data"].(string)
				mime, _ = src["media_type"].(string)
			}
			if data != "" && mime != "" {
				files = append(files, map[string]any{"type": "file", "mime": mime, "url": "data:" + mime + ";base64," + data})
				continue
			}
		case "input_image":
			if u, _ := m["image_url"].(string); u != "" {
				mime, _, isData := dataURL(u)
				if isData {
					files = append(files, map[string]any{"type": "file", "mime": mime, "url": u})
					continue
				}
			}
		case "file":
			if u, _ := m["url"].(string); u != "" {
				f := map[string]any{"type": "file", "mime": m["mime"], "url": u}
				if n, _ := m["filename"].(string); n != "" {
					f["filename"] = n
				}
				files = append(files, f)
				continue
			}
		}
		typ, _ := m["type"].(string)
		notes = append(notes, fmt.Sprintf("[%s block]", typ))
	}
	return strings.Join(texts, "\n"), ok, files, notes
}
