package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/internal/jsontext"
	"github.com/ctxstore/ctxstore/objects/conversation"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/pi"
	"github.com/ctxstore/ctxstore/server/delta"
)

// ContextRequest is the body of POST /v1/sessions/{sid}/context: the
// harness's message log as it is now, as Pi's messages (Messages) or as
// ctxstore's harness-neutral messages (Log); exactly one is given.
//
// Pi's log may be sent as a delta: Base > 0 says that the log begins with
// the first Base messages of the previous Pi request of this session
// (BaseSHA256 is the SHA-256, in hex, of their JSON as sent, each followed
// by a newline), and Messages holds only what follows. A base the server
// does not hold, or one shorter than the log it holds (a replaced log),
// answers 409 log_mismatch; the client then sends the whole log. HaveCall
// is the call number of the last answer the client holds: when it is the
// server's last answer too, the answer is a delta as well
// (ContextResponse.Keep).
type ContextRequest struct {
	Messages   []json.RawMessage      `json:"messages,omitempty"`
	Base       int                    `json:"base,omitempty"`
	BaseSHA256 string                 `json:"base_sha256,omitempty"`
	HaveCall   int                    `json:"have_call,omitempty"`
	Log        []conversation.Message `json:"log,omitempty"`
	// Events are what the harness did to its session since its previous
	// call (Pi: a fork, a tree navigation, a compaction), each an object
	// with a "type"; they are recorded with this call's context commit, in
	// its harness meta under "events", for the commit history to read
	// (docs/service.md, "Harness events").
	Events []map[string]any `json:"events,omitempty"`
	// CacheRenewedAt, when set (RFC 3339), is when the harness last
	// renewed the session's prompt-cache entry since its previous call
	// without a call of its own: a warm request that sent the previous
	// request again (Pi's cache warming). The call's idle time counts from
	// it (assemble.Assembler.Renewed): a warmed pause is not a cold cache.
	CacheRenewedAt string `json:"cache_renewed_at,omitempty"`
}

// ContextResponse is the context of the next model call.
type ContextResponse struct {
	// Messages is the context in Pi's message shape (PiOutMessage; for a
	// Messages request): the messages after the first Keep of the answer to
	// call HaveCall, which the client keeps (Keep is 0 for a whole
	// context). Assembled is the context in ctxstore's own shape (for a Log
	// request).
	Messages  []json.RawMessage  `json:"messages,omitempty"`
	Keep      int                `json:"keep"`
	Assembled []assemble.Message `json:"assembled,omitempty"`
	// SystemPrompt is the system prompt the model must be sent.
	SystemPrompt string `json:"system_prompt"`
	// WithheldTools name the session's tools the harness leaves out of
	// this call's request (a lean head, OpenRequest.LeanHead); absent
	// once ctxstore's head is the managed one.
	WithheldTools []string `json:"withheld_tools,omitempty"`
	// HeadChanged tells that the head (system prompt, tools) changed at
	// this call: nothing before it is a cached prefix.
	HeadChanged bool `json:"head_changed,omitempty"`
	// HeadTTLSeconds is how long the harness should ask the provider to
	// keep the head (system prompt and tools) cached at this call, where
	// it places the breakpoints (Anthropic's cache_control "ttl": "1h"):
	// set once the session has begun a turn with the cache cold
	// (assemble.Policy.HeadTTL); absent: the harness's default.
	HeadTTLSeconds int `json:"head_ttl_seconds,omitempty"`
	// Call is the call's number and CommitID its context commit.
	Call     int    `json:"call"`
	CommitID string `json:"commit_id"`
	// Rebased says whether this call rewrote the tail of the context (from
	// byte RebaseOffset of its rendering, -1 otherwise), and why.
	Rebased      bool   `json:"rebased"`
	RebaseReason string `json:"rebase_reason,omitempty"`
	RebaseOffset int    `json:"rebase_offset"`
	// Stable is how many leading messages of the context no later call
	// changes (assemble.Assembled.Stable): where a prompt-cache breakpoint
	// stays valid. The system prompt and tools are stable too.
	Stable int `json:"stable"`
	// Bytes, Tokens and StaleTokens measure the rendering; HeadTokens is
	// the head's part of Tokens (system prompt and tools): what a head
	// cached for longer (HeadTTLSeconds) holds, which a warm request does
	// not need to keep (the Pi extension weighs its cache warming by it).
	Bytes       int `json:"bytes"`
	Tokens      int `json:"tokens"`
	StaleTokens int `json:"stale_tokens"`
	HeadTokens  int `json:"head_tokens"`
	// Ingested says what ingesting the log did.
	Ingested ingest.Report `json:"ingested"`
	// Converted says what converting Pi's log (for a Messages request; the
	// whole log, not only the delta) set aside.
	Converted *Converted `json:"converted,omitempty"`
}

