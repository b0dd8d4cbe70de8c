package claudecode

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// Record is one Claude Code record, decoded: the one reading of a line's
// JSON object in this package. The replay's thread ([Read]), the commit
// codec's events ([Decode]) and the importer's heads ([ReadHead]) are all
// made from Records, so they cannot read a record two ways.
type Record struct {
	envelope
	// AgentID names a sub-agent's records (sidechains).
	AgentID harness.Str `json:"agentId"`
	// LeafUUID and Summary: a "summary" record (a title for a leaf).
	LeafUUID harness.Str `json:"leafUuid"`
	Summary  harness.Str `json:"summary"`
	// AITitle and CustomTitle: the session's title as Claude Code made it
	// ("ai-title") or as the person set it ("custom-title").
	AITitle     harness.Str `json:"aiTitle"`
	CustomTitle harness.Str `json:"customTitle"`
	Title       harness.Str `json:"title"`
	// Content and CompactMetadata: a "system" record's text and a
	// compaction boundary's details.
	Content         harness.Str     `json:"content"`
	CompactMetadata json.RawMessage `json:"compactMetadata"`
	// A "result" record (`claude -p --output-format stream-json`): the
	// outcome, its duration, turns, cost and usage.
	Result       harness.Str     `json:"result"`
	DurationMS   harness.Num     `json:"duration_ms"`
	NumTurns     harness.Num     `json:"num_turns"`
	TotalCostUSD json.RawMessage `json:"total_cost_usd"`
	Usage        json.RawMessage `json:"usage"`
	// ToolUseResult is what a user record says of its tool result beyond
	// the content (only a sub-agent's id is read).
	ToolUseResult toolUseResult `json:"toolUseResult"`
	// Message is the record's message as written (Msg decoded).
	Message json.RawMessage `json:"message"`
	// Diagnostics is a record's own diagnostics object, where Claude Code
	// writes it beside the message rather than in it.
	Diagnostics json.RawMessage `json:"diagnostics"`
	// RequestBody is an api-request record's request when it is nested
	// under "request" rather than written at the top level.
	RequestBody json.RawMessage `json:"request"`

	// Line is the record's line in its file or artifact; Data its JSON.
	Line int             `json:"-"`
	Data json.RawMessage `json:"-"`

	// Msg is the decoded message (nil when the record has none, or
	// MsgErr when it does not decode); Text a string content, Blocks a
	// list content and Raws the list's items as written.
	Msg    *Message          `json:"-"`
	MsgErr error             `json:"-"`
	Text   string            `json:"-"`
	Blocks []Block           `json:"-"`
	Raws   []json.RawMessage `json:"-"`
	// Problems are the content's damage (blocks that are not objects),
	// for the reader that reports them.
	Problems []string `json:"-"`

	// Recorded is an assistant message's recorded usage (nil when it has
	// none), cache writes split by lifetime where Claude Code says so.
	Recorded *Usage `json:"-"`
	// CacheMissReason is the message's diagnostics.cache_miss_reason,
	// written under Anthropic's cache diagnostics ("" when absent).
	CacheMissReason string `json:"-"`
	// Request is what an api-request, api-request-blob or
	// api-request-shape record says (nil for other records).
	Request *Request `json:"-"`
}

// Usage is the usage an assistant record carries, as the API reported it.
type Usage struct {
	Input     int64
	Output    int64
	CacheRead int64
	// CacheWrite is every token written to the cache; CacheWrite5m and
	// CacheWrite1h split it by lifetime when the record has
	// cache_creation (ephemeral_5m_input_tokens, ephemeral_1h_input_tokens).
	// Without the split, CacheWrite is taken for 5-minute writes.
	CacheWrite   int64
	CacheWrite5m int64
	CacheWrite1h int64
}

// Request is what Claude Code (2.1.330 and later) records of a model
// request: an api-request record holds its parameters, betas, thinking
// setting, where cache_control markers sit, the content hashes of its
// messages (each message's bytes in an api-request-blob record) and the
// hash of its system prompt and tools (in an api-request-shape record).
// Fields Claude Code leaves out stay empty; the record's bytes stay in
// Record.Data, so nothing is lost by what is not decoded here.
type Request struct {
	// RequestID is the API request id the assistant records of the
	// response carry as requestId.
	RequestID string
	Model     string
	// Params are the request's other parameters (max_tokens, temperature,
	// metadata, ...), as written.
	Params   json.RawMessage
	Betas    []string
	Thinking json.RawMessage
	// CacheControl are the paths of the cache_control markers in the
	// request (for example "system.1", "messages.12.content.0").
	CacheControl []string
	// Messages are the content hashes of the request's messages, in
	// order; Shape the hash of its system-and-tools shape.
	Messages []string
	Shape    string
	// Hash and Body: an api-request-blob or api-request-shape record's
	// content hash and the bytes it names.
	Hash string
	Body json.RawMessage
}

