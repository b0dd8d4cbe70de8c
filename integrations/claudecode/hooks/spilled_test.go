package hooks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

func TestMain(m *testing.M) { storetestenv.Main(m) }

// keeper is the store importer's part that keeps outputs (the transcript
// import is cmd/ctxstore's); fail makes it fail as a locked store would.
type keeper struct {
	st   store.Store
	fail bool
}

func (k keeper) Checkpoint(ctx context.Context, c Checkpoint) (Result, error) {
	if k.fail {
		return Result{}, errors.New("store locked")
	}
	n, err := KeepOutputs(ctx, k.st, c)
	return Result{Outputs: n}, err
}

// TestKeepOutputs: an output that enters as a preview is kept whole in the
// store as its call's toolcall object, which outlives the spill directory;
// the model's whole Read of the spill file is recorded on it as an
// activation, once per Read; an output whose checkpoint failed is brought
// in by the next catch-up event from the spill directory; another
// object of the same id is never overwritten.
func TestKeepOutputs(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) { keepOutputs(t, e) })
}

func keepOutputs(t *testing.T, e *storetestenv.Env) {
	ctx := context.Background()
	st := e.Store
	// Ids unique in a store the tests of the process share (XTDB).
	id := func(s string) string { return strings.ReplaceAll(e.ID(s), ".", "_") }
	sess, a, b, c, d, x := id("sess"), id("toolu_01A"), id("toolu_02B"), id("toolu_03C"), id("toolu_04D"), id("toolu_05E")
	root := t.TempDir()
	r := Runner{Importer: keeper{st: st}, Spill: Spill{Root: root}}
	big := numbered(2000)
	run := func(r Runner, v map[string]any) Outcome {
		t.Helper()
		v["session_id"], v["transcript_path"] = sess, "/t/"+sess+".jsonl"
		o := r.Run(ctx, strings.NewReader(mustJSON(t, v)))
		if o.Err != nil {
			t.Fatalf("%v: %v", v["hook_event_name"], o.Err)
		}
		return o
	}
	o := run(r, map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": a,
		"tool_input":    map[string]any{"command": "seq 2000", "timeout": 1000},
		"tool_response": map[string]any{"stdout": big, "stderr": "", "interrupted": false, "isImage": false}})
	if o.Output.HookSpecificOutput == nil || o.Result.Outputs != 1 {
		t.Fatalf("no preview, or not kept: %+v", o.Result)
	}
	file := filepath.Join(root, sess, a+".txt")
	// The spill directory goes; the store keeps the output whole.
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	doc, err := st.Entity(ctx, a, store.Basis{})
	if err != nil {
		t.Fatal(err)
	}
	ob, err := objects.FromDoc(doc)
	if err != nil || ob.VerifyHashes() != nil || ob.Kind() != objects.KindToolcall {
		t.Fatalf("not a valid toolcall object: %v %v", err, doc)
	}
	if ob.Content == nil || *ob.Content != big {
		t.Errorf("the object does not hold the output whole")
	}
	p, _ := doc["preview"].(map[string]any)
	if ob.Toolcall.Tool != "Bash" || ob.Toolcall.ChatRef != "chat:"+sess || ob.Toolcall.Args["command"] != "seq 2000" ||
		p["session"] != sess || p["file"] != file || p["whole_chars"] == nil {
		t.Errorf("the object: %+v preview %v", ob.Toolcall, p)
	}

	// The model reads the spill file whole: an activation on the object
	// (the spill directory gone or not); the same Read's hook again
	// records nothing more, a part of the file is no activation.
	read := func(id string, args map[string]any) Outcome {
		return run(r, map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_use_id": id, "tool_input": args,
			"tool_response": map[string]any{"type": "text", "file": map[string]any{"filePath": file, "content": "x", "numLines": 1, "startLine": 1, "totalLines": 1}}})
	}
	if o := read(b, map[string]any{"file_path": file}); o.Preview.Activated != a || o.Result.Outputs != 1 {
		t.Errorf("the Read: %+v %+v", o.Preview, o.Result)
	}
	read(b, map[string]any{"file_path": file})
	read(c, map[string]any{"file_path": file, "offset": 5, "limit": 10})
	doc, _ = st.Entity(ctx, a, store.Basis{})
	acts, _ := doc["activations"].([]any)
	if len(acts) != 1 {
		t.Fatalf("activations %v, want the one whole Read", acts)
	}
	if a := acts[0].(map[string]any); a["call"] != b || a["how"] != "spill_read" || a["at"] == nil {
		t.Errorf("activation %v", a)
	}
	if ob, err := objects.FromDoc(doc); err != nil || ob.VerifyHashes() != nil || *ob.Content != big {
		t.Errorf("the activated object: %v", err)
	}

	// A checkpoint that failed leaves the output in the spill directory
	// only; the next catch-up event (Stop) keeps it, once.
	failing := Runner{Importer: keeper{st: st, fail: true}, Spill: Spill{Root: root}}
	v := map[string]any{"hook_event_name": "PostToolUse", "tool_name": "WebFetch", "tool_use_id": d,
		"tool_response": map[string]any{"result": big, "url": "u"}}
	v["session_id"], v["transcript_path"] = sess, "/t/"+sess+".jsonl"
	if o := failing.Run(ctx, strings.NewReader(mustJSON(t, v))); o.Err == nil || o.Output.HookSpecificOutput == nil {
		t.Fatalf("the failing checkpoint: %v", o.Err)
	}
	if _, err := st.Entity(ctx, d, store.Basis{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("kept by a failed checkpoint: %v", err)
	}
	if o := run(r, map[string]any{"hook_event_name": "Stop"}); o.Result.Outputs != 1 {
		t.Errorf("the catch-up kept %d outputs, want 1", o.Result.Outputs)
	}
	if doc, err := st.Entity(ctx, d, store.Basis{}); err != nil || doc["content"] != big || doc["tool"] != "WebFetch" {
		t.Errorf("the caught-up output: %v", err)
	}
	if o := run(r, map[string]any{"hook_event_name": "Stop"}); o.Result.Outputs != 0 || HasOutputs(o.Checkpoint) {
		t.Errorf("a second catch-up kept %d outputs", o.Result.Outputs)
	}

	// A toolcall of the same id that is not this session's output (a live
	// session's) is left as it is, and the hook says so.
	other, _ := objects.NewToolcall(x, objects.ToolcallFields{Tool: "bash", Args: map[string]any{}, Status: objects.StatusOK}, nil)
	od, _ := other.Doc()
	if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(od)}); err != nil {
		t.Fatal(err)
	}
	v = map[string]any{"hook_event_name": "PostToolUse", "tool_name": "WebFetch", "tool_use_id": x,
		"tool_response": map[string]any{"result": big, "url": "u"}, "session_id": sess, "transcript_path": "/t/" + sess + ".jsonl"}
	if o := r.Run(ctx, strings.NewReader(mustJSON(t, v))); o.Err == nil || !strings.Contains(o.Err.Error(), "not this session's output") {
		t.Errorf("overwriting another object: %v", o.Err)
	}
	if doc, _ := st.Entity(ctx, x, store.Basis{}); doc["content"] != nil {
		t.Errorf("another object was overwritten")
	}
}