// Converted says what the Pi converter (harness/pi, the transcript
// reader's too) set aside of a log. Unknown roles and content blocks are
// skipped and counted, never refused: a Pi release that adds a role must
// not switch ctxstore off.
type Converted struct {
	// Unknown counts unknown roles ("message/<role>") and content blocks
	// ("block/<type>").
	Unknown map[string]int `json:"unknown,omitempty"`
	// Skipped counts messages that carry nothing for the model ("!!" bash
	// executions, blank messages, results of aborted responses, damaged
	// messages).
	Skipped map[string]int `json:"skipped,omitempty"`
	// Aborted counts responses that errored or were aborted (kept without
	// their text and tool calls); Images the images replaced by a note.
	Aborted int `json:"aborted,omitempty"`
	Images  int `json:"images,omitempty"`
	// Problems are damaged messages; Line is the message's position in the
	// log, from 1.
	Problems []harness.Problem `json:"problems,omitempty"`
}

func convertedOf(r *harness.Report) *Converted {
	if r == nil {
		return &Converted{}
	}
	return &Converted{Unknown: r.Unknown, Skipped: r.Skipped, Aborted: r.Aborted, Images: r.Images, Problems: r.Problems}
}

// CodeLogMismatch answers a delta whose base the server does not hold.
const CodeLogMismatch = "log_mismatch"

// piState is what a session keeps of the Pi log it was sent and of its
// last answer, so both can travel as deltas (package delta: of the log,
// its length and running digest; of the answer, a digest per message of
// its end), and of the log's conversion only what the ingester may read
// again (ingest.Ingester.Need: the turn in progress, the messages after
// the last conversation commit). Nothing it keeps grows with the log.
type piState struct {
	log    delta.Log
	answer delta.Answer
	conv   pi.Converter
	start  int // conv.Log holds the converted log from this message on
}

// apply makes the state's log the first base messages of the previous
// one followed by tail, converting only what is new. It returns the
// converted log (the part the state holds) and how many of its leading
// messages are those of the previous one (the converter appends, so all
// of them when the log grew by appending; 0 for a whole log), which the
// ingester then need not check again. A base the state does not hold
// answers log_mismatch (delta.Log.Check), and so does a base shorter than
// the log it holds (a replaced or shortened log: converting its prefix
// again would need the messages, which the state does not keep); the
// client then sends the whole log, which is converted anew.
func (st *piState) apply(base int, baseSum string, tail []json.RawMessage) (ingest.Log, int, error) {
	if err := st.log.Check(base, baseSum); err != nil {
		return ingest.Log{}, 0, errorf(http.StatusConflict, CodeLogMismatch, "%v: send the whole log", err)
	}
	same := st.start + len(st.conv.Log)
	if base == 0 { // the whole log: convert it anew
		st.forget()
		same = 0
	}
	for i, raw := range tail {
		// The converter skips and counts what it does not know; a
		// problem's line is the message's position, from 1.
		st.conv.AddJSON(raw, base+i+1)
		st.log.Add(raw)
	}
	return ingest.Log{Start: st.start, Messages: st.conv.Log}, same, nil
}

// trim drops the converted messages before need (ingest.Ingester.Need):
// no later call reads them.
func (st *piState) trim(need int) {
	k := min(need-st.start, len(st.conv.Log))
	if k <= 0 {
		return
	}
	clear(st.conv.Log[:k])
	st.conv.Log = st.conv.Log[k:]
	st.start += k
}

// forget drops the log the state holds (not the last answer): the
// client's next delta gets log_mismatch, and it sends the whole log.
func (st *piState) forget() {
	*st = piState{answer: st.answer}
}

