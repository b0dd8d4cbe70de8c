// Package mcp is ctxstore's Model Context Protocol server (`ctxstore mcp`),
// a face over the store for any MCP host (Claude Code, editors, other
// agents): the sessions and their summaries, a session by id or prefix,
// objects and their history as of a time, a session's context commits
// (list, show, materialize), and activation in a session that `ctxstore
// serve` manages. It speaks MCP through the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), over stdio or streamable HTTP.
//
// Search and query_session plug in through the Searcher and SessionQuerier
// interfaces and are offered only when given (RecallSearch and
// RecallQuerier are context/recall's). Commits and session lookup are
// interfaces too (StoreCommits and StoreSessions are the implementations
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

// Commits reads a session's context commits.
type Commits interface {
	// List returns the session's commits, first to last.
	List(ctx context.Context, session string) ([]CommitSummary, error)
	// Show returns commit n of the session (n <= 0: the last).
	Show(ctx context.Context, session string, n int) (CommitDetail, error)
	// Materialize returns the context commit n sent (n <= 0: the last).
	Materialize(ctx context.Context, session string, n int) (Materialized, error)
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
	Commits   Commits        // default: StoreCommits
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
	if o.Commits == nil {
		o.Commits = StoreCommits{Store: o.Store}
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "ctxstore", Title: "ctxstore", Version: o.Version}, &sdk.ServerOptions{
		Instructions: "ctxstore keeps agent sessions, the objects they used (files, tool outputs, notes) with their " +
			"full history, and the exact context of every model call (context commits). Use list_sessions and " +
			"get_session to find a session, get_object and object_history to read an object as of a time, and " +
			"list_commits, show_commit and materialize_commit to see what a model call was sent.",
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
	sdk.AddTool(s, &sdk.Tool{Name: "list_commits", Description: "List a session's context commits: one per model " +
		"call, with its size, whether it rebased, and the harness events recorded with it (fork, tree, compaction)."}, t.listCommits)
	sdk.AddTool(s, &sdk.Tool{Name: "show_commit", Description: "Show one context commit of a session (call n; the " +
		"last when n is 0): its parent, items, size and what the harness recorded with it."}, t.showCommit)
	sdk.AddTool(s, &sdk.Tool{Name: "materialize_commit", Description: "Rebuild exactly what model call n of a session " +
		"was sent (the last when n is 0): system prompt, tools and messages, checked against the commit's hash."}, t.materialize)
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
// client session).
func Handler(s *sdk.Server) http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
}

// RunIO serves one client over r and w (stdin and stdout: the stdio
// transport) until it disconnects or ctx ends.
func RunIO(ctx context.Context, s *sdk.Server, r io.Reader, w io.Writer) error {
	return s.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(r), Writer: nopWriteCloser{w}})
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

// CommitList is the output of list_commits.
type CommitList struct {
	Session string          `json:"session"`
	Commits []CommitSummary `json:"commits"`
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

func (t tools) listCommits(ctx context.Context, _ *sdk.CallToolRequest, in sessionInput) (*sdk.CallToolResult, CommitList, error) {
	id, err := t.o.Sessions.Resolve(ctx, in.Session)
	if err != nil {
		return nil, CommitList{}, err
	}
	cs, err := t.o.Commits.List(ctx, id)
	if cs == nil {
		cs = []CommitSummary{}
	}
	return nil, CommitList{Session: id, Commits: cs}, err
}

func (t tools) showCommit(ctx context.Context, _ *sdk.CallToolRequest, in commitInput) (*sdk.CallToolResult, CommitDetail, error) {
	id, err := t.o.Sessions.Resolve(ctx, in.Session)
	if err != nil {
		return nil, CommitDetail{}, err
	}
	c, err := t.o.Commits.Show(ctx, id, in.N)
	return nil, c, err
}

func (t tools) materialize(ctx context.Context, _ *sdk.CallToolRequest, in commitInput) (*sdk.CallToolResult, Materialized, error) {
	id, err := t.o.Sessions.Resolve(ctx, in.Session)
	if err != nil {
		return nil, Materialized{}, err
	}
	m, err := t.o.Commits.Materialize(ctx, id, in.N)
	return nil, m, err
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
