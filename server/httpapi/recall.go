package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/store"
)

// recallState is the server's session index: one indexer, and the
// background indexing runs Close waits for.
type recallState struct {
	once sync.Once
	idx  *recall.Indexer
	wg   sync.WaitGroup

	mu  sync.Mutex
	new map[string]int // user messages ingested since the last check, by session
}

func (s *Server) indexer() *recall.Indexer {
	s.rc.once.Do(func() { s.rc.idx = recall.NewIndexer(s.st, s.o.Recall) })
	return s.rc.idx
}

// grantScope is the recall scope of the request's token.
func (s *Server) grantScope(r *http.Request) (recall.Scope, error) {
	g, err := s.auth.check(r)
	if err != nil {
		return recall.Scope{}, err
	}
	if g.all {
		return recall.Scope{}, nil
	}
	return recall.SessionScope(g.sessions...), nil
}

// onUser is the ingestion hook of session sid: @@ references in user
// messages, resolved within the scope of the token that opened it.
func (s *Server) onUser(ctx context.Context, sid string, sc recall.Scope) func(context.Context, string) ([]string, string, any, error) {
	inj := recall.NewInjector(ctx, s.st, s.indexer(), sc, sid)
	return func(ctx context.Context, text string) ([]string, string, any, error) {
		s.rc.mu.Lock()
		if s.rc.new == nil {
			s.rc.new = map[string]int{}
		}
		s.rc.new[sid]++
		s.rc.mu.Unlock()
		notes, rec, err := inj.Message(ctx, text)
		if rec == nil {
			return notes, "", nil, err
		}
		return notes, recall.RefsKey, rec, err
	}
}

// afterContext indexes session sid in the background when enough new user
// messages arrived (recall.Indexer.MaybeIndex, which checks what the
// stored metadata covers); failures are logged. The count of new messages
// is kept in memory, so a session is looked at only every
// MinNewUserMessages user messages, not at every call.
func (s *Server) afterContext(sid string) {
	set := s.indexer().Settings()
	s.rc.mu.Lock()
	due := !set.Disabled && s.rc.new[sid] >= set.MinNewUserMessages
	s.rc.mu.Unlock()
	if !due {
		return
	}
	s.rc.wg.Add(1)
	go func() {
		defer s.rc.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		// The chat holds completed turns only (the turn in progress is
		// written when the next user message comes), so the last message
		// counted may not be there yet: the count is reset only once the
		// index was written.
		_, did, err := s.indexer().MaybeIndex(ctx, sid)
		if err != nil && store.KindOf(err) != store.ErrConflict {
			s.log.Warn("session index", "session", sid, "err", err)
		}
		if did {
			s.rc.mu.Lock()
			s.rc.new[sid] = 0
			s.rc.mu.Unlock()
		}
	}()
}

// waitRecall waits for background indexing (Close).
func (s *Server) waitRecall() { s.rc.wg.Wait() }

// indexSession is POST /v1/sessions/{sid}/index: generate the session's
// metadata now (the session index's force command, docs/recall.md).
func (s *Server) indexSession(q *request) (any, error) {
	m, err := s.indexer().Index(q.ctx, q.sid)
	if err != nil {
		return nil, recallErr(err)
	}
	return m, nil
}

// sessionMeta is GET /v1/sessions/{sid}/meta: the session's metadata (as of
// tx_id when given) and, with history=true, every version.
func (s *Server) sessionMeta(q *request) (any, error) {
	b, err := basisOf(q.r.URL.Query())
	if err != nil {
		return nil, err
	}
	m, err := recall.ReadMeta(q.ctx, s.st, q.sid, b)
	if err != nil {
		return nil, err
	}
	resp := MetaResponse{Meta: *m}
	if q.r.URL.Query().Get("history") == "true" {
		// The versions, oldest first, a page at a time (limit, cursor:
		// the same paging as GET /v1/history/{id}).
		es, next, err := s.historyPage(q, recall.MetaID(q.sid), store.HistoryOptions{Order: store.Asc, WithDocs: true})
		if err != nil {
			return nil, err
		}
		if resp.History, err = recall.MetaVersions(es); err != nil {
			return nil, err
		}
		resp.HistoryNext = next
	}
	return resp, nil
}

// MetaResponse is GET /v1/sessions/{sid}/meta; with history=true, History
// is one page of the versions and HistoryNext the cursor of the next.
type MetaResponse struct {
	recall.Meta
	History     []recall.Meta `json:"history,omitempty"`
	HistoryNext string        `json:"history_next,omitempty"`
}

func recallErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, recall.ErrDisabled), errors.Is(err, recall.ErrNothingToIndex):
		return errorf(http.StatusConflict, CodeConflict, "%v", err)
	}
	return err
}

// querySessionTool is the agent's query_session(session, question) tool.
func (s *Server) querySessionTool(q *request) (any, error) {
	var treq ToolRequest
	if err := q.decode(&treq); err != nil {
		return nil, err
	}
	ref, _ := treq.Args["session"].(string)
	question, _ := treq.Args["question"].(string)
	if ref == "" || question == "" {
		return nil, badRequest("query_session needs args.session and args.question (strings)")
	}
	sc, err := s.grantScope(q.r)
	if err != nil {
		return nil, err
	}
	l, err := s.lock(q.sid)
	if err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	a, err := recall.QuerySession(q.ctx, s.st, s.indexer().Settings(), sc, ref, question)
	if err != nil && infrastructure(err) {
		return nil, err
	}
	resp := ToolResponse{Tool: "query_session", ToolCallID: treq.ToolCallID, OK: err == nil, Tx: l.sess.Tx()}
	if err != nil {
		resp.Message = err.Error()
	} else {
		resp.Message = a.Text
		resp.ID = a.SessionID
	}
	if treq.ToolCallID != "" {
		msg := resp.Message
		rec, rerr := l.tools.RecordResult(q.ctx, tools.Call{ID: treq.ToolCallID, Tool: "query_session", Args: treq.Args, Failed: err != nil, Output: &msg}, tools.Result{})
		if rerr != nil {
			return nil, rerr
		}
		resp.Tx = rec.Tx
	}
	return resp, nil
}
