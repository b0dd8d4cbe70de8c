package httpapi

import (
	"encoding/base64"
	"time"

	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// The context-commit routes (docs/commits.md, docs/service.md "Context
// commits"); every one needs an unrestricted token.
func (s *Server) commitRoutes() []route {
	return []route{
		{method: "POST", path: "/v1/commits", scope: scopeAll, h: s.checkpoint},
		{method: "GET", path: "/v1/commits/{ctx}", scope: scopeAll, h: s.showCommit},
		{method: "GET", path: "/v1/commits/{ctx}/history", scope: scopeAll, h: s.commitHistory},
		{method: "POST", path: "/v1/commits/{ctx}/materialize", scope: scopeAll, h: s.materialize},
		{method: "POST", path: "/v1/commits/{ctx}/metadata", scope: scopeAll, h: s.updateCommit},
		{method: "POST", path: "/v1/commits/{ctx}/fork", scope: scopeAll, h: s.forkCommit},
		{method: "GET", path: "/v1/principals/{principal}/commit", scope: scopeAll, h: s.resolveCommit},
		{method: "POST", path: "/v1/import", scope: scopeAll, h: s.importSessions, bodyTypes: importTypes},
	}
}

func (s *Server) commits() *commits.Service {
	return commits.New(s.st, commits.Options{Now: s.o.Now, Registry: formats.Commits()})
}

// commitOptions are the conversation-commit options of a session opened
// with req (nil when the server's CommitEvery is "off").
func (s *Server) commitOptions(req OpenRequest) *ingest.CommitOptions {
	if s.o.CommitEvery == "off" {
		return nil
	}
	co := &ingest.CommitOptions{Service: s.commits(), Every: s.o.CommitEvery}
	if req.Provenance != nil {
		co.Provenance = *req.Provenance
	}
	if co.Provenance.Harness == "" {
		co.Provenance.Harness = req.Harness
	}
	return co
}

// CheckpointBody is POST /v1/commits: a commit's content as text
// (content), bytes (content_base64) or neutral events (events).
type CheckpointBody struct {
	Parent        string         `json:"parent,omitempty"`
	Type          string         `json:"type,omitempty"`
	Format        string         `json:"format,omitempty"`
	Content       *string        `json:"content,omitempty"`
	ContentBase64 *string        `json:"content_base64,omitempty"`
	Events        []events.Event `json:"events,omitempty"`
	commits.Provenance
	Summary      string    `json:"summary,omitempty"`
	Tags         []string  `json:"tags,omitempty"`
	MessageCount int64     `json:"message_count,omitempty"`
	TokenCount   int64     `json:"token_count,omitempty"`
	Created      time.Time `json:"created,omitzero"`
}

func (s *Server) checkpoint(q *request) (any, error) {
	var b CheckpointBody
	if err := q.decode(&b); err != nil {
		return nil, err
	}
	b.Provenance.Principal = q.principal // the request's token, never the body's word
	r := commits.CheckpointRequest{Parent: b.Parent, Type: commits.Type(b.Type), Format: b.Format, Events: b.Events,
		Provenance: b.Provenance, Summary: b.Summary, Tags: b.Tags, MessageCount: b.MessageCount, TokenCount: b.TokenCount, Created: b.Created}
	n := 0
	if b.Content != nil {
		r.Content = []byte(*b.Content)
		n++
	}
	if b.ContentBase64 != nil {
		data, err := base64.StdEncoding.DecodeString(*b.ContentBase64)
		if err != nil {
			return nil, badRequest("content_base64: %v", err)
		}
		r.Content = data
		n++
	}
	if b.Events != nil {
		n++
	}
	if n != 1 {
		return nil, badRequest("give exactly one of content, content_base64 and events")
	}
	return s.commits().Checkpoint(q.ctx, r)
}

func (s *Server) showCommit(q *request) (any, error) {
	b, err := basisOf(q.r.URL.Query())
	if err != nil {
		return nil, err
	}
	return s.commits().Show(q.ctx, q.r.PathValue("ctx"), b)
}

// CommitHistoryResponse is GET /v1/commits/{ctx}/history: one page of
// the chain; Next, when set, is the commit the following page starts
// from (GET /v1/commits/{next}/history), the parent of the last one here.
type CommitHistoryResponse struct {
	Commits []*commits.Commit `json:"commits"`
	Next    string            `json:"next,omitempty"`
}

// commitHistory walks only the page: the chain is read commit by commit
// from the tip, and a commit's parent never changes, so following Next
// neither skips nor repeats one.
func (s *Server) commitHistory(q *request) (any, error) {
	limit, err := pageLimit(q.r.URL.Query(), "limit", "depth")
	if err != nil {
		return nil, err
	}
	h, err := s.commits().History(q.ctx, q.r.PathValue("ctx"), limit)
	if err != nil {
		return nil, err
	}
	out := CommitHistoryResponse{Commits: h}
	if len(h) == limit {
		out.Next = h[len(h)-1].Parent
	}
	return out, nil
}

// MaterializeBody is POST /v1/commits/{ctx}/materialize.
type MaterializeBody struct {
	Format  string `json:"format,omitempty"`
	Stop    string `json:"stop,omitempty"`
	NoCache bool   `json:"no_cache,omitempty"`
}

// MaterializeResponse is a materialized conversation: its metadata and its
// content as text, or in base64 when it is not UTF-8.
type MaterializeResponse struct {
	*commits.Materialized
	Content       *string `json:"content,omitempty"`
	ContentBase64 *string `json:"content_base64,omitempty"`
}

func materializeResponse(m *commits.Materialized) *MaterializeResponse {
	out := &MaterializeResponse{Materialized: m}
	out.Content, out.ContentBase64 = m.ContentJSON()
	return out
}

func (s *Server) materialize(q *request) (any, error) {
	var b MaterializeBody
	if err := q.decode(&b); err != nil {
		return nil, err
	}
	m, err := s.commits().Materialize(q.ctx, commits.MaterializeRequest{ID: q.r.PathValue("ctx"), Format: formats.Registry().CommitFormatOf(commits.CanonicalFormat(b.Format)), Stop: b.Stop, NoCache: b.NoCache})
	if err != nil {
		return nil, err
	}
	return materializeResponse(m), nil
}

func (s *Server) updateCommit(q *request) (any, error) {
	var u commits.Update
	if err := q.decode(&u); err != nil {
		return nil, err
	}
	return s.commits().UpdateMetadata(q.ctx, q.r.PathValue("ctx"), u)
}

// ForkBody is POST /v1/commits/{ctx}/fork.
type ForkBody struct {
	Session string `json:"session,omitempty"`
	Format  string `json:"format,omitempty"`
	Stop    string `json:"stop,omitempty"`
	commits.Provenance
}

// ForkResponse is the new session, its first commit and the conversation
// it starts with.
type ForkResponse struct {
	Session      string               `json:"session"`
	Commit       *commits.Commit      `json:"commit"`
	Materialized *MaterializeResponse `json:"materialized"`
}

func (s *Server) forkCommit(q *request) (any, error) {
	var b ForkBody
	if err := q.decode(&b); err != nil {
		return nil, err
	}
	b.Provenance.Principal = q.principal
	f, err := s.commits().Fork(q.ctx, commits.ForkRequest{From: q.r.PathValue("ctx"), Session: b.Session, Format: b.Format, Stop: b.Stop, Provenance: b.Provenance})
	if err != nil {
		return nil, err
	}
	return ForkResponse{Session: f.Session, Commit: f.Commit, Materialized: materializeResponse(f.Materialized)}, nil
}

func (s *Server) resolveCommit(q *request) (any, error) {
	at := s.o.Now()
	if v := q.r.URL.Query().Get("at"); v != "" {
		t, err := store.ParseTime(v)
		if err != nil {
			return nil, badRequest("at: %v", err)
		}
		at = t
	}
	return s.commits().Resolve(q.ctx, q.r.PathValue("principal"), at)
}
