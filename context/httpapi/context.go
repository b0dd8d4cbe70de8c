package httpapi

import (
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/ingest"
)

// ContextRequest is the body of POST /v1/sessions/{sid}/context: the
// harness's whole message log as it is now, as Pi's messages (Messages) or
// as ctxstore's harness-neutral messages (Log); exactly one is given.
type ContextRequest struct {
	Messages []PiMessage      `json:"messages,omitempty"`
	Log      []ingest.Message `json:"log,omitempty"`
}

// ContextResponse is the context of the next model call.
type ContextResponse struct {
	// Messages is the context in Pi's message shape (for a Messages
	// request); Assembled is it in ctxstore's own shape (for a Log request).
	Messages  []PiOutMessage     `json:"messages,omitempty"`
	Assembled []assemble.Message `json:"assembled,omitempty"`
	// SystemPrompt is the system prompt the model must be sent.
	SystemPrompt string `json:"system_prompt"`
	// Call is the call's number and CommitID its context commit.
	Call     int    `json:"call"`
	CommitID string `json:"commit_id"`
	// Rebased says whether this call rewrote the tail of the context (from
	// byte RebaseOffset of its rendering, -1 otherwise), and why.
	Rebased      bool   `json:"rebased"`
	RebaseReason string `json:"rebase_reason,omitempty"`
	RebaseOffset int    `json:"rebase_offset"`
	// Bytes, Tokens and StaleTokens measure the rendering.
	Bytes       int `json:"bytes"`
	Tokens      int `json:"tokens"`
	StaleTokens int `json:"stale_tokens"`
	// Ingested says what ingesting the log did.
	Ingested ingest.Report `json:"ingested"`
}

func (s *Server) context(q *request) (any, error) {
	var req ContextRequest
	if err := q.decode(&req); err != nil {
		return nil, err
	}
	if (req.Messages == nil) == (req.Log == nil) {
		return nil, badRequest("give messages (Pi's) or log (ctxstore's), exactly one")
	}
	var lg piLog
	log := req.Log
	if req.Messages != nil {
		var err error
		if lg, err = fromPi(req.Messages); err != nil {
			return nil, err
		}
		log = lg.log
	}
	l, err := s.lock(q.sid)
	if err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	start := time.Now()
	c, rep, err := l.in.Context(q.ctx, log)
	if err != nil {
		return nil, err
	}
	// The time spent in the context manager itself (ingestion and
	// assembly), so clients can tell it from HTTP and JSON.
	q.timing = fmt.Sprintf("cm;desc=\"ingest+assemble\";dur=%.3f", float64(time.Since(start).Microseconds())/1000)
	resp := ContextResponse{SystemPrompt: c.System(), Call: c.N, CommitID: c.CommitID, Rebased: c.Rebased,
		RebaseReason: c.Reason, RebaseOffset: c.RebaseOffset, Bytes: len(c.Bytes), Tokens: c.Tokens,
		StaleTokens: c.StaleTokens, Ingested: rep}
	if req.Messages != nil {
		resp.Messages = toPi(c.Messages(), lg)
		if resp.Messages == nil {
			resp.Messages = []PiOutMessage{}
		}
	} else {
		resp.Assembled = c.Messages()
	}
	return resp, nil
}
