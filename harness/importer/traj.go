package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/sweagent"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// importSession imports a transcript some reader made (a harness.Session:
// the seam for formats without byte fidelity, such as SWE-agent's .traj)
// as a chain of events-v1 commits, one per turn (a person's prompt starts
// one), each with the session's provenance. source names the file (the
// commits' source); the chain is deterministic, so importing the same
// session again writes nothing. The ops extra returns (given the chain's
// tip and root) are written in the same transaction.
func (im *Importer) importSession(ctx context.Context, s *harness.Session, harnessName, source string, tail []events.Event, extra func(tip, root string, lines int) []store.Op) (*FileResult, error) {
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
	first := true
	flush := func(last bool) error {
		if len(turn) == 0 && !(last && len(tail) > 0) {
			return nil
		}
		var evs []events.Event
		if first && s.SystemPrompt != "" {
			evs = append(evs, events.Event{Type: events.System, Subtype: events.SubtypeSystemPrompt, Text: s.SystemPrompt})
		}
		first = false
		evs = append(evs, events.FromMessages(turn)...)
		if last {
			evs = append(evs, tail...)
		}
		if len(turn) == 0 {
			turn = []conversation.Message{{}}
		}
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
				if err := flush(false); err != nil {
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
	if err := flush(true); err != nil {
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

// importTraj imports a SWE-agent trajectory through importSession. The
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
	info := sweagent.Read(s, data)
	harness.CheckToolResults(s)
	// The run's outcome and totals close the chain (a metric event, what
	// analytics read for outcomes).
	tail := []events.Event{{Type: events.Metric, Subtype: "result", Model: info.Model,
		Metric: &events.MetricData{InputTokens: info.TokensSent, OutputTokens: info.TokensReceived, CostUSD: info.Cost,
			Turns: info.APICalls, Status: info.ExitStatus},
		Metadata: trajMeta(info)}}
	// The cursor is written with the commits.
	res, err := im.importSession(ctx, s, string(SWEAgent), path, tail, func(tip, root string, lines int) []store.Op {
		nc := &cursor{Path: path, Harness: SWEAgent, Offset: int64(len(data)), Lines: lines, Prefix: hash, ImportState: harness.ImportState{Session: s.ID}, Tip: tip, Root: root}
		return []store.Op{storeMatch(id, cur), storePut(nc.toDoc(id, im.opts.Now().UTC()))}
	})
	if err != nil {
		return nil, err
	}
	res.Status, res.Size, res.Offset = status, size, int64(len(data))
	return res, nil
}

func trajMeta(info sweagent.Info) map[string]any {
	m := map[string]any{}
	if info.Submission != "" {
		m["submission"] = info.Submission
	}
	if info.Environment != "" {
		m["environment"] = info.Environment
	}
	m["steps"] = info.Steps
	return m
}
