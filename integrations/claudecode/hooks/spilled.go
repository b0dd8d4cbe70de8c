package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// The whole of a previewed output in the store: Claude Code's transcript
// records only the preview (what the model saw), and the spill file holds
// the whole only as long as the spill directory lasts. So the hook's
// checkpoint also keeps each output the preview step spilled as the
// toolcall object of its call (id: the tool-call id), whose content is the
// whole output and whose "preview" member links it to the preview and its
// spill file; and a whole Read of the spill file by the model, which
// Claude Code runs with its own Read, is recorded on that object as an
// activation of the output (its "activations" member), the record the
// inspector's paging counts.

// spilledCall is the <call id>.json beside a spill file: the PostToolUse
// input's tool name, arguments and response (the tool's original output).
type spilledCall struct {
	Tool     string          `json:"tool_name"`
	Input    json.RawMessage `json:"tool_input,omitempty"`
	Response json.RawMessage `json:"tool_response"`
}

// storedMark is the name beside a spill file saying its output is kept in
// the store, so that a catch-up looks at each output once.
func storedMark(txt string) string { return strings.TrimSuffix(txt, ".txt") + ".stored" }

// callFile is the spilledCall file beside the spill file txt.
func callFile(txt string) string { return strings.TrimSuffix(txt, ".txt") + ".json" }

// Spilled is one output the preview step kept whole.
type Spilled struct {
	Session, CallID, Tool string
	Args                  map[string]any
	// Whole is the output whole (the spill file's text), File the spill
	// file, Response the tool's original response.
	Whole    string
	File     string
	Response json.RawMessage
}

// ReadSpilled reads the output of call id that the preview step kept in
// the session's spill directory dir (Spill.Dir): its spill file and the
// call beside it, each bounded in size.
func ReadSpilled(dir, session, id string) (Spilled, error) {
	if !isID(session) || !isToolUseID(id) {
		return Spilled{}, errors.New("not a session and tool-call id")
	}
	txt := filepath.Join(dir, tools.SpillName(id))
	whole, err := readBounded(txt, maxSpill)
	if err != nil {
		return Spilled{}, err
	}
	if !utf8.Valid(whole) {
		return Spilled{}, fmt.Errorf("%s: not UTF-8", txt)
	}
	raw, err := readBounded(callFile(txt), maxInput)
	if err != nil {
		return Spilled{}, err
	}
	var c spilledCall
	if err := json.Unmarshal(raw, &c); err != nil || c.Tool == "" {
		return Spilled{}, fmt.Errorf("%s: not a tool call (%v)", callFile(txt), err)
	}
	s := Spilled{Session: session, CallID: id, Tool: c.Tool, Whole: string(whole), File: txt, Response: c.Response}
	if len(c.Input) > 0 && string(c.Input) != "null" {
		d := json.NewDecoder(strings.NewReader(string(c.Input)))
		d.UseNumber()
		if err := d.Decode(&s.Args); err != nil {
			return Spilled{}, fmt.Errorf("%s: tool_input: %w", callFile(txt), err)
		}
	}
	return s, nil
}

// readBounded reads the file at path, refusing one past limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes", path, limit)
	}
	return b, nil
}

// Object is the toolcall object that keeps s: its content the output
// whole, its "preview" member {session, file, whole_chars} (the preview
// itself is what Claude Code's transcript records for the call).
func (s Spilled) Object(activations []any) (*objects.Object, error) {
	f := objects.ToolcallFields{Tool: s.Tool, Args: s.Args, Status: objects.StatusOK, ChatRef: objects.ChatObjectID(s.Session)}
	if f.Args == nil {
		f.Args = map[string]any{}
	}
	f.ArgsDisplay = objects.DefaultArgsDisplay(f.Args)
	env, err := objects.NewEnvelope(objects.KindToolcall, s.CallID)
	if err != nil {
		return nil, err
	}
	whole := s.Whole
	extra := map[string]any{"preview": map[string]any{"session": s.Session, "file": s.File, "whole_chars": utf8.RuneCountInString(whole)}}
	if len(activations) > 0 {
		extra["activations"] = activations
	}
	return objects.New(env, objects.Payload{Content: &whole, Toolcall: f, Extra: extra})
}

// Dir is the spill directory of session (empty when previews are off or
// the id cannot name one).
func (s Spill) Dir(session string) string {
	if s.Root == "" || !isID(session) {
		return ""
	}
	root, err := filepath.Abs(s.Root)
	if err != nil {
		return ""
	}
	return filepath.Join(root, session)
}

// Unstored lists the call ids of the outputs the preview step kept in dir
// (a spill file with its call beside it) that are not marked as kept in
// the store, at most limit of them.
func Unstored(dir string, limit int) []string {
	if dir == "" {
		return nil
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil
	}
	var ids []string
	for _, n := range names {
		txt := strings.TrimSuffix(n, ".json") + ".txt"
		id, ok := tools.SpillCallID(filepath.Base(txt))
		if !ok || !isToolUseID(id) {
			continue
		}
		if _, err := os.Stat(storedMark(txt)); err == nil {
			continue
		}
		if _, err := os.Stat(txt); err != nil {
			continue
		}
		ids = append(ids, id)
		if len(ids) == limit {
			break
		}
	}
	return ids
}

// maxCatchUp bounds the outputs one checkpoint brings into the store from
// the spill directory: the next catch-up takes the rest.
const maxCatchUp = 64

