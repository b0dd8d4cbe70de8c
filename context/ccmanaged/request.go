package ccmanaged

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxstore/ctxstore/context/ccmanaged/apicheck"
	"github.com/ctxstore/ctxstore/context/tools"
)

// request is one Messages API request as managed mode reads it: its
// top-level fields as they came, its messages, and its tool results in
// order with what managed mode knows of each.
type request struct {
	top     map[string]json.RawMessage
	msgs    []*message
	results []*result
	turns   int // user messages that are not tool results
}

// block is one content block, its fields as they came.
type block map[string]json.RawMessage

func (b block) str(k string) string {
	var s string
	json.Unmarshal(b[k], &s)
	return s
}

// message is one message of the request.
type message struct {
	raw     json.RawMessage
	fields  map[string]json.RawMessage
	role    string
	str     *string // a string content
	blocks  []block
	changed bool
}

// result is one tool_result block and what managed mode knows of it.
type result struct {
	id       string
	msg, blk int
	turn     int
	seq      int64
	tool     string
	readPath string // a whole Read's file_path
	text     string // its text, when its content is text only
	textOK   bool
	preview  string // the spill file a hook's preview names
	spillOf  string // a Read of a spill file: that file
}

// parse reads a request of session sid; what it does not understand is
// an Unknown error.
func (mc *Config) parse(sid string, body []byte) (*request, error) {
	rq := &request{}
	if err := json.Unmarshal(body, &rq.top); err != nil || rq.top == nil {
		return nil, unknown("the body is not a JSON object")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(rq.top["messages"], &raws); err != nil || len(raws) == 0 {
		return nil, unknown("no messages list")
	}
	rq.msgs = make([]*message, len(raws))
	for i, raw := range raws {
		m, err := parseMessage(raw)
		if err != nil {
			return nil, unknown("messages[%d]: %v", i, err)
		}
		rq.msgs[i] = m
	}

	// The tool calls and their results, turn by turn.
	type use struct {
		name, path string
		whole      bool
	}
	uses := map[string]use{}
	for i, m := range rq.msgs {
		if m.role == "user" && !hasResult(m) {
			rq.turns++
		}
		for j, b := range m.blocks {
			switch b.str("type") {
			case "tool_use":
				var in struct {
					Path   string          `json:"file_path"`
					Offset json.RawMessage `json:"offset"`
					Limit  json.RawMessage `json:"limit"`
				}
				json.Unmarshal(b["input"], &in)
				uses[b.str("id")] = use{name: b.str("name"), path: in.Path, whole: isNullRaw(in.Offset) && isNullRaw(in.Limit)}
			case "tool_result":
				r := &result{id: b.str("tool_use_id"), msg: i, blk: j, turn: rq.turns, seq: int64(len(rq.results))}
				u := uses[r.id]
				r.tool = u.name
				if u.name == "Read" && u.whole {
					r.readPath = u.path
				}
				r.text, r.textOK = resultText(b["content"])
				if r.textOK {
					r.preview = hookPreview(r.text, sid, r.id) // the hook's preview: the whole is in its file
				}
				if u.name == "Read" && u.path != "" {
					if f, ok := mc.Spill.File(sid, "x"); ok && strings.HasPrefix(u.path, strings.TrimSuffix(f, "x.txt")) {
						r.spillOf = u.path // the model read an output back
					}
				}
				rq.results = append(rq.results, r)
			}
		}
	}
	return rq, nil
}

// hookPreview returns the spill file a hook's preview of output id names
// ("[ctxstore] ... left out here; Read FILE for the output whole"), when
// the file is that output's in a directory of session sid and exists; ""
// for any other text.
func hookPreview(text, sid, id string) string {
	i := strings.Index(text, "[ctxstore] ")
	if i < 0 {
		return ""
	}
	rest := text[i:]
	j := strings.Index(rest, "left out here; Read ")
	if j < 0 {
		return ""
	}
	rest = rest[j+len("left out here; Read "):]
	k := strings.Index(rest, " for the output whole")
	if k < 0 {
		return ""
	}
	file := rest[:k]
	if !filepath.IsAbs(file) || filepath.Base(file) != tools.SpillName(id) || filepath.Base(filepath.Dir(file)) != sid {
		return ""
	}
	if fi, err := os.Stat(file); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return file
}

// parseMessage reads one message; a role, content or block type not known
// here is an Unknown error.
func parseMessage(raw json.RawMessage) (*message, error) {
	m := &message{raw: raw}
	if err := json.Unmarshal(raw, &m.fields); err != nil || m.fields == nil {
		return nil, errors.New("not an object")
	}
	json.Unmarshal(m.fields["role"], &m.role)
	switch m.role {
	case "user", "assistant", "system":
	default:
		return nil, fmt.Errorf("role %q", m.role)
	}
	c := m.fields["content"]
	if len(c) > 0 && c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, err
		}
		m.str = &s
		return m, nil
	}
	if err := json.Unmarshal(c, &m.blocks); err != nil {
		return nil, errors.New("content neither a string nor a list of blocks")
	}
	for j, b := range m.blocks {
		if t := b.str("type"); !apicheck.Known(t) {
			return nil, fmt.Errorf("content[%d]: a block of type %q", j, t)
		}
	}
	return m, nil
}

// hasResult tells whether a message holds a tool_result.
func hasResult(m *message) bool {
	for _, b := range m.blocks {
		if b.str("type") == "tool_result" {
			return true
		}
	}
	return false
}

// resultText returns a tool_result's content as text, and false when it
// holds anything but text (an image, a document).
func resultText(raw json.RawMessage) (string, bool) {
	if isNullRaw(raw) {
		return "", true
	}
	if raw[0] == '"' {
		var s string
		return s, json.Unmarshal(raw, &s) == nil
	}
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return "", false
	}
	var b strings.Builder
	for i, x := range blocks {
		if x.Type != "text" || x.Text == nil {
			return "", false
		}
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(*x.Text)
	}
	return b.String(), true
}
