package importer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxstore/ctxstore/context/harness"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// ImportSession imports a transcript some reader made (a harness.Session:
// the seam for formats without byte fidelity, such as SWE-agent's .traj)
// as a chain of events-v1 commits, one per turn (a person's prompt starts
// one), each with the session's provenance. source names the file (the
// commits' source); the chain is deterministic, so importing the same
// session again writes nothing.
func (im *Importer) ImportSession(ctx context.Context, s *harness.Session, harnessName, source string) (*FileResult, error) {
	return im.importSession(ctx, s, harnessName, source, nil)
}

// importSession is ImportSession writing the ops extra returns (given the
// chain's tip and root) in the same transaction.
func (im *Importer) importSession(ctx context.Context, s *harness.Session, harnessName, source string, extra func(tip, root string, lines int) []store.Op) (*FileResult, error) {
	res := &FileResult{Path: source, Harness: harnessName, Format: commits.FormatEvents, Status: Imported, Commits: []string{}}
	session := s.ID
	if session == "" {
		session = strings.TrimSuffix(filepath.Base(source), filepath.Ext(source))
	}
	name := harnessName
	if s.Version != "" {
		name += " " + s.Version
	}
	sum := SessionSummary{Session: session, Harness: name}
	b := im.svc.NewBatch()
	parent := ""
	var turn []conversation.Message
	model := ""
	flush := func() error {
		if len(turn) == 0 {
			return nil
		}
		evs := events.FromMessages(turn)
		created := turn[0].Time
		trigger := commits.ImportTrigger
		summary := ""
		if turn[0].Role == conversation.RoleUser && !turn[0].Meta {
			trigger, summary = commits.TurnBoundary, clip(turn[0].Text, 200)
		}
		c, err := b.Add(ctx, commits.CheckpointRequest{Parent: parent, Events: evs, Created: created, Summary: summary, Tags: []string{"import"},
			Provenance: commits.Provenance{Principal: im.opts.Principal, Machine: im.opts.Machine, Session: session, Trigger: trigger,
				Harness: name, Cwd: s.Cwd, Model: model, Source: source}})
		if err != nil {
			return fmt.Errorf("import %s: %w", source, err)
		}
		res.Commits = append(res.Commits, c.ID)
		if parent == "" {
			res.Root = c.ID
		}
		parent = c.ID
		sum.Commits++
		turn = nil
		return nil
	}
	for _, m := range s.Messages {
		sum.Records++
		switch m.Role {
		case conversation.RoleUser:
			if m.Meta {
				sum.Injected++
			} else {
				sum.Prompts++
				if err := flush(); err != nil {
					return nil, err
				}
			}
		case conversation.RoleAssistant:
			sum.Responses++
			sum.ToolCalls += len(m.ToolCalls)
			if m.Model != "" {
				model = m.Model
			}
		case conversation.RoleToolResult:
			sum.ToolResults++
		}
		turn = append(turn, m)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	var ops []store.Op
	if extra != nil {
		ops = extra(parent, res.Root, len(s.Messages))
	}
	if err := b.Write(ctx, ops...); err != nil {
		return nil, fmt.Errorf("import %s: %w", source, err)
	}
	for _, p := range s.Report.Problems {
		res.Problems = append(res.Problems, Problem{Path: source, Line: p.Line, Msg: p.Msg})
	}
	res.Tip, res.Lines, res.NewLines = parent, len(s.Messages), len(s.Messages)
	sum.Tip = parent
	res.Sessions = []SessionSummary{sum}
	return res, nil
}

// importTraj imports a SWE-agent trajectory through ImportSession. The
// file is one JSON document: it is read whole (bounded), and imported
// again only when its bytes changed (the cursor holds their hash).
func (im *Importer) importTraj(ctx context.Context, path string, f *os.File, size int64) (*FileResult, error) {
	const maxTraj = 256 << 20
	if size > maxTraj {
		return nil, fmt.Errorf("import %s: %d bytes, over the %d-byte bound of a trajectory", path, size, maxTraj)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	id := CursorID(path)
	cur, err := im.readCursor(ctx, id)
	if err != nil {
		return nil, err
	}
	status := Imported
	if cur != nil {
		if cur.Prefix == hash && cur.Offset == int64(len(data)) {
			return &FileResult{Path: path, Harness: string(SWEAgent), Format: commits.FormatEvents, Status: Unchanged, Size: size,
				Offset: cur.Offset, Lines: cur.Lines, Commits: []string{}, Tip: cur.Tip, Root: cur.Root}, nil
		}
		status = Rewritten
	}
	s := &harness.Session{Path: path, Report: harness.Report{Types: map[string]int{}}}
	readTraj(s, data)
	// The cursor is written with the commits.
	res, err := im.importSession(ctx, s, string(SWEAgent), path, func(tip, root string, lines int) []store.Op {
		nc := &cursor{Path: path, Harness: SWEAgent, Offset: int64(len(data)), Lines: lines, Prefix: hash, Session: s.ID, Tip: tip, Root: root}
		return []store.Op{storeMatch(id, cur), storePut(nc.toDoc(id, im.opts.Now().UTC()))}
	})
	if err != nil {
		return nil, err
	}
	res.Status, res.Size, res.Offset = status, size, int64(len(data))
	return res, nil
}

// readTraj is a minimal reader of a trajectory's history (the message list
// SWE-agent sent): system messages are left out (the neutral conversation
// has no system role), demonstrations and later user messages are Meta
// user messages, the first other user message is the task (the person's
// prompt), assistant messages carry their text. The full reader is
// context/harness/sweagent's (branch stats); the importer takes it through
// ImportSession when it lands.
func readTraj(s *harness.Session, data []byte) {
	var doc struct {
		History []struct {
			Role    harness.Str     `json:"role"`
			Content json.RawMessage `json:"content"`
			IsDemo  harness.Flag    `json:"is_demo"`
			Thought harness.Str     `json:"thought"`
			Action  harness.Str     `json:"action"`
		} `json:"history"`
		Info struct {
			Version harness.Str `json:"swe_agent_version"`
		} `json:"info"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		s.Report.Problem(1, "the trajectory does not decode: %v", err)
		return
	}
	s.Version = string(doc.Info.Version)
	task := false
	for i, h := range doc.History {
		text := contentText(h.Content)
		switch h.Role {
		case "system":
			continue
		case "user":
			m := conversation.Message{Role: conversation.RoleUser, Text: text, Meta: bool(h.IsDemo) || task}
			if !m.Meta {
				task = true
			}
			s.Messages = append(s.Messages, m)
		case "assistant":
			if text == "" {
				text = harness.JoinNonEmpty([]string{string(h.Thought), string(h.Action)}, "\n\n")
			}
			s.Messages = append(s.Messages, conversation.Message{Role: conversation.RoleAssistant, Text: text})
		default:
			s.Report.Problem(1, "history[%d]: role %q; left out", i, h.Role)
		}
	}
}

func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type harness.Str `json:"type"`
		Text harness.Str `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			parts = append(parts, string(b.Text))
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