// windowErr answers ingest.ErrLogWindow (the call needs messages of the
// log the state no longer holds) with log_mismatch, after forgetting the
// log: the client sends the whole log. Other errors are returned as they
// are.
func (st *piState) windowErr(err error) error {
	if !errors.Is(err, ingest.ErrLogWindow) {
		return err
	}
	st.forget()
	return errorf(http.StatusConflict, CodeLogMismatch, "this call needs messages of the log the server no longer holds: send the whole log")
}

// context is POST /v1/sessions/{sid}/context: the request (the harness's
// log, whole or as a delta), the runtime (the log ingested and the call
// assembled, which writes its context commit), the response (the context
// in the harness's shape, whole or as a delta).
func (s *Server) context(q *request) (any, error) {
	req, renewed, err := decodeContext(q)
	if err != nil {
		return nil, err
	}
	l, err := s.lock(q.sid)
	if err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	c, rep, err := s.assembleCall(q, l, req, renewed)
	if err != nil {
		return nil, err
	}
	resp := contextResponse(c, rep)
	if req.Messages == nil {
		return resp, answerWhole(q, l, c, &resp)
	}
	return resp, answerPi(q, l, req.HaveCall, c, &resp)
}

// decodeContext reads and checks a context request; renewed is its
// cache_renewed_at (zero when absent).
func decodeContext(q *request) (req ContextRequest, renewed time.Time, err error) {
	body, err := q.jsonBody()
	if err != nil {
		return req, renewed, err
	}
	if err := decodeContextBody(body, &req); err != nil {
		return req, renewed, err
	}
	if err := noRepeatedKey(body); err != nil {
		return req, renewed, err
	}
	if (req.Messages == nil) == (req.Log == nil) {
		return req, renewed, badRequest("give messages (Pi's) or log (ctxstore's), exactly one")
	}
	if req.Base < 0 || (req.Base > 0 && req.Messages == nil) {
		return req, renewed, badRequest("base is for a delta of Pi's messages")
	}
	for i, e := range req.Events {
		if t, _ := e["type"].(string); t == "" {
			return req, renewed, badRequest("events[%d]: an event needs a type (a non-empty string)", i)
		} else if t == EventContextEdit {
			if err := checkEdit(i, e); err != nil {
				return req, renewed, err
			}
		}
	}
	if req.CacheRenewedAt != "" {
		if renewed, err = time.Parse(time.RFC3339Nano, req.CacheRenewedAt); err != nil {
			return req, renewed, badRequest("cache_renewed_at: not an RFC 3339 time: %q", req.CacheRenewedAt)
		}
	}
	return req, renewed, nil
}

// assembleCall applies the request's log to the session (a Pi log through
// its delta state and converter), ingests it and assembles the call.
func (s *Server) assembleCall(q *request, l *live, req ContextRequest, renewed time.Time) (*assemble.Assembled, ingest.Report, error) {
	if err := s.o.Limits.check(&req, l.in.Applied()); err != nil {
		return nil, ingest.Report{}, err
	}
	log, same := ingest.Whole(req.Log), 0
	if req.Messages != nil {
		var err error
		if log, same, err = l.pi.apply(req.Base, req.BaseSHA256, req.Messages); err != nil {
			return nil, ingest.Report{}, err
		}
	}
	// The harness compacted its log since the last call (Pi on a provider
	// overflow): the log ctxstore saw last is checkpointed, then a
	// compaction commit holds the summary, and this call's compacted log is
	// committed on top of it.
	if sum, ok := compactionSummary(req.Events, req.Messages); ok {
		if _, err := l.in.CompactLast(q.ctx, sum); err != nil {
			return nil, ingest.Report{}, l.pi.windowErr(err)
		}
	}
	// The harness edited results it had sent before (Pi's context_edit):
	// what the session recorded of them is rewritten before the log,
	// which carries the edits, is ingested (edits.go).
	if err := s.editResults(q.ctx, l, log, req.Events); err != nil {
		return nil, ingest.Report{}, err
	}
	if !renewed.IsZero() {
		l.asm.Renewed(renewed) // the commit records it when it counts ("cache_renewed")
	}
	start := time.Now()
	c, rep, err := l.in.ContextLog(q.ctx, log, same, req.Events)
	if err != nil {
		return nil, rep, l.pi.windowErr(err)
	}
	if req.Messages != nil {
		l.pi.trim(l.in.Need())
	}
	s.spillAfterCall(l, c) // spill.go: before the model can read the context
	s.logCall(q.sid, c, time.Since(start))
	s.afterContext(q.sid) // recall.go: the session index, when due
	// The time spent in the context manager itself (ingestion and
	// assembly), so clients can tell it from HTTP and JSON.
	q.timing = fmt.Sprintf("cm;desc=\"ingest+assemble\";dur=%.3f", float64(time.Since(start).Microseconds())/1000)
	return c, rep, nil
}

