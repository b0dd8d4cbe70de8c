// Package mcp is ctxstore's Model Context Protocol server (`ctxstore mcp`),
// a face over the store for any MCP host (Claude Code, editors, other
// agents): the sessions and their summaries, a session by id, prefix or
// name, objects and their history as of a time, full-text search and
// query_session (context/recall), a session's call records (what each
// model call was shown: list, show, materialize), context commits
// (session/commits: show, history, materialize), and activation in a
// session that `ctxstore serve` manages. It speaks MCP through the official
// Go SDK (github.com/modelcontextprotocol/go-sdk), over stdio or streamable
// HTTP.
//
// Search and query_session plug in through the Searcher and SessionQuerier
// interfaces and are offered only when given (RecallSearch and
// RecallQuerier are context/recall's). Commits and session lookup are
// interfaces too (StoreCalls and StoreSessions are the implementations
// over what the store holds today), so richer versions replace them
// without touching the tools.
package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// Searcher finds what the store holds by a query (the recall work).
type Searcher interface {
	Search(ctx context.Context, query string, limit int) ([]SearchHit, error)
}

// SearchHit is one search result.
type SearchHit struct {
	ID      string `json:"id"`
	Session string `json:"session,omitempty"`
	Kind    string `json:"kind,omitempty"`
	// Turn is the matching chat turn (chats), else -1.
	Turn    int     `json:"turn"`
	Title   string  `json:"title,omitempty"`
	Score   float64 `json:"score,omitempty"`
	Snippet string  `json:"snippet,omitempty"`
}

// SessionQuerier answers a question about one session (the recall work's
// query_session).
type SessionQuerier interface {
	QuerySession(ctx context.Context, session, question string) (string, error)
}

// Sessions lists and resolves sessions.
type Sessions interface {
	// List summarizes every session.
	List(ctx context.Context) ([]SessionSummary, error)
	// Resolve turns a reference (an id, a unique id prefix; a name when
	// sessions have names) into a session id, or fails saying why.
	Resolve(ctx context.Context, ref string) (string, error)
	// Get describes one session.
	Get(ctx context.Context, id string) (SessionDetail, error)
}

// Calls reads a session's call records (context/assemble's per-call
// "ctx-{session}-{n}": what each model call was shown).
type Calls interface {
	// List returns the session's calls, first to last.
	List(ctx context.Context, session string) ([]CallSummary, error)
	// Show returns call n of the session (n <= 0: the last).
	Show(ctx context.Context, session string, n int) (CallDetail, error)
	// Materialize returns what call n sent (n <= 0: the last).
	Materialize(ctx context.Context, session string, n int) (CallContext, error)
}

// Commits reads context commits (session/commits: the
// conversation as a chain of commits).
type Commits interface {
	// Show returns a commit.
	Show(ctx context.Context, id string) (*commits.Commit, error)
	// History returns a commit and its ancestors, newest first (limit <= 0: all).
	History(ctx context.Context, id string, limit int) ([]*commits.Commit, error)
	// Materialize returns the conversation at a commit.
	Materialize(ctx context.Context, r commits.MaterializeRequest) (*commits.Materialized, error)
	// SessionTip returns a session's latest commit.
	SessionTip(ctx context.Context, session string) (*commits.Commit, error)
}

// ServiceCommits is Commits over a session/commits Service; materializing
// never writes the snapshot cache (the MCP server only reads).
type ServiceCommits struct{ S *commits.Service }

// Show implements Commits.
func (c ServiceCommits) Show(ctx context.Context, id string) (*commits.Commit, error) {
	return c.S.Show(ctx, id, store.Basis{})
}

// History implements Commits.
func (c ServiceCommits) History(ctx context.Context, id string, limit int) ([]*commits.Commit, error) {
	return c.S.History(ctx, id, limit)
}

