package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// ManagementTools are the context-management tools: their calls do not
// count toward the auto-activation window and are never auto-activated.
var ManagementTools = map[string]bool{"activate": true, "deactivate": true, "pin": true, "unpin": true}

// Call is one tool call as the harness reports it.
type Call struct {
	// ID is the provider's tool-call id; it becomes the toolcall object id.
	ID string
	// Tool is the tool name.
	Tool string
	// Args are the structured arguments as the provider emitted them.
	Args map[string]any
	// ArgsDisplay is a short rendering for metadata; when empty,
	// objects.DefaultArgsDisplay(Args) is used.
	ArgsDisplay string
	// Failed marks a failed call (status "fail").
	Failed bool
	// Output is the tool's output, nil when it produced none.
	Output *string
	// FileRefs are files the call touched, besides those the wrappers find.
	FileRefs []string
	// Management marks the call as not counted by the auto-activation
	// policy even if Tool is not in ManagementTools.
	Management bool
	// Target is the object whose activation the call stands for
	// (RecordResult sets it for a read: its file): the call is counted,
	// takes a file slot of the policy, is not activated itself, and when it
	// leaves the window the target is deactivated unless a later load of it
	// is still in the window.
	Target string
	// TargetTokens is, with Target, what keeping the target active costs
	// in tokens (RecordResult: the file's content), for the policy's
	// budget (collapse.Config.Budget).
	TargetTokens int
}

// Record stores a tool call as a toolcall object (id = the provider's id,
// chat_ref = the session's chat) and, in the same transaction, adds it to
// the session: in the pool, active unless it is a context-management call,
// and then applies the auto-activation policy, collapsing outputs that fell
// out of the window. Recording an id twice writes a new version of the
// toolcall but does not count it again.
func (t *Tools) Record(ctx context.Context, c Call) (Result, error) {
	return t.record(ctx, c, nil, false)
}