// contextResponse is the answer's account of the call, without its
// messages.
func contextResponse(c *assemble.Assembled, rep ingest.Report) ContextResponse {
	return ContextResponse{SystemPrompt: c.System(), WithheldTools: c.Withheld(), HeadChanged: c.HeadChanged,
		HeadTTLSeconds: int(c.HeadTTL / time.Second), Call: c.N, CommitID: c.CommitID, Rebased: c.Rebased,
		RebaseReason: c.Reason, RebaseOffset: c.RebaseOffset, Stable: c.Stable, Bytes: c.Len(), Tokens: c.Tokens,
		StaleTokens: c.StaleTokens, HeadTokens: c.HeadTokens, Ingested: rep}
}

// answerWhole answers a harness-neutral log with the whole context, at
// every call: the session keeps its whole stream in memory from now on
// (what was released, in a session that was sent Pi's deltas before, is
// rebuilt from the commits).
func answerWhole(q *request, l *live, c *assemble.Assembled, resp *ContextResponse) error {
	l.asm.SetRelease(false)
	w, err := c.Whole(q.ctx)
	if err != nil {
		return err
	}
	resp.Assembled = w.Messages()
	return nil
}

// answerPi answers a Pi log with the context in Pi's shape, as a delta
// over the answer the client holds (have) when the server's last answer is
// that one. Only the new part of the answer is converted and encoded, and
// the server keeps a digest of each message it answered rather than the
// message (delta.Answer): the messages the previous answer had before its
// Stable mark are, by Stable's contract, this answer's first messages too,
// and encode the same while the converter's model is the same. A client
// that does not hold the previous answer gets every message.
func answerPi(q *request, l *live, have int, c *assemble.Assembled, resp *ContextResponse) error {
	resp.Converted = convertedOf(l.pi.conv.Report)
	model := l.pi.conv.API + "\x00" + l.pi.conv.Provider + "\x00" + l.pi.conv.Model
	reuse := l.pi.answer.Reuse(model)
	held := l.pi.answer.Held(have)
	if have > 0 {
		// A client that holds answers gets deltas: the session's frozen
		// prefix can leave memory, since only a rare whole answer (a
		// client restarted, a log sent whole again) reads it, rebuilt from
		// the commits. A client that never says what it holds gets whole
		// answers from memory.
		l.asm.SetRelease(true)
	}
	from := reuse
	if !held {
		from = 0
	}
	enc, sums, n, err := encodePi(q, l, c, from, reuse)
	if err != nil {
		return err
	}
	reuse, from = min(reuse, n), min(from, n)
	if held {
		resp.Keep = l.pi.answer.Keep(reuse, n, sums)
	}
	resp.Messages = append(make([]json.RawMessage, 0, n-resp.Keep), enc[resp.Keep-from:]...)
	l.pi.answer.Record(c.N, n, c.Stable, model, reuse, sums)
	return nil
}

// encodePi encodes the context's messages from `from` on in Pi's shape
// (enc[i] is message from+i) and digests those from reuse on (sums[i] is
// message reuse+i's); n is the number of messages of the context. The
// messages before the frozen prefix's end are not in memory
// (assemble.Options.Release): a client that does not hold the last answer
// gets the whole context rebuilt from the commits.
func encodePi(q *request, l *live, c *assemble.Assembled, from, reuse int) (enc []json.RawMessage, sums [][32]byte, n int, err error) {
	w := c
	if from < c.Released() {
		if w, err = c.Whole(q.ctx); err != nil {
			return nil, nil, 0, err
		}
	}
	ms, n := w.MessagesFrom(from)
	reuse, from = min(reuse, n), min(from, n) // past the end: none to build
	enc = make([]json.RawMessage, n-from)
	sums = make([][32]byte, n-reuse)
	all := func() []assemble.Message { // a tool name the converter does not know (rare)
		w, err := w.Whole(q.ctx)
		if err != nil {
			return ms
		}
		return w.Messages()
	}
	for i, m := range toPiFrom(ms, &l.pi.conv, all) {
		if enc[i], err = jsontext.Marshal(m); err != nil {
			return nil, nil, 0, err
		}
		if from+i >= reuse {
			sums[from+i-reuse] = sha256.Sum256(enc[i])
		}
	}
	return enc, sums, n, nil
}