// Materialize implements Commits.
func (c ServiceCommits) Materialize(ctx context.Context, r commits.MaterializeRequest) (*commits.Materialized, error) {
	r.NoCache = true
	return c.S.Materialize(ctx, r)
}

// SessionTip implements Commits.
func (c ServiceCommits) SessionTip(ctx context.Context, session string) (*commits.Commit, error) {
	return c.S.SessionTip(ctx, session)
}

// Activator changes what a managed session's next context holds (through
// the service that has the session open).
type Activator interface {
	// Run runs tool ("activate", "deactivate", "pin", "unpin") on the
	// object id (or nickname) in session, and says what it did.
	Run(ctx context.Context, session, tool, id string) (ToolOutcome, error)
}

// Options configure the server. Store is required; the other members
// default to the implementations over the store, or leave their tools out.
type Options struct {
	Store     store.Store
	Sessions  Sessions       // default: StoreSessions
	Calls     Calls          // default: StoreCalls
	Commits   Commits        // default: ServiceCommits over the store
	Search    Searcher       // nil: no search tool
	Query     SessionQuerier // nil: no query_session tool
	Activator Activator      // nil: no activate/deactivate/pin/unpin tools
	// Version is reported to clients ("dev" when empty).
	Version string
}

// New returns the MCP server with ctxstore's tools.
func New(o Options) *sdk.Server {
	if o.Sessions == nil {
		o.Sessions = StoreSessions{Store: o.Store}
	}
	if o.Calls == nil {
		o.Calls = StoreCalls{Store: o.Store}
	}
	if o.Commits == nil {
		o.Commits = ServiceCommits{S: commits.New(o.Store, commits.Options{Registry: formats.Commits()})}
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "ctxstore", Title: "ctxstore", Version: o.Version}, &sdk.ServerOptions{
		Instructions: "ctxstore keeps agent sessions, the objects they used (files, tool outputs, notes) with their " +
			"full history, and the exact context of every model call (context commits). Use list_sessions and " +
			"get_session to find a session, get_object and object_history to read an object as of a time, " +
			"list_calls, show_call and materialize_call to see what a model call was sent, and commit_show, " +
			"commit_history and commit_materialize for the conversation as a chain of context commits.",
	})
	t := tools{o: o}
	sdk.AddTool(s, &sdk.Tool{Name: "list_sessions", Description: "List the sessions in the store, each with a summary: " +
		"harness, turns, context calls, active objects, the first and the last user prompt."}, t.listSessions)
	sdk.AddTool(s, &sdk.Tool{Name: "get_session", Description: "Describe one session, named by its id, a unique prefix " +
		"of it or its name in the session index (@@name): its summary, the user prompt of every turn, and the objects " +
		"active and pinned in its context."}, t.getSession)
	sdk.AddTool(s, &sdk.Tool{Name: "get_object", Description: "Read an object (a file, a tool output, a note, a chat, " +
		"a context commit) by id, as it was at a time: valid_time (when it was true), tx_time or tx_id (what the store " +
		"knew then); now when none is given."}, t.getObject)
	sdk.AddTool(s, &sdk.Tool{Name: "object_history", Description: "List the versions of an object, newest first " +
		"(order asc for oldest first), with their documents when with_docs is true."}, t.objectHistory)
	sdk.AddTool(s, &sdk.Tool{Name: "list_calls", Description: "List a session's model calls as ctxstore recorded " +
		"them: size, whether the context rebased, and the harness events recorded with each (fork, tree, compaction)."}, t.listCalls)
	sdk.AddTool(s, &sdk.Tool{Name: "show_call", Description: "Show the record of model call n of a session (the " +
		"last when n is 0): its parent, items, size and what the harness recorded with it."}, t.showCall)
	sdk.AddTool(s, &sdk.Tool{Name: "materialize_call", Description: "Rebuild exactly what model call n of a session " +
		"was sent (the last when n is 0): system prompt, tools and messages, checked against the record's hash."}, t.materializeCall)
	sdk.AddTool(s, &sdk.Tool{Name: "commit_show", Description: "Show a context commit (the conversation as a chain " +
		"of commits): by id, or a session's latest commit with session. Type, format, parent, provenance, counts, " +
		"summary and tags."}, t.commitShow)
	sdk.AddTool(s, &sdk.Tool{Name: "commit_history", Description: "A context commit and its ancestors, newest first."}, t.commitHistory)
	sdk.AddTool(s, &sdk.Tool{Name: "commit_materialize", Description: "The conversation at a context commit, in its " +
		"format or another (format), from the last compaction (stop: compaction, the default), the root (root) or " +
		"an ancestor's id."}, t.commitMaterialize)
	if o.Search != nil {
		sdk.AddTool(s, &sdk.Tool{Name: "search", Description: "Search the store: sessions, objects and their history."}, t.search)
	}
	if o.Query != nil {
		sdk.AddTool(s, &sdk.Tool{Name: "query_session", Description: "Ask a question about one session (by id or " +
			"prefix) and get an answer drawn from its history."}, t.querySession)
	}
	if o.Activator != nil {
		for _, name := range []string{"activate", "deactivate", "pin", "unpin"} {
			sdk.AddTool(s, &sdk.Tool{Name: name, Description: activationHelp[name]}, t.activation(name))
		}
	}
	return s
}