// SessionTitle is an ai-title or custom-title record's title ("" for
// other records).
func (r *Record) SessionTitle() string {
	switch r.Type {
	case "ai-title":
		return string(firstStr(r.AITitle, r.Title))
	case "custom-title":
		return string(firstStr(r.CustomTitle, r.Title))
	}
	return ""
}

func firstStr(ss ...harness.Str) harness.Str {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// metadata names what the request record says, for its event.
func (q *Request) metadata() map[string]any {
	md := map[string]any{}
	for k, v := range map[string]string{"request_id": q.RequestID, "model": q.Model, "shape": q.Shape, "hash": q.Hash} {
		if v != "" {
			md[k] = v
		}
	}
	if len(q.Messages) > 0 {
		md["messages"] = len(q.Messages)
	}
	if len(md) == 0 {
		return nil
	}
	return md
}

// request is the wire shape of Request, read tolerantly: a field of an
// unexpected type is left empty rather than failing the record.
type request struct {
	RequestID     harness.Str     `json:"requestId"`
	RequestID2    harness.Str     `json:"request_id"`
	Model         harness.Str     `json:"model"`
	Params        json.RawMessage `json:"params"`
	Betas         json.RawMessage `json:"betas"`
	Thinking      json.RawMessage `json:"thinking"`
	CacheControl  json.RawMessage `json:"cacheControlPaths"`
	CacheControl2 json.RawMessage `json:"cache_control_paths"`
	Messages      json.RawMessage `json:"messages"`
	Blobs         json.RawMessage `json:"messageBlobs"`
	Shape         harness.Str     `json:"shape"`
	ShapeHash     harness.Str     `json:"shapeHash"`
	Hash          harness.Str     `json:"hash"`
	Body          json.RawMessage `json:"body"`
	Content       json.RawMessage `json:"content"`
	Data          json.RawMessage `json:"data"`
}

// decodeRequest reads an api-request* record's request from the object
// under "request" when there is one, else from the record itself.
func decodeRequest(r *Record) *Request {
	raw := bytes.TrimSpace(r.RequestBody)
	if len(raw) == 0 || raw[0] != '{' {
		raw = r.Data
	}
	var w request
	if json.Unmarshal(raw, &w) != nil {
		return &Request{}
	}
	q := &Request{RequestID: string(w.RequestID), Model: string(w.Model), Params: w.Params, Thinking: w.Thinking,
		Betas: strs(w.Betas), CacheControl: strs(w.CacheControl), Messages: strs(w.Messages), Shape: string(w.Shape),
		Hash: string(w.Hash), Body: w.Body}
	if q.RequestID == "" {
		q.RequestID = string(w.RequestID2)
	}
	if q.CacheControl == nil {
		q.CacheControl = strs(w.CacheControl2)
	}
	if q.Messages == nil {
		q.Messages = strs(w.Blobs)
	}
	if q.Shape == "" {
		q.Shape = string(w.ShapeHash)
	}
	for _, b := range []json.RawMessage{w.Content, w.Data} {
		if q.Body == nil && len(b) > 0 {
			q.Body = b
		}
	}
	return q
}

// strs reads a list of strings, or of objects naming a hash, path or id;
// anything else is nil.
func strs(raw json.RawMessage) []string {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []string
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			out = append(out, s)
			continue
		}
		var o struct {
			Hash harness.Str `json:"hash"`
			Path harness.Str `json:"path"`
			ID   harness.Str `json:"id"`
		}
		if json.Unmarshal(it, &o) != nil {
			continue
		}
		for _, v := range []harness.Str{o.Hash, o.Path, o.ID} {
			if v != "" {
				out = append(out, string(v))
				break
			}
		}
	}
	return out
}