// record records c with fileIDs in its file_refs; the files enter the
// metadata pool with pool set, else only the session index.
func (t *Tools) record(ctx context.Context, c Call, fileIDs []string, pool bool) (Result, error) {
	if err := t.checkOwn(ctx, c.ID); err != nil {
		return Result{}, fmt.Errorf("toolcall %s: %w", c.ID, err)
	}
	refs := append(append([]string(nil), c.FileRefs...), fileIDs...)
	refs = dedupe(refs)
	status := objects.StatusOK
	if c.Failed {
		status = objects.StatusFail
	}
	display := c.ArgsDisplay
	if display == "" {
		display = objects.DefaultArgsDisplay(c.Args)
	}
	f := objects.ToolcallFields{
		Tool: c.Tool, Args: c.Args, ArgsDisplay: display, Status: status,
		ChatRef: t.s.Info().ChatID, FileRefs: refs,
	}
	if f.Args == nil {
		f.Args = map[string]any{}
	}
	o, err := objects.NewToolcall(c.ID, f, c.Output)
	if err != nil {
		return Result{}, fmt.Errorf("toolcall %s: %w", c.ID, err)
	}
	doc, err := o.Doc()
	if err != nil {
		return Result{}, fmt.Errorf("toolcall %s: %w", c.ID, err)
	}
	mgmt := c.Management || ManagementTools[c.Tool]
	tx, _, err := t.s.Update(ctx, []store.Op{store.Put(doc)}, func(s *session.State) error {
		for _, id := range fileIDs {
			if pool {
				s.AddToPool(id)
			} else {
				s.AddToIndex(id)
			}
		}
		if pool {
			for _, id := range fileIDs {
				s.TouchTarget(id) // a file being edited stays in the window
			}
		}
		switch {
		case recorded(s, c.ID):
		case c.Target != "":
			s.AddTargetToolcall(c.ID, c.Target)
			s.SetToolcallTokens(c.ID, c.TargetTokens)
		default:
			s.AddToolcall(c.ID, mgmt)
			if !mgmt {
				s.Activate(c.ID)
				s.SetToolcallTokens(c.ID, callTokens(c))
			}
		}
		t.applyPolicy(s)
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("toolcall %s: %w", c.ID, err)
	}
	return Result{ID: c.ID, Object: o, Ref: objects.StaticRef(o, tx), Message: objects.RenderMetadata(o), Tx: tx, Files: fileIDs}, nil
}

// RecordResult records the call of one of our own tools (read, activate,
// deactivate, pin, unpin) that r answered: its output is r.Message and its
// file_refs r.Files. These calls do not count toward the auto-activation
// window and are not activated: what they load lives in the objects they
// act on (a read activates the file object), not in their
// output. A failed tool is recorded with Failed set and the error's text as
// Output.
func (t *Tools) RecordResult(ctx context.Context, c Call, r Result) (Result, error) {
	if c.Output == nil {
		msg := r.Message
		c.Output = &msg
	}
	if r.Object != nil && r.Object.Kind() != objects.KindToolcall && !ManagementTools[strings.ToLower(c.Tool)] && !c.Failed {
		c.Target = r.ID // a read: the file stays active while the read is in the window
		if r.Object.Content != nil {
			c.TargetTokens = estimateTokens(len(*r.Object.Content))
		}
	} else {
		c.Management = true
	}
	c.FileRefs = append(c.FileRefs, r.Files...)
	return t.record(ctx, c, nil, false)
}

// BeginTurn starts a new turn (a new user message) and applies the
// auto-activation policy, so outputs older than the window collapse.
func (t *Tools) BeginTurn(ctx context.Context) (int, error) {
	var turn int
	_, _, err := t.s.Update(ctx, nil, func(s *session.State) error {
		s.Turn++
		turn = s.Turn
		t.applyPolicy(s)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("beginning a turn: %w", err)
	}
	return turn, nil
}

// applyPolicy deactivates what the policy collapses: the outputs of
// toolcalls out of the window, and the files whose every load (read) is out
// of it, unless pinned.
//
// Only the calls that can change something are given to the policy: those
// in its window of turns (they count against its slots and budget), and
// the older ones whose output or target is active (the policy collapses
// them). An older call with nothing active is collapsed already: leaving
// it out changes no decision, and the work does not grow with the
// session's calls.
func (t *Tools) applyPolicy(s *session.State) { applyPolicy(t.policy, s, false) }

// applyPolicy is Tools.applyPolicy under policy cfg; every gives the
// policy every call of the session (what the skipping is checked against).
func applyPolicy(cfg collapse.Config, s *session.State, every bool) {
	// The calls outside the window that can still change are those active
	// or standing for an active target: found by position from the small
	// active set, so that the pass over the record compares integers only
	// (no string hashing per toolcall of the session per call).
	live := map[int]bool{}
	for _, id := range s.Active {
		if i := s.ToolcallAt(id); i >= 0 {
			live[i] = true
		}
		for _, i := range s.ToolcallsFor(id) {
			live[i] = true
		}
	}
	var calls []collapse.Call
	target := map[string]string{}
	for i, c := range s.Toolcalls {
		inWindow := c.Turn > s.Turn-cfg.TurnsBack && c.Turn <= s.Turn
		if !every && !inWindow && (len(live) == 0 || !live[i]) {
			continue
		}
		cc := collapse.Call{ID: c.ID, Turn: c.Turn, Seq: c.Seq, Management: c.Management,
			Pinned: s.IsPinned(c.ID), File: c.Target != "", Tokens: c.Tokens}
		if c.Target != "" {
			target[c.ID] = c.Target
			cc.Pinned = s.IsPinned(c.Target)
		}
		calls = append(calls, cc)
	}
	d := collapse.Decide(calls, s.Turn, cfg)
	kept := map[string]bool{}
	for _, id := range d.Keep {
		if f, ok := target[id]; ok {
			kept[f] = true
		}
	}
	for _, id := range d.Collapse {
		if f, ok := target[id]; ok {
			id = f
			if kept[f] || s.IsPinned(f) || session.Locked(f) {
				continue
			}
		}
		if s.IsActive(id) {
			_ = s.Deactivate(id)
		}
	}
}

func recorded(s *session.State, id string) bool { return s.Recorded(id) }

func dedupe(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	seen := map[string]bool{}
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// callTokens estimates what keeping call c active costs in the context
// (CallTokens).
func callTokens(c Call) int { return CallTokens(c.Args, c.Output) }

// CallTokens estimates what keeping a toolcall with arguments args and
// output out (nil: none) active costs in the context: its output and its
// arguments (large arguments collapse with the call), in tokens of four
// bytes.
func CallTokens(args map[string]any, out *string) int {
	n := 0
	if out != nil {
		n += len(*out)
	}
	if len(args) > 0 {
		if b, err := json.Marshal(args); err == nil {
			n += len(b)
		}
	}
	return estimateTokens(n)
}

// estimateTokens is a token count for n bytes: one token per four bytes,
// rounded up (assemble.BytesTokenizer's rule; the policy needs an order of
// magnitude, not the model's tokenizer).
func estimateTokens(n int) int { return (n + 3) / 4 }