var activationHelp = map[string]string{
	"activate": "In a session that ctxstore serve manages (a Pi session, say), load an object's content into the " +
		"context of its next model call. This host's own context is not changed.",
	"deactivate": "In a session that ctxstore serve manages, drop an object's content from the context of its next " +
		"model call (its metadata line stays).",
	"pin":   "In a session that ctxstore serve manages, keep an object's content active: never collapsed automatically.",
	"unpin": "In a session that ctxstore serve manages, release a pinned object.",
}

// Handler serves the MCP server over streamable HTTP (one server for every
// client session). A batch of more than MaxBatch messages is answered with
// an error and not run.
func Handler(s *sdk.Server) http.Handler {
	return capBatches(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
}

// RunIO serves one client over r and w (stdin and stdout: the stdio
// transport) until it disconnects or ctx ends. A batch of more than
// MaxBatch messages is answered with an error and not run.
func RunIO(ctx context.Context, s *sdk.Server, r io.Reader, w io.Writer) error {
	lw := &lockedWriter{w: w}
	return s.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(capBatchesIO(r, lw)), Writer: nopWriteCloser{lw}})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// The tools' inputs and outputs (their JSON schemas are inferred from these).

type noInput struct{}

type sessionInput struct {
	Session string `json:"session" jsonschema:"the session id, a unique prefix of it, or its name (@@name)"`
}

type objectInput struct {
	ID        string `json:"id" jsonschema:"the object id"`
	ValidTime string `json:"valid_time,omitempty" jsonschema:"RFC 3339: the object as it was true at this time"`
	TxTime    string `json:"tx_time,omitempty" jsonschema:"RFC 3339: the object as the store knew it at this time"`
	TxID      *int64 `json:"tx_id,omitempty" jsonschema:"the object as the store knew it after this transaction"`
}

type historyInput struct {
	ID       string `json:"id" jsonschema:"the object id"`
	Order    string `json:"order,omitempty" jsonschema:"desc (newest first, the default) or asc"`
	WithDocs bool   `json:"with_docs,omitempty" jsonschema:"include each version's document"`
}

type commitInput struct {
	Session string `json:"session" jsonschema:"the session id, or a unique prefix of it"`
	N       int    `json:"n,omitempty" jsonschema:"the call number, from 1; 0 for the last"`
}

type commitRef struct {
	ID      string `json:"id,omitempty" jsonschema:"a context commit id (ctx- and 20 hex digits)"`
	Session string `json:"session,omitempty" jsonschema:"instead of id: the session whose latest commit to show"`
}

type commitHistoryInput struct {
	ID    string `json:"id" jsonschema:"a context commit id"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many commits (0: all)"`
}