// compactionSummary returns the summary of a compaction the harness
// reported among events: the text of the compaction-summary message that
// now opens Pi's log (Pi's compactionSummary role). ok is false without a
// compaction event, or when the log holds no summary to record.
func compactionSummary(events []map[string]any, msgs []json.RawMessage) (string, bool) {
	compacted := false
	for _, e := range events {
		if t, _ := e["type"].(string); t == "compaction" {
			compacted = true
		}
	}
	if !compacted {
		return "", false
	}
	for _, raw := range msgs {
		var m struct {
			Role    string `json:"role"`
			Summary string `json:"summary"`
		}
		if json.Unmarshal(raw, &m) == nil && m.Role == "compactionSummary" && m.Summary != "" {
			return m.Summary, true
		}
	}
	return "", false
}

// decodeContextBody decodes a context request's body as q.decode would,
// streaming: Pi's messages are not copied but sliced out of the body (which
// the request holds until it ends, read once), and the decoder holds one
// message at a time rather than the whole body. A log of large tool
// outputs is most of its body: decoding it whole into json.RawMessage
// values held the body three times at once (the body, the decoder's
// buffer of it, grown by doubling, and the messages' copies).
func decodeContextBody(body []byte, req *ContextRequest) error {
	bad := func(err error) error {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return badRequest("request body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return badRequest("the request needs a JSON body")
	case err != nil:
		return bad(err)
	case tok == nil: // null, as encoding/json reads it: nothing given
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return badRequest("request body: more than one JSON value")
		}
		return nil
	case tok != json.Delim('{'):
		return badRequest("request body: a context request is a JSON object, not %s", jsonKind(tok))
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		key, _ := tok.(string)
		var field any
		// Keys match fields as encoding/json matches them: exactly, or
		// else without regard to case.
		switch {
		case strings.EqualFold(key, "messages"):
			msgs, err := rawMessages(dec, body)
			if err != nil {
				return bad(fmt.Errorf("messages: %w", err))
			}
			req.Messages = msgs
			continue
		case strings.EqualFold(key, "base"):
			field = &req.Base
		case strings.EqualFold(key, "base_sha256"):
			field = &req.BaseSHA256
		case strings.EqualFold(key, "have_call"):
			field = &req.HaveCall
		case strings.EqualFold(key, "log"):
			field = &req.Log
		case strings.EqualFold(key, "events"):
			field = &req.Events
		case strings.EqualFold(key, "cache_renewed_at"):
			field = &req.CacheRenewedAt
		default:
			field = new(skipped) // unknown fields are ignored
		}
		if err := dec.Decode(field); err != nil {
			return bad(fmt.Errorf("%s: %w", key, err))
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return bad(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("request body: more than one JSON value")
	}
	return nil
}

// rawMessages reads a JSON array of values (or null) at dec's position and
// returns each value as the bytes of body it is made of, not copied.
func rawMessages(dec *json.Decoder, body []byte) ([]json.RawMessage, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, nil
	}
	if tok != json.Delim('[') {
		return nil, fmt.Errorf("an array, not %s", jsonKind(tok))
	}
	msgs := []json.RawMessage{} // present, even empty: not nil
	for dec.More() {
		start := dec.InputOffset()
		if err := dec.Decode(new(skipped)); err != nil {
			return nil, err
		}
		// From the end of the previous token: the separating comma and
		// white space, then the value.
		raw := bytes.TrimLeft(body[start:dec.InputOffset()], " \t\r\n,")
		msgs = append(msgs, raw[:len(raw):len(raw)])
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		return nil, err
	}
	return msgs, nil
}

// skipped is a JSON value decoded only to be read past: the decoder checks
// it and hands it over, and nothing is kept.
type skipped struct{}

func (*skipped) UnmarshalJSON([]byte) error { return nil }

// jsonKind names the kind of a JSON token for an error.
func jsonKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}