// envelope is what every Claude Code record says about itself, whatever
// its message.
type envelope struct {
	Type              harness.Str    `json:"type"`
	Subtype           harness.Str    `json:"subtype"`
	UUID              harness.Str    `json:"uuid"`
	ParentUUID        harness.OptStr `json:"parentUuid"`
	LogicalParentUUID harness.Str    `json:"logicalParentUuid"`
	IsSidechain       harness.Flag   `json:"isSidechain"`
	IsMeta            harness.Flag   `json:"isMeta"`
	IsCompactSummary  harness.Flag   `json:"isCompactSummary"`
	SessionID         harness.Str    `json:"sessionId"`
	Timestamp         harness.Str    `json:"timestamp"`
	Cwd               harness.Str    `json:"cwd"`
	Version           harness.Str    `json:"version"`
}

// Message is a record's message: a user's (text or tool results) or a
// model's response.
type Message struct {
	Role    harness.Str     `json:"role"`
	ID      harness.Str     `json:"id"`
	Model   harness.Str     `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   json.RawMessage `json:"usage"`
	// Diagnostics: Anthropic's cache diagnostics (cache_miss_reason).
	Diagnostics json.RawMessage `json:"diagnostics"`
}

// Block is one content block of a message.
type Block struct {
	Type      harness.Str     `json:"type"`
	Text      harness.Str     `json:"text"`
	ID        harness.Str     `json:"id"`
	Name      harness.Str     `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID harness.Str     `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   harness.Flag    `json:"is_error"`
	Source    struct {
		MediaType harness.Str `json:"media_type"`
		Data      harness.Str `json:"data"`
	} `json:"source"`
	// Thinking blocks.
	Thinking  harness.Str `json:"thinking"`
	Signature harness.Str `json:"signature"`
	Data      harness.Str `json:"data"`
}

type usage struct {
	Input         harness.Num     `json:"input_tokens"`
	Output        harness.Num     `json:"output_tokens"`
	CacheRead     harness.Num     `json:"cache_read_input_tokens"`
	CacheWrite    harness.Num     `json:"cache_creation_input_tokens"`
	CacheCreation json.RawMessage `json:"cache_creation"`
}

type cacheCreation struct {
	Short harness.Num `json:"ephemeral_5m_input_tokens"`
	Long  harness.Num `json:"ephemeral_1h_input_tokens"`
}

// decodeUsage reads a usage object (nil when raw is not one).
func decodeUsage(raw json.RawMessage) *Usage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var u usage
	if json.Unmarshal(raw, &u) != nil {
		return nil
	}
	out := &Usage{Input: int64(u.Input), Output: int64(u.Output), CacheRead: int64(u.CacheRead), CacheWrite: int64(u.CacheWrite)}
	var cc cacheCreation
	if len(u.CacheCreation) > 0 && u.CacheCreation[0] == '{' && json.Unmarshal(u.CacheCreation, &cc) == nil && cc.Short+cc.Long > 0 {
		out.CacheWrite5m, out.CacheWrite1h = int64(cc.Short), int64(cc.Long)
		if out.CacheWrite < out.CacheWrite5m+out.CacheWrite1h {
			out.CacheWrite = out.CacheWrite5m + out.CacheWrite1h
		}
	} else {
		out.CacheWrite5m = out.CacheWrite
	}
	return out
}

// missReason reads diagnostics.cache_miss_reason ("" when absent).
func missReason(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return ""
	}
	var d struct {
		Reason harness.Str `json:"cache_miss_reason"`
	}
	if json.Unmarshal(raw, &d) != nil {
		return ""
	}
	return string(d.Reason)
}

// toolUseResult is the part of a record's toolUseResult the importer
// reads: a sub-agent's result names the agent, whose transcript Claude
// Code writes to <session>/subagents/agent-<id>.jsonl.
type toolUseResult struct{ AgentID string }

func (t *toolUseResult) UnmarshalJSON(b []byte) error {
	*t = toolUseResult{}
	if len(b) > 0 && b[0] == '{' {
		var x struct {
			AgentID harness.Str `json:"agentId"`
		}
		if json.Unmarshal(b, &x) == nil {
			t.AgentID = string(x.AgentID)
		}
	}
	return nil
}

// DecodeRecord decodes one record. It fails only when rc is not a JSON
// object; a message that does not decode is left out (MsgErr says why),
// content blocks that are not objects are left out (Problems says so).
func DecodeRecord(rc harness.Record) (*Record, error) {
	r := &Record{Line: rc.Line, Data: rc.Data}
	if err := json.Unmarshal(rc.Data, r); err != nil {
		return nil, err
	}
	switch r.Type {
	case "api-request", "api-request-blob", "api-request-shape":
		r.Request = decodeRequest(r)
	}
	r.CacheMissReason = missReason(r.Diagnostics)
	raw := bytes.TrimSpace(r.Message)
	if len(raw) == 0 || string(raw) == "null" {
		return r, nil
	}
	m := &Message{}
	if err := json.Unmarshal(raw, m); err != nil {
		r.MsgErr = err
		return r, nil
	}
	r.Msg = m
	r.Text, r.Blocks, r.Raws, r.Problems = decodeContent(m.Content)
	if r.Type == "assistant" {
		r.Recorded = decodeUsage(m.Usage)
		if why := missReason(m.Diagnostics); why != "" {
			r.CacheMissReason = why
		}
	}
	return r, nil
}

// decodeContent reads a content field: a string, a list of blocks, or
// nothing. Blocks that are not objects are left out, each with a problem.
func decodeContent(raw json.RawMessage) (text string, blocks []Block, raws []json.RawMessage, problems []string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil, nil
	}
	if json.Unmarshal(raw, &text) == nil {
		return text, nil, nil, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return "", nil, nil, []string{"message content is neither a string nor a list of blocks; left out"}
	}
	for _, it := range items {
		var b Block
		if json.Unmarshal(it, &b) != nil {
			problems = append(problems, "a content block that is not an object; left out")
			continue
		}
		blocks = append(blocks, b)
		raws = append(raws, it)
	}
	return "", blocks, raws, problems
}

// report puts the record's content problems in rep.
func (r *Record) report(rep *harness.Report) {
	for _, p := range r.Problems {
		rep.Problem(r.Line, "%s", p)
	}
}

// blockTexts are the texts of blocks as the model is shown them: text
// blocks as they are, an image as a note, any other block but a
// tool_result as "[type block]". images counts the images.
func blockTexts(bs []Block, images *int) []string {
	var parts []string
	for _, b := range bs {
		switch b.Type {
		case "text":
			parts = append(parts, string(b.Text))
		case "image":
			*images++
			parts = append(parts, harness.ImageNote(string(b.Source.MediaType), len(b.Source.Data)))
		case "tool_result":
		default:
			parts = append(parts, "["+string(b.Type)+" block]")
		}
	}
	return parts
}

// toolResultText flattens a tool_result's content: a string, or blocks
// (text joined with newlines, images as a note, other blocks named).
func toolResultText(b Block, images *int) (string, []string) {
	text, blocks, _, problems := decodeContent(b.Content)
	if blocks == nil {
		return text, problems
	}
	var parts []string
	for _, c := range blocks {
		if c.Type == "tool_result" {
			parts = append(parts, "[tool_result block]")
			continue
		}
		parts = append(parts, blockTexts([]Block{c}, images)...)
	}
	return strings.Join(parts, "\n"), problems
}

// isCompaction reports whether the record opens a compacted continuation.
func (r *Record) isCompaction() bool {
	return bool(r.IsCompactSummary) || r.Subtype == "compact_boundary" ||
		(r.Type == "user" && strings.HasPrefix(strings.TrimSpace(r.firstText()), ContinuedPrefix))
}

func (r *Record) firstText() string {
	if r.Text != "" {
		return r.Text
	}
	for _, b := range r.Blocks {
		if b.Type == "text" {
			return string(b.Text)
		}
	}
	return ""
}

// UserClass returns a user record's class (Class* or an injected subtype)
// and its text (the string content or its text blocks, joined by a blank
// line).
func (r *Record) UserClass() (class, text string) {
	if r.Msg == nil {
		return ClassEmpty, ""
	}
	var parts []string
	results := 0
	if r.Text != "" {
		parts = append(parts, r.Text)
	}
	for _, b := range r.Blocks {
		switch b.Type {
		case "tool_result":
			results++
		case "text":
			parts = append(parts, string(b.Text))
		}
	}
	text = harness.JoinNonEmpty(parts, "\n\n")
	return classifyText(text, results, len(r.Blocks), bool(r.IsMeta), bool(r.IsCompactSummary)), text
}

// usage is the message's usage as a neutral one (nil when it has none).
func (r *Record) usage() *conversation.Usage {
	u := r.Recorded
	if u == nil {
		return nil
	}
	return &conversation.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, CacheWrite1h: u.CacheWrite1h}
}

// known tells the record types of the format (Types, and the "result"
// record of `claude -p --output-format stream-json`), for reading past
// damage.
func known(t string) bool { _, ok := Types[t]; return ok || t == "result" }