// TestKeepOutputsConcurrently: hooks that keep the same output and record
// activations of it at the same time (a subagent's beside the main
// agent's) all succeed, and every activation is recorded once.
func TestKeepOutputsConcurrently(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		id := strings.ReplaceAll(e.ID("toolu_C"), ".", "_")
		sess := e.ID("sess")
		root := t.TempDir()
		in := postToolUse(t, "Bash", map[string]any{"command": "seq"}, map[string]any{"stdout": numbered(2000), "stderr": "", "interrupted": false, "isImage": false})
		in.SessionID, in.ToolUseID = sess, id
		s := Spill{Root: root}
		if r, err := s.Preview(in); err != nil || r.File == "" {
			t.Fatalf("no preview: %v", err)
		}
		const n = 6
		errs := make(chan error, n)
		for i := range n {
			go func() {
				c := Checkpoint{Session: sess, SpillDir: s.Dir(sess), Outputs: []string{id}, Subagents: true,
					Activated: id, ActivatedBy: fmt.Sprintf("toolu_read_%d", i)}
				_, err := KeepOutputs(ctx, e.Store, c)
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Errorf("a concurrent hook failed: %v", err)
			}
		}
		doc, err := e.Store.Entity(ctx, id, store.Basis{})
		if err != nil {
			t.Fatal(err)
		}
		if acts, _ := doc["activations"].([]any); len(acts) != n {
			t.Errorf("%d activations recorded, want %d", len(acts), n)
		}
	})
}

// TestSpillReadThroughLink: a Read of another session's spill file
// through a symbolic link outside the spill root, or by a path relative to
// the session's directory, is refused as the file itself is; a path past
// the bound is no spill file.
func TestSpillReadThroughLink(t *testing.T) {
	root := t.TempDir()
	s := Spill{Root: root}
	other := filepath.Join(root, "sess-2")
	os.MkdirAll(other, 0o700)
	os.WriteFile(filepath.Join(other, "toolu_09Z.txt"), []byte("secret"), 0o600)
	link := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	resp := map[string]any{"type": "text", "file": map[string]any{"filePath": "p", "content": "secret", "numLines": 1, "startLine": 1, "totalLines": 1}}
	in := postToolUse(t, "Read", map[string]any{"file_path": filepath.Join(link, "toolu_09Z.txt")}, resp)
	r, err := s.Preview(in)
	if err != nil || r.Refused == "" || strings.Contains(string(r.Updated), "secret") {
		t.Errorf("a Read through a link: %+v %v", r, err)
	}
	// The session's own file through a link is its own.
	own := filepath.Join(root, "sess-1")
	os.MkdirAll(own, 0o700)
	os.WriteFile(filepath.Join(own, "toolu_01A.txt"), []byte("mine"), 0o600)
	link2 := filepath.Join(t.TempDir(), "mine")
	os.Symlink(own, link2)
	in = postToolUse(t, "Read", map[string]any{"file_path": filepath.Join(link2, "toolu_01A.txt")}, resp)
	if r, err := s.Preview(in); err != nil || r.Refused != "" || r.Activated != "toolu_01A" {
		t.Errorf("the session's own file through a link: %+v %v", r, err)
	}
	// A relative path, as Claude Code resolves it against the session's
	// directory.
	in = postToolUse(t, "Read", map[string]any{"file_path": "sess-2/toolu_09Z.txt"}, resp)
	in.Cwd = root
	if r, err := s.Preview(in); err != nil || r.Refused == "" {
		t.Errorf("a relative Read of another session's file: %+v %v", r, err)
	}
	in = postToolUse(t, "Read", map[string]any{"file_path": other + "/" + strings.Repeat("x", maxReadPath)}, resp)
	if r, _ := s.Preview(in); r.Refused != "" || r.Activated != "" {
		t.Errorf("a path past the bound was judged: %+v", r)
	}
}
