package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/harness/pi"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// ToolRequest is the body of POST /v1/sessions/{sid}/tools/{tool}, for
// ctxstore's own tools: read (args.path), activate, deactivate, pin and
// unpin (args.id: an object id or a nickname).
type ToolRequest struct {
	// ToolCallID is the provider's tool-call id; when set, the call is
	// recorded as a toolcall object with that id (tools.RecordResult), so
	// the harness's tool result is recognized when its log is ingested.
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Args       map[string]any `json:"args"`
}

// ToolResponse is the outcome of one of ctxstore's tools.
type ToolResponse struct {
	Tool       string `json:"tool"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	// OK is false when the tool failed (a missing file, an unknown id, a
	// locked object); Message then says why, and the harness reports the
	// tool call as failed.
	OK bool `json:"ok"`
	// Message is what the agent is told.
	Message string `json:"message"`
	// ID is the object acted on; Metadata its metadata line.
	ID       string `json:"id,omitempty"`
	Metadata string `json:"metadata,omitempty"`
	// Content is the text of a file read, for the harness to show the user
	// (the model sees it in the assembled context); absent for binary or
	// deleted files.
	Content *string `json:"content,omitempty"`
	// Files are the file objects the tool indexed.
	Files []string `json:"files,omitempty"`
	// Tx is the transaction of the session change.
	Tx int64 `json:"tx"`
}

// ToolsResponse is GET /v1/tools: ctxstore's own tools as the model is
// offered them (defined once, in context/tools), for the harness to
// register. The integrations take every tool name from here.
type ToolsResponse struct {
	Tools []ToolDefinition `json:"tools"`
}

// ToolDefinition is one of ctxstore's tools and what it is to a harness.
type ToolDefinition struct {
	tools.Definition
	// Role is "read" for the tool that stands in for the harness's own
	// read, "manage" for the tools that manage the context (a bare head
	// never offers them) and "recall" for the others (search, memory
	// across sessions).
	Role string `json:"role"`
}

func (s *Server) toolDefinitions(*request) (any, error) {
	return ToolsResponse{Tools: ToolDefinitions()}, nil
}

// ToolDefinitions are the tools GET /v1/tools answers, with their roles.
func ToolDefinitions() []ToolDefinition {
	var out []ToolDefinition
	for _, d := range tools.Definitions() {
		role := "recall"
		switch {
		case d.Name == "read":
			role = "read"
		case tools.ManagementTools[d.Name]:
			role = "manage"
		}
		out = append(out, ToolDefinition{Definition: d, Role: role})
	}
	return out
}

func (s *Server) tool(q *request) (any, error) {
	name := q.r.PathValue("tool")
	switch name {
	case "search":
		return s.searchTool(q) // search.go
	case "query_session":
		return s.querySessionTool(q) // recall.go
	}
	if !tools.Defined(name) {
		return nil, errorf(http.StatusNotFound, CodeNotFound, "no tool %q (want read, activate, deactivate, pin, unpin, search or query_session)", name)
	}
	var req ToolRequest
	if err := q.decode(&req); err != nil {
		return nil, err
	}
	key := "id"
	if name == "read" {
		key = "path"
	}
	arg, _ := req.Args[key].(string)
	if arg == "" {
		return nil, badRequest("%s needs args.%s (a string)", name, key)
	}
	l, err := s.lock(q.sid)
	if err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	t := l.tools
	// The call's id is checked before the tool writes anything (a read
	// indexes its file and activates it).
	if err := t.CheckCallID(q.ctx, req.ToolCallID); err != nil {
		return nil, err
	}
	var r tools.Result
	offset, limit := tools.IntArg(req.Args, "offset"), tools.IntArg(req.Args, "limit")
	part := name == "read" && (offset > 0 || limit > 0) && req.ToolCallID != ""
	switch {
	case part:
		// A part of the file: the call's output, recorded by ReadPart.
		r, err = t.ReadPart(q.ctx, tools.Call{ID: req.ToolCallID, Tool: name, Args: req.Args}, resolvePath(l.cwd, arg), offset, limit)
	case name == "read":
		r, err = t.Read(q.ctx, resolvePath(l.cwd, arg))
	case name == "activate":
		r, err = t.Activate(q.ctx, arg)
	case name == "deactivate":
		r, err = t.Deactivate(q.ctx, arg)
	case name == "pin":
		r, err = t.Pin(q.ctx, arg)
	case name == "unpin":
		r, err = t.Unpin(q.ctx, arg)
	}
	if err != nil && infrastructure(err) {
		return nil, err
	}
	resp := ToolResponse{Tool: name, ToolCallID: req.ToolCallID, OK: err == nil, Message: r.Message, ID: r.ID, Files: r.Files, Tx: r.Tx}
	if err != nil {
		resp.Message = err.Error()
	}
	if r.Object != nil {
		resp.Metadata = objects.RenderMetadata(r.Object)
		if name == "read" {
			resp.Content = r.Object.Content
		}
	}
	if part && err == nil {
		resp.Content = &r.Message
		return resp, nil // ReadPart recorded the call
	}
	if req.ToolCallID != "" {
		c := tools.Call{ID: req.ToolCallID, Tool: name, Args: req.Args, Failed: err != nil}
		if err != nil {
			msg := err.Error()
			c.Output = &msg
		}
		rec, rerr := t.RecordResult(q.ctx, c, r)
		if rerr != nil {
			return nil, rerr
		}
		resp.Tx = rec.Tx
	}
	return resp, nil
}

// infrastructure reports whether err is the store's or the session's
// failure rather than the tool's: the store does not answer, or another
// writer changed the session. Those are HTTP errors; the rest are failed
// tool calls the agent is told about.
func infrastructure(err error) bool {
	k := store.KindOf(err)
	return k == store.ErrUnavailable || k == store.ErrConflict
}

// resolvePath makes a tool's path absolute against the harness's cwd, as
// Pi's tools do: a leading "@" is dropped and "~" is the home directory.
func resolvePath(cwd, p string) string {
	p = strings.TrimPrefix(p, "@")
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// ObserveRequest is the body of POST /v1/sessions/{sid}/observe: a tool
// call the harness ran, with its result.
type ObserveRequest struct {
	ToolCallID string         `json:"tool_call_id"`
	Tool       string         `json:"tool"`
	Args       map[string]any `json:"args"`
	// Output is the result's text; absent when the tool produced none.
	Output *string `json:"output,omitempty"`
	// Content, instead of Output, is the result as Pi's content blocks
	// (text and image), as Pi's tool_result event hands them: the Pi
	// converter (harness/pi) makes the text, so an image gets the
	// same note here as in the context call and the transcript reader.
	Content json.RawMessage `json:"content,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
}

