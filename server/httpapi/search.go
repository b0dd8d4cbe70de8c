package httpapi

import (
	"encoding/json"
	"time"

	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/store"
)

// SearchRequest is the body of POST /v1/search and the args of the search
// tool (POST /v1/sessions/{sid}/tools/search, where "query" is also
// accepted for "text").
type SearchRequest struct {
	Text     string   `json:"text"`
	Kinds    []string `json:"kinds,omitempty"`
	Sessions []string `json:"sessions,omitempty"`
	// Since and Until bound the tx time of the versions found (RFC 3339).
	Since *time.Time `json:"since,omitempty"`
	Until *time.Time `json:"until,omitempty"`
	// TxID and ValidTime search as of a past basis.
	TxID      *int64     `json:"tx_id,omitempty"`
	ValidTime *time.Time `json:"valid_time,omitempty"`
	Limit     int        `json:"limit,omitempty"`
}

// SearchResponse lists the hits, best first: metadata and snippets only.
type SearchResponse struct {
	Hits []store.SearchHit `json:"hits"`
}

func (r SearchRequest) query() store.SearchQuery {
	q := store.SearchQuery{Text: r.Text, Kinds: r.Kinds, Sessions: r.Sessions, Limit: r.Limit}
	if r.Since != nil {
		q.Since = *r.Since
	}
	if r.Until != nil {
		q.Until = *r.Until
	}
	q.Basis.TxID = r.TxID
	if r.ValidTime != nil {
		q.Basis.ValidTime = *r.ValidTime
	}
	return q
}

// search is POST /v1/search: full-text search over the whole store, for
// people and scripts (an unrestricted token; a token limited to sessions
// searches through its sessions' search tool).
func (s *Server) search(q *request) (any, error) {
	var req SearchRequest
	if err := q.decode(&req); err != nil {
		return nil, err
	}
	if req.Text == "" {
		return nil, badRequest("text is required")
	}
	hits, err := recall.Search(q.ctx, s.st, req.query(), recall.Scope{})
	if err != nil {
		return nil, err
	}
	if hits == nil {
		hits = []store.SearchHit{}
	}
	return SearchResponse{Hits: hits}, nil
}

// searchTool is the agent's search tool: the session's tools search within
// what the request's token grants (every session, or only its own), and
// the objects found join the session's pool.
func (s *Server) searchTool(q *request) (any, error) {
	var treq ToolRequest
	if err := q.decode(&treq); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(treq.Args)
	if err != nil {
		return nil, badRequest("args: %v", err)
	}
	var req SearchRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, badRequest("args: %v", err)
	}
	if req.Text == "" {
		req.Text, _ = treq.Args["query"].(string)
	}
	if req.Text == "" {
		return nil, badRequest("search needs args.query (a string)")
	}
	g, err := s.auth.check(q.r)
	if err != nil {
		return nil, err
	}
	sc := recall.Scope{}
	if !g.all {
		sc = recall.SessionScope(g.sessions...)
	}
	l, err := s.lock(q.sid)
	if err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	r, _, err := l.tools.Search(q.ctx, req.query(), sc)
	if err != nil && infrastructure(err) {
		return nil, err
	}
	resp := ToolResponse{Tool: "search", ToolCallID: treq.ToolCallID, OK: err == nil, Message: r.Message, Tx: r.Tx}
	if err != nil {
		resp.Message = err.Error()
	}
	if treq.ToolCallID != "" {
		c := tools.Call{ID: treq.ToolCallID, Tool: "search", Args: treq.Args, Failed: err != nil}
		msg := resp.Message
		c.Output = &msg
		rec, rerr := l.tools.RecordResult(q.ctx, c, r)
		if rerr != nil {
			return nil, rerr
		}
		resp.Tx = rec.Tx
	}
	return resp, nil
}