type commitMaterializeInput struct {
	ID     string `json:"id" jsonschema:"a context commit id"`
	Format string `json:"format,omitempty" jsonschema:"the output format (default: the commit's own), e.g. events-v1, conversation-v1, narrative-v1"`
	Stop   string `json:"stop,omitempty" jsonschema:"compaction (default), root, or an ancestor's id"`
}

// CommitHistory is the output of commit_history.
type CommitHistory struct {
	Commits []*commits.Commit `json:"commits"`
}

// CommitConversation is the output of commit_materialize: the
// conversation in Format, with what it was made from.
type CommitConversation struct {
	Commit       string `json:"commit"`
	From         string `json:"from,omitempty"`
	Commits      int    `json:"commits"`
	Format       string `json:"format"`
	Stop         string `json:"stop"`
	Tier         string `json:"tier"`
	MessageCount int64  `json:"message_count"`
	TokenCount   int64  `json:"token_count"`
	Content      string `json:"content"`
}

type searchInput struct {
	Query string `json:"query" jsonschema:"what to look for"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many hits (default 20)"`
}

type queryInput struct {
	Session  string `json:"session" jsonschema:"the session id, or a unique prefix of it"`
	Question string `json:"question" jsonschema:"the question"`
}

type activationInput struct {
	Session string `json:"session" jsonschema:"the session id (open in ctxstore serve)"`
	ID      string `json:"id" jsonschema:"an object id or nickname"`
}

// SessionList is the output of list_sessions.
type SessionList struct {
	Sessions []SessionSummary `json:"sessions"`
}

// ObjectOutput is the output of get_object: the document and the point
// (transaction and valid time) that made it.
type ObjectOutput struct {
	ID          string         `json:"id"`
	Doc         map[string]any `json:"doc"`
	TxID        int64          `json:"tx_id"`
	TxTime      time.Time      `json:"tx_time"`
	ValidTime   time.Time      `json:"valid_time"`
	ContentHash string         `json:"content_hash"`
}

// HistoryOutput is the output of object_history.
type HistoryOutput struct {
	ID       string         `json:"id"`
	Versions []VersionEntry `json:"versions"`
}

// VersionEntry is one version of an object.
type VersionEntry struct {
	TxID        int64          `json:"tx_id"`
	TxTime      time.Time      `json:"tx_time"`
	ValidTime   time.Time      `json:"valid_time"`
	ContentHash string         `json:"content_hash,omitempty"`
	Deleted     bool           `json:"deleted,omitempty"`
	Doc         map[string]any `json:"doc,omitempty"`
}

// CallList is the output of list_calls.
type CallList struct {
	Session string        `json:"session"`
	Calls   []CallSummary `json:"calls"`
}

// SearchOutput is the output of search.
type SearchOutput struct {
	Hits []SearchHit `json:"hits"`
}

// QueryOutput is the output of query_session.
type QueryOutput struct {
	Session string `json:"session"`
	Answer  string `json:"answer"`
}

// ToolOutcome is what a context tool did in a managed session.
type ToolOutcome struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
	ID      string `json:"id,omitempty"`
}

type tools struct{ o Options }

func (t tools) listSessions(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, SessionList, error) {
	ss, err := t.o.Sessions.List(ctx)
	if ss == nil {
		ss = []SessionSummary{}
	}
	return nil, SessionList{Sessions: ss}, err
}

func (t tools) getSession(ctx context.Context, _ *sdk.CallToolRequest, in sessionInput) (*sdk.CallToolResult, SessionDetail, error) {
	id, err := t.o.Sessions.Resolve(ctx, in.Session)
	if err != nil {
		return nil, SessionDetail{}, err
	}
	d, err := t.o.Sessions.Get(ctx, id)
	return nil, d, err
}

