package recorded

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/claudecode"
	"github.com/ctxstore/ctxstore/internal/jsontext"
)

// apiRequest is what a Claude Code api-request record says of a request.
type apiRequest struct {
	Model        string
	Params       json.RawMessage
	Thinking     json.RawMessage
	Betas        []string
	CacheControl []string
	Messages     []string
	Shape        string
}

// readRequests reads the api-request, api-request-blob and
// api-request-shape records of Claude Code commit contents, and which
// request each assistant message answered (requestId). A request whose
// message blobs are not all recorded is not used.
func (d *Derived) readRequests(contents [][]byte) {
	rs := newRequests()
	for _, b := range contents {
		rs.read(b)
	}
	rs.prune()
	d.requests, d.blobs, d.reqOf = rs.requests, rs.blobs, rs.reqOf
}

// requests are the recorded requests of a session's Claude Code commits.
type requests struct {
	requests map[string]*apiRequest // request id -> recorded request
	blobs    map[string]json.RawMessage
	reqOf    map[string]string // message id -> request id
}

func newRequests() *requests {
	return &requests{requests: map[string]*apiRequest{}, blobs: map[string]json.RawMessage{}, reqOf: map[string]string{}}
}

// read reads the records of one commit's content.
func (d *requests) read(b []byte) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if bytes.Contains(line, []byte(`"api-request`)) {
			r, err := claudecode.DecodeRecord(harness.Record{Data: line})
			if err != nil || r.Request == nil {
				continue
			}
			q := r.Request
			switch string(r.Type) {
			case "api-request":
				if q.RequestID != "" {
					d.requests[q.RequestID] = &apiRequest{Model: q.Model, Params: q.Params, Thinking: q.Thinking, Betas: q.Betas,
						CacheControl: q.CacheControl, Messages: q.Messages, Shape: q.Shape}
				}
			case "api-request-blob", "api-request-shape":
				if q.Hash != "" && len(q.Body) > 0 {
					d.blobs[q.Hash] = q.Body
				}
			}
			continue
		}
		if !bytes.Contains(line, []byte(`"requestId"`)) {
			continue
		}
		var a struct {
			RequestID harness.Str `json:"requestId"`
			Message   struct {
				ID harness.Str `json:"id"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &a) == nil && a.RequestID != "" && a.Message.ID != "" {
			d.reqOf[string(a.Message.ID)] = string(a.RequestID)
		}
	}
}

// prune drops the requests whose message blobs are not all recorded.
func (d *requests) prune() {
	for id, q := range d.requests {
		for _, h := range q.Messages {
			if _, ok := d.blobs[h]; !ok {
				delete(d.requests, id)
				break
			}
		}
	}
}

// Request is one call's request: its body (an Anthropic Messages body)
// and the spans of its parts.
type Request struct {
	Call Call
	Body []byte
	// Spans label the body's parts: the system prompt, the tool list and
	// each message.
	Spans []Span
	// Exact: the body is the request Claude Code recorded (api-request),
	// not rebuilt from the conversation.
	Exact bool
	// PrevN is the previous call of the lane (0 for a lane's first
	// call), the one a diff compares with.
	PrevN int
}

// Request returns call n's request (n from 1).
func (d *Derived) Request(n int) (*Request, error) {
	if n < 1 || n > len(d.Calls) {
		return nil, fmt.Errorf("session %s has no call %d (it has %d)", d.Session, n, len(d.Calls))
	}
	c := d.Calls[n-1]
	if q := d.requests[c.RequestID]; q != nil && c.RequestID != "" {
		body, spans := exactBody(q, d.blobs, c.Model)
		return &Request{Call: c, Body: body, Spans: spans, Exact: true, PrevN: c.Prev}, nil
	}
	body, spans := d.render.write(d.context(d.byID, c.first))
	return &Request{Call: c, Body: body, Spans: spans, PrevN: c.Prev}, nil
}

// recordedDigests lists a recorded request's message digests and where
// each ends in its body (spans from exactBody): the system prompt and
// the tools stand as one digest of the request's shape each.
func recordedDigests(q *apiRequest, spans []Span) (msgs []string, ends []int) {
	k := 0
	for _, sp := range spans {
		switch sp.Kind {
		case "system", "tools":
			msgs = append(msgs, "s"+q.Shape)
		default:
			msgs = append(msgs, q.Messages[k])
			k++
		}
		ends = append(ends, sp.End)
	}
	return msgs, ends
}

// exactBody writes a recorded request: its model and parameters, its
// system prompt and tools (from the shape record), its messages (from the
// blob records).
func exactBody(q *apiRequest, blobs map[string]json.RawMessage, model string) ([]byte, []Span) {
	var buf bytes.Buffer
	var spans []Span
	buf.WriteString(`{`)
	m := q.Model
	if m == "" {
		m = model
	}
	mj, _ := jsontext.Marshal(m)
	buf.WriteString(`"model":`)
	buf.Write(mj)
	var params map[string]json.RawMessage
	if json.Unmarshal(q.Params, &params) == nil {
		for _, k := range slices.Sorted(maps.Keys(params)) {
			if k == "model" || k == "messages" || k == "system" || k == "tools" {
				continue
			}
			kj, _ := jsontext.Marshal(k)
			buf.WriteByte(',')
			buf.Write(kj)
			buf.WriteByte(':')
			buf.Write(params[k])
		}
	}
	if len(q.Thinking) > 0 && params["thinking"] == nil {
		buf.WriteString(`,"thinking":`)
		buf.Write(q.Thinking)
	}
	if len(q.Betas) > 0 {
		bj, _ := jsontext.Marshal(q.Betas)
		buf.WriteString(`,"betas":`)
		buf.Write(bj)
	}
	var shape map[string]json.RawMessage
	if s, ok := blobs[q.Shape]; ok {
		_ = json.Unmarshal(s, &shape)
	}
	for _, k := range []string{"system", "tools"} {
		if v, ok := shape[k]; ok {
			buf.WriteString(`,"` + k + `":`)
			start := buf.Len()
			buf.Write(v)
			spans = append(spans, Span{Kind: k, Role: "system", Start: start, End: buf.Len()})
		}
	}
	buf.WriteString(`,"messages":[`)
	for i, h := range q.Messages {
		if i > 0 {
			buf.WriteByte(',')
		}
		start := buf.Len()
		b := blobs[h]
		buf.Write(b)
		var role struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(b, &role)
		kind := role.Role
		if kind == "user" && bytes.Contains(b, []byte(`"tool_result"`)) {
			kind = "toolref"
		}
		spans = append(spans, Span{Kind: kind, Role: role.Role, Start: start, End: buf.Len()})
	}
	buf.WriteString(`]}`)
	return buf.Bytes(), spans
}