// HasOutputs says whether c has outputs to keep or an activation to
// record (KeepOutputs would write).
func HasOutputs(c Checkpoint) bool {
	if c.SpillDir == "" {
		return false
	}
	return len(c.Outputs) > 0 || c.Activated != "" || c.Subagents && len(Unstored(c.SpillDir, 1)) > 0
}

// KeepOutputs keeps c's spilled outputs in st (Outputs, and on catch-up
// events every one in the spill directory not marked kept) as toolcall
// objects, marks each kept beside its spill file, and records c's
// activation; it returns the objects written. An output already in the
// store with the same content is not written again; one whose spill file
// is gone is left (its transcript still holds the preview).
func KeepOutputs(ctx context.Context, st store.Store, c Checkpoint) (int, error) {
	if c.SpillDir == "" {
		return 0, nil
	}
	ids := slices.Clone(c.Outputs)
	if c.Subagents {
		for _, id := range Unstored(c.SpillDir, maxCatchUp) {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	n := 0
	for _, id := range ids {
		wrote, err := retried(func() (bool, error) { return keepOutput(ctx, st, c, id) })
		if err != nil {
			return n, fmt.Errorf("keeping the output of %s: %w", id, err)
		}
		if wrote {
			n++
		}
	}
	if c.Activated != "" {
		wrote, err := retried(func() (bool, error) { return activate(ctx, st, c) })
		if err != nil {
			return n, fmt.Errorf("recording the activation of %s: %w", c.Activated, err)
		}
		if wrote {
			n++
		}
	}
	return n, nil
}

// retried runs write again, reading the store afresh, when a concurrent
// hook's write made its match fail (a subagent's hooks run beside the main
// agent's, and both catch up on the same spill directory).
func retried(write func() (bool, error)) (bool, error) {
	for try := 1; ; try++ {
		wrote, err := write()
		if !errors.Is(err, store.ErrConflict) || try == 10 {
			return wrote, err
		}
	}
}

// keepOutput puts the toolcall object of call id's spilled output,
// keeping the activations an earlier version recorded.
func keepOutput(ctx context.Context, st store.Store, c Checkpoint, id string) (bool, error) {
	s, err := ReadSpilled(c.SpillDir, c.Session, id)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var acts []any
	prev, err := st.Entity(ctx, id, store.Basis{})
	switch {
	case errors.Is(err, store.ErrNotFound):
		prev = nil
	case err != nil:
		return false, err
	default:
		if p, ok := prev["preview"].(map[string]any); !ok || p["session"] != c.Session {
			// A toolcall of this id that is not this session's output (a
			// live session's, or another's): left as it is.
			return false, fmt.Errorf("object %s exists and is not this session's output", id)
		}
		acts, _ = prev["activations"].([]any)
	}
	o, err := s.Object(acts)
	if err != nil {
		return false, err
	}
	wrote, err := putIfChanged(ctx, st, o, prev)
	if err == nil {
		// The mark only saves the next catch-up a look: a failed one costs
		// a read of the store.
		os.WriteFile(storedMark(s.File), nil, 0o600)
	}
	return wrote, err
}

// activate appends c's activation (the Read's call id and time) to the
// output's object, bringing the output in first when it is not there yet.
func activate(ctx context.Context, st store.Store, c Checkpoint) (bool, error) {
	id := c.Activated
	prev, err := st.Entity(ctx, id, store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		if _, err := keepOutput(ctx, st, c, id); err != nil {
			return false, err
		}
		prev, err = st.Entity(ctx, id, store.Basis{})
	}
	if errors.Is(err, store.ErrNotFound) {
		return false, nil // neither in the store nor in the spill directory: nothing to record on
	}
	if err != nil {
		return false, err
	}
	if p, ok := prev["preview"].(map[string]any); !ok || p["session"] != c.Session {
		return false, fmt.Errorf("object %s is not this session's output", id)
	}
	acts, _ := prev["activations"].([]any)
	for _, a := range acts {
		if m, ok := a.(map[string]any); ok && m["call"] == c.ActivatedBy {
			return false, nil // recorded by an earlier run of the same hook
		}
	}
	at := c.Time
	if at.IsZero() {
		at = time.Now()
	}
	act := map[string]any{"call": c.ActivatedBy, "how": "spill_read", "at": at.UTC().Format(time.RFC3339Nano)}
	if c.Agent != "" {
		act["agent"] = c.Agent
	}
	o, err := objects.FromDoc(prev)
	if err != nil {
		return false, err
	}
	p := o.Payload
	extra := map[string]any{}
	for k, v := range p.Extra {
		extra[k] = v
	}
	extra["activations"] = append(slices.Clone(acts), act)
	p.Extra = extra
	next, err := objects.New(o.Envelope(), p)
	if err != nil {
		return false, err
	}
	return putIfChanged(ctx, st, next, prev)
}

// putIfChanged puts o unless prev is the same document, guarded by a
// match on prev (a concurrent hook's write makes it fail, not vanish).
func putIfChanged(ctx context.Context, st store.Store, o *objects.Object, prev store.Doc) (bool, error) {
	doc, err := o.Doc()
	if err != nil {
		return false, err
	}
	if prev != nil && prev["content_hash"] == doc["content_hash"] {
		return false, nil
	}
	if _, err := store.SubmitWait(ctx, st, []store.Op{store.Match(o.ID(), prev), store.Put(doc)}); err != nil {
		return false, err
	}
	return true, nil
}