func (t tools) getObject(ctx context.Context, _ *sdk.CallToolRequest, in objectInput) (*sdk.CallToolResult, ObjectOutput, error) {
	if in.ID == "" {
		return nil, ObjectOutput{}, fmt.Errorf("id: an object id is needed")
	}
	b, err := basis(in.ValidTime, in.TxTime, in.TxID)
	if err != nil {
		return nil, ObjectOutput{}, err
	}
	et, err := t.o.Store.EntityTx(ctx, in.ID, b)
	if err != nil {
		return nil, ObjectOutput{}, err
	}
	if et.Deleted {
		return nil, ObjectOutput{}, fmt.Errorf("object %s: deleted at this time", in.ID)
	}
	doc, err := t.o.Store.Entity(ctx, in.ID, store.AtTx(et.TxID, b.ValidTime))
	if err != nil {
		return nil, ObjectOutput{}, err
	}
	return nil, ObjectOutput{ID: in.ID, Doc: doc, TxID: et.TxID, TxTime: et.TxTime, ValidTime: et.ValidTime, ContentHash: et.ContentHash}, nil
}

func (t tools) objectHistory(ctx context.Context, _ *sdk.CallToolRequest, in historyInput) (*sdk.CallToolResult, HistoryOutput, error) {
	if in.ID == "" {
		return nil, HistoryOutput{}, fmt.Errorf("id: an object id is needed")
	}
	o := store.HistoryOptions{Order: store.Desc, WithDocs: in.WithDocs}
	switch in.Order {
	case "", "desc":
	case "asc":
		o.Order = store.Asc
	default:
		return nil, HistoryOutput{}, fmt.Errorf("order: want asc or desc, got %q", in.Order)
	}
	es, err := t.o.Store.History(ctx, in.ID, o)
	if err != nil {
		return nil, HistoryOutput{}, err
	}
	out := HistoryOutput{ID: in.ID, Versions: make([]VersionEntry, 0, len(es))}
	for _, e := range es {
		out.Versions = append(out.Versions, VersionEntry{TxID: e.TxID, TxTime: e.TxTime, ValidTime: e.ValidTime,
			ContentHash: e.ContentHash, Deleted: e.Deleted, Doc: e.Doc})
	}
	return nil, out, nil
}

func (t tools) listCalls(ctx context.Context, _ *sdk.CallToolRequest, in sessionInput) (*sdk.CallToolResult, CallList, error) {
	id, err := t.o.Sessions.Resolve(ctx, in.Session)
	if err != nil {
		return nil, CallList{}, err
	}
	cs, err := t.o.Calls.List(ctx, id)
	if cs == nil {
		cs = []CallSummary{}
	}
	return nil, CallList{Session: id, Calls: cs}, err
}

func (t tools) showCall(ctx context.Context, _ *sdk.CallToolRequest, in commitInput) (*sdk.CallToolResult, CallDetail, error) {
	id, err := t.o.Sessions.Resolve(ctx, in.Session)
	if err != nil {
		return nil, CallDetail{}, err
	}
	c, err := t.o.Calls.Show(ctx, id, in.N)
	return nil, c, err
}

func (t tools) materializeCall(ctx context.Context, _ *sdk.CallToolRequest, in commitInput) (*sdk.CallToolResult, CallContext, error) {
	id, err := t.o.Sessions.Resolve(ctx, in.Session)
	if err != nil {
		return nil, CallContext{}, err
	}
	m, err := t.o.Calls.Materialize(ctx, id, in.N)
	return nil, m, err
}

func (t tools) commitShow(ctx context.Context, _ *sdk.CallToolRequest, in commitRef) (*sdk.CallToolResult, *commits.Commit, error) {
	switch {
	case in.ID != "" && in.Session != "":
		return nil, nil, fmt.Errorf("give id or session, not both")
	case in.ID != "":
		c, err := t.o.Commits.Show(ctx, in.ID)
		return nil, c, err
	case in.Session != "":
		id, err := t.o.Sessions.Resolve(ctx, in.Session)
		if err != nil {
			return nil, nil, err
		}
		c, err := t.o.Commits.SessionTip(ctx, id)
		return nil, c, err
	}
	return nil, nil, fmt.Errorf("id: a commit id (or session) is needed")
}