// ObserveResponse says what ctxstore recorded.
type ObserveResponse struct {
	ToolCallID string   `json:"tool_call_id"`
	Metadata   string   `json:"metadata"`
	Files      []string `json:"files,omitempty"`
	Tx         int64    `json:"tx"`
}

func (s *Server) observe(q *request) (any, error) {
	var req ObserveRequest
	if err := q.decode(&req); err != nil {
		return nil, err
	}
	if req.ToolCallID == "" || req.Tool == "" {
		return nil, badRequest("tool_call_id and tool are required")
	}
	if len(req.Content) > 0 && string(req.Content) != "null" {
		if req.Output != nil {
			return nil, badRequest("give output or content, not both")
		}
		text := pi.ContentText(req.Content)
		req.Output = &text
	}
	l, err := s.lock(q.sid)
	if err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	r, err := observe(q.ctx, l.tools, l.cwd, req)
	if err != nil {
		return nil, err
	}
	return ObserveResponse{ToolCallID: req.ToolCallID, Metadata: r.Message, Files: r.Files, Tx: r.Tx}, nil
}

// observe reports a harness's tool call to the wrapped tool of its kind:
// write and edit sync the file, ls, find and grep index the files their
// output names, bash is attributed best-effort; any other tool is recorded
// as it is.
func observe(ctx context.Context, t *tools.Tools, cwd string, req ObserveRequest) (tools.Result, error) {
	c := tools.Call{ID: req.ToolCallID, Tool: req.Tool, Args: req.Args, Failed: req.IsError, Output: req.Output}
	str := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := req.Args[k].(string); ok && v != "" {
				return v
			}
		}
		return ""
	}
	dir := cwd
	if p := str("path"); p != "" {
		dir = resolvePath(cwd, p)
	}
	switch strings.ToLower(req.Tool) {
	case "write":
		if p := str("path", "file_path"); p != "" {
			return t.Write(ctx, c, resolvePath(cwd, p))
		}
	case "edit":
		if p := str("path", "file_path"); p != "" {
			return t.Edit(ctx, c, resolvePath(cwd, p))
		}
	case "bash":
		return t.Bash(ctx, c, cwd, str("command"))
	case "ls":
		return t.Ls(ctx, c, dir)
	case "find", "glob":
		return t.Find(ctx, c, dir)
	case "grep":
		if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
			dir = filepath.Dir(dir)
		}
		return t.Grep(ctx, c, dir)
	}
	return t.Record(ctx, c)
}