func (t tools) commitHistory(ctx context.Context, _ *sdk.CallToolRequest, in commitHistoryInput) (*sdk.CallToolResult, CommitHistory, error) {
	if in.ID == "" {
		return nil, CommitHistory{}, fmt.Errorf("id: a commit id is needed")
	}
	cs, err := t.o.Commits.History(ctx, in.ID, in.Limit)
	if cs == nil {
		cs = []*commits.Commit{}
	}
	return nil, CommitHistory{Commits: cs}, err
}

func (t tools) commitMaterialize(ctx context.Context, _ *sdk.CallToolRequest, in commitMaterializeInput) (*sdk.CallToolResult, CommitConversation, error) {
	if in.ID == "" {
		return nil, CommitConversation{}, fmt.Errorf("id: a commit id is needed")
	}
	m, err := t.o.Commits.Materialize(ctx, commits.MaterializeRequest{ID: in.ID, Format: in.Format, Stop: in.Stop})
	if err != nil {
		return nil, CommitConversation{}, err
	}
	return nil, CommitConversation{Commit: m.Commit, From: m.From, Commits: m.Commits, Format: m.Format, Stop: m.Stop,
		Tier: m.Tier, MessageCount: m.MessageCount, TokenCount: m.TokenCount, Content: string(m.Content)}, nil
}

func (t tools) search(ctx context.Context, _ *sdk.CallToolRequest, in searchInput) (*sdk.CallToolResult, SearchOutput, error) {
	if in.Limit <= 0 {
		in.Limit = 20
	}
	hits, err := t.o.Search.Search(ctx, in.Query, in.Limit)
	if hits == nil {
		hits = []SearchHit{}
	}
	return nil, SearchOutput{Hits: hits}, err
}

func (t tools) querySession(ctx context.Context, _ *sdk.CallToolRequest, in queryInput) (*sdk.CallToolResult, QueryOutput, error) {
	id, err := t.o.Sessions.Resolve(ctx, in.Session)
	if err != nil {
		return nil, QueryOutput{}, err
	}
	a, err := t.o.Query.QuerySession(ctx, id, in.Question)
	return nil, QueryOutput{Session: id, Answer: a}, err
}

func (t tools) activation(name string) sdk.ToolHandlerFor[activationInput, ToolOutcome] {
	return func(ctx context.Context, _ *sdk.CallToolRequest, in activationInput) (*sdk.CallToolResult, ToolOutcome, error) {
		if in.Session == "" || in.ID == "" {
			return nil, ToolOutcome{}, fmt.Errorf("%s: session and id are needed", name)
		}
		out, err := t.o.Activator.Run(ctx, in.Session, name, in.ID)
		if err == nil && !out.OK {
			err = fmt.Errorf("%s %s: %s", name, in.ID, out.Message)
		}
		return nil, out, err
	}
}

// basis reads the time arguments of get_object.
func basis(validTime, txTime string, txID *int64) (store.Basis, error) {
	var b store.Basis
	if validTime != "" {
		t, err := store.ParseTime(validTime)
		if err != nil {
			return b, fmt.Errorf("valid_time: %v", err)
		}
		b.ValidTime = t
	}
	if txID != nil && txTime != "" {
		return b, fmt.Errorf("give tx_id or tx_time, not both")
	}
	if txID != nil {
		if *txID < 0 {
			return b, fmt.Errorf("tx_id: want a transaction id, got %d", *txID)
		}
		b.TxID = txID
	}
	if txTime != "" {
		t, err := store.ParseTime(txTime)
		if err != nil {
			return b, fmt.Errorf("tx_time: %v", err)
		}
		b.TxTime = &t
	}
	return b, nil
}
