package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/server/ccproxy"
	"github.com/ctxstore/ctxstore/server/inspector"
	"github.com/ctxstore/ctxstore/store"
)

const mgSession = "5f0c3a52-1111-4222-8333-444455556666"

// mgTranscript is a Claude Code session of three calls: a prompt, two
// Bash runs (the first a long output), an answer; each assistant message
// answered two seconds after its request.
func mgTranscript(t0 time.Time, long string) string {
	ts := func(s float64) string {
		return t0.Add(time.Duration(s * float64(time.Second))).UTC().Format(time.RFC3339Nano)
	}
	usage := `"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":0,"cache_creation_input_tokens":100}`
	line := func(typ, uuid, parent string, at float64, msg string) string {
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		return fmt.Sprintf(`{"type":%q,"uuid":%q,"parentUuid":%s,"sessionId":%q,"cwd":"/work/p","timestamp":%q,"message":%s}`, typ, uuid, p, mgSession, ts(at), msg)
	}
	result, _ := json.Marshal(long)
	return strings.Join([]string{
		line("user", "u1", "", 0, `{"role":"user","content":"list the files"}`),
		line("assistant", "a1", "u1", 2, `{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls -R"}}],`+usage+`}`),
		line("user", "u2", "a1", 3, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":`+string(result)+`}]}`),
		line("assistant", "a2", "u2", 5, `{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_2","name":"Bash","input":{"command":"pwd"}}],`+usage+`}`),
		line("user", "u3", "a2", 6, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"/work/p"}]}`),
		line("assistant", "a3", "u3", 8, `{"id":"m3","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Done."}],`+usage+`}`),
	}, "\n") + "\n"
}

// mgBody is a managed request of the session: the system prompt, a tool,
// and msgs.
func mgBody(msgs ...string) []byte {
	return []byte(`{"model":"claude-sonnet-4-5","max_tokens":1000,"system":[{"type":"text","text":"You are Claude Code."}],` +
		`"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"metadata":{"user_id":"{\"session_id\":\"` + mgSession + `\"}"},` +
		`"messages":[` + strings.Join(msgs, ",") + `]}`)
}

// TestManagedCallsBesideRecorded: a Claude Code session imported from its
// transcript and run through managed mode (its calls recorded by the
// proxy's store writer) shows, in calls and call, what the model got
// beside what Claude Code asked to send; a retried request's failed
// attempt pairs with nothing.
func TestManagedCallsBesideRecorded(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	long := strings.Repeat("src/file.go\n", 400)
	tr := filepath.Join(dir, mgSession+".jsonl")
	if err := os.WriteFile(tr, []byte(mgTranscript(t0, long)), 0o644); err != nil {
		t.Fatal(err)
	}
	runCLI := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--store", db}, args...), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	if _, errs, code := runCLI("import", tr); code != 0 {
		t.Fatalf("import: %s", errs)
	}

	// The managed calls, written as the proxy writes them.
	u1 := `{"role":"user","content":"list the files"}`
	a1 := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls -R"}}]}`
	resultJSON, _ := json.Marshal(long)
	u2 := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":` + string(resultJSON) + `}]}`
	collapsed := "[ctxstore] output collapsed (4800 chars, 400 lines); Read /spill/" + mgSession + "/toolu_1.txt for it whole"
	u2c := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"` + collapsed + `"}]}`
	a2 := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"Bash","input":{"command":"pwd"}}]}`
	u3 := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"/work/p"}]}`
	sent := [][]byte{mgBody(u1), mgBody(u1, a1, u2), mgBody(u1, a1, u2), mgBody(u1, a1, u2c, a2, u3)}
	at := []float64{1, 3.2, 3.5, 6.5}
	var errb bytes.Buffer
	ps, err := newProxyStore(&app{ctx: context.Background(), stdout: io.Discard, stderr: &errb, cli: &cli{Store: "sqlite:" + db}}, "sqlite:"+db)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range sent {
		asked := b
		if i == 3 {
			asked = mgBody(u1, a1, u2, a2, u3)
		}
		if err := ps.RecordCall(context.Background(), ccproxy.Call{Session: mgSession, Conversation: "c0", N: i + 1,
			Time: t0.Add(time.Duration(at[i] * float64(time.Second))), Body: b, AskedBytes: len(asked), Collapsed: map[bool]int{true: 1}[i == 3]}); err != nil {
			t.Fatal(err)
		}
		if err := ps.SaveConversation(context.Background(), mgSession, "c0", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	ps.Close()
	if errb.Len() > 0 {
		t.Fatalf("the store writer: %s", errb.String())
	}

	// calls --json: each recorded call names its managed call; the failed
	// attempt (managed call 2) is no one's.
	out, errs, code := runCLI("--json", "calls", mgSession[:8])
	if code != 0 {
		t.Fatalf("calls: %s", errs)
	}
	var listed []struct {
		N       int `json:"call"`
		Managed *struct {
			N         int `json:"n"`
			Collapsed int `json:"collapsed"`
		} `json:"managed"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 3 {
		t.Fatalf("calls --json: %v\n%s", err, out)
	}
	for i, want := range []int{1, 3, 4} {
		if m := listed[i].Managed; m == nil || m.N != want {
			t.Errorf("recorded call %d pairs with managed call %+v, want %d", i+1, m, want)
		}
	}
	out, _, _ = runCLI("calls", mgSession)
	if !strings.Contains(out, "MANAGED") || !strings.Contains(out, "COLLAPSED") {
		t.Errorf("calls does not show the managed calls:\n%s", out)
	}

	// call 3 --raw is what the model got (managed call 4, byte for byte as
	// claude-code calls --raw rebuilds it), --raw --asked what Claude Code
	// asked to send.
	raw, errs, code := runCLI("call", mgSession, "3", "--raw")
	if code != 0 {
		t.Fatalf("call --raw: %s", errs)
	}
	want, _, _ := runCLI("claude-code", "calls", mgSession, "--raw", "4")
	if raw+"\n" != want || !strings.Contains(raw, "[ctxstore] output collapsed") || strings.Contains(raw, long) {
		t.Errorf("call 3 --raw is not what the model got:\n%.400s\nwant\n%.400s", raw, want)
	}
	asked, errs, code := runCLI("call", mgSession, "3", "--raw", "--asked")
	if code != 0 || !strings.Contains(asked, "src/file.go") || strings.Contains(asked, "[ctxstore]") {
		t.Errorf("call 3 --raw --asked is not what Claude Code asked to send (%s):\n%.400s", errs, asked)
	}
	if _, _, code := runCLI("call", mgSession, "3", "--asked"); code != 2 {
		t.Errorf("--asked without --raw: exit %d, want 2", code)
	}

	// call 3 says what managed mode did and which tool result changed.
	out, _, _ = runCLI("call", mgSession, "3")
	if !strings.Contains(out, "managed: managed call 4") || !strings.Contains(out, "toolu_1: 4800 chars asked") || strings.Contains(out, "toolu_2:") {
		t.Errorf("call 3 does not show the managed call and its one change:\n%s", out)
	}
	out, _, _ = runCLI("call", mgSession, "1")
	if !strings.Contains(out, "every tool result as Claude Code asked") {
		t.Errorf("call 1:\n%s", out)
	}
	// --diff: how much of the earlier managed request the later one kept.
	out, _, _ = runCLI("call", mgSession, "3", "--diff", "2")
	if !strings.Contains(out, "the first 2 of 5 messages alike") {
		t.Errorf("call 3 --diff 2 does not compare the managed requests:\n%s", out)
	}

	// The inspector's call page shows both, its raw bytes are what the
	// model got (?asked=1: what Claude Code asked).
	st, err := openSQLite(context.Background(), location{backend: backendSQLite, path: db}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := inspector.New(inspector.Options{Store: st, Prefix: "/inspect"})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	if page := get("/inspect/s/" + mgSession); !strings.Contains(page, `id="managed-note"`) || !strings.Contains(page, "managed mode (1 conversation)") {
		t.Errorf("the session page does not say the session went through managed mode:\n%s", page)
	}
	page := get("/inspect/s/" + mgSession + "/c/3")
	if !strings.Contains(page, `id="managed"`) || !strings.Contains(page, "Managed call 4") || !strings.Contains(page, "<td>toolu_1</td><td>4800 chars</td>") || strings.Contains(page, "<td>toolu_2</td>") {
		t.Errorf("the call page does not show the managed call:\n%s", page)
	}
	if page := get("/inspect/s/" + mgSession + "/c/1"); !strings.Contains(page, `id="managed-same"`) {
		t.Errorf("call 1's page:\n%s", page)
	}
	if got := get("/inspect/s/" + mgSession + "/c/3/raw"); got != raw {
		t.Errorf("the page's raw bytes are not what the model got:\n%.300s", got)
	}
	if got := get("/inspect/s/" + mgSession + "/c/3/raw?asked=1"); got != asked {
		t.Errorf("raw?asked=1 is not what Claude Code asked:\n%.300s", got)
	}
}

// TestUninstallPurge: uninstall --purge removes the settings entries,
// evicts every managed-mode document (no version stays), removes the spill
// and hook state directories, and keeps the recorded sessions; --dry-run
// removes nothing.
func TestUninstallPurge(t *testing.T) {
	home, cache, project := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", cache)
	db := filepath.Join(home, ".ctxstore", "store.db")
	runCLI := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	if _, errs, code := runCLI("claude-code", "install", "--project", project); code != 0 {
		t.Fatalf("install: %s", errs)
	}
	// A session recorded by run's hooks and managed by its proxy, in
	// ~/.ctxstore/store.db; spill files of both; the hooks' state.
	os.MkdirAll(filepath.Dir(db), 0o755)
	tr := filepath.Join(t.TempDir(), mgSession+".jsonl")
	os.WriteFile(tr, []byte(mgTranscript(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), "out")), 0o644)
	if _, errs, code := runCLI("--store", db, "import", tr); code != 0 {
		t.Fatalf("import: %s", errs)
	}
	ps, err := newProxyStore(&app{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard, cli: &cli{Store: "sqlite:" + db}}, "sqlite:"+db)
	if err != nil {
		t.Fatal(err)
	}
	ps.SaveConversation(context.Background(), mgSession, "c0", []byte(`{}`))
	ps.RecordCall(context.Background(), ccproxy.Call{Session: mgSession, Conversation: "c0", N: 1, Time: time.Now(), Body: mgBody(`{"role":"user","content":"list the files"}`)})
	ps.Close()
	spills := []string{filepath.Join(home, ".ctxstore", "spill"), filepath.Join(project, ".ctxstore", "spill"), filepath.Join(cache, "ctxstore", "claude-code")}
	for _, d := range spills {
		os.MkdirAll(filepath.Join(d, mgSession), 0o755)
		os.WriteFile(filepath.Join(d, mgSession, "toolu_1.txt"), []byte("whole"), 0o644)
	}
	settings := filepath.Join(project, ".claude", "settings.json")
	before, _ := os.ReadFile(settings)
	if !strings.Contains(string(before), "claude-code hook") {
		t.Fatalf("install wrote no hook:\n%s", before)
	}
	managedDocs := func() int {
		st, err := openSQLite(context.Background(), location{backend: backendSQLite, path: db}, false, false)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		n := 0
		for _, typ := range ccproxy.RecordTypes {
			docs, err := st.Query(context.Background(), store.Query{Where: []store.Pred{store.Where("type", typ)}})
			if err != nil {
				t.Fatal(err)
			}
			n += len(docs)
			for _, d := range docs { // no version of it stays either
				if h, err := st.History(context.Background(), d[store.IDKey].(string), store.HistoryOptions{}); err != nil || len(h) == 0 {
					t.Fatalf("history of %v: %d versions, %v", d[store.IDKey], len(h), err)
				}
			}
		}
		return n
	}
	if n := managedDocs(); n != 4 { // conversation, call, head, message
		t.Fatalf("%d managed-mode documents before, want 4", n)
	}

	out, errs, code := runCLI("--json", "claude-code", "uninstall", "--project", project, "--purge", "--dry-run")
	if code != 0 {
		t.Fatalf("uninstall --purge --dry-run: %s", errs)
	}
	var plan struct {
		DryRun bool `json:"dry_run"`
		Purge  struct {
			Stores []struct {
				Store     string         `json:"store"`
				Documents map[string]int `json:"documents"`
			} `json:"stores"`
			Dirs []string `json:"dirs"`
		} `json:"purge"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil || !plan.DryRun || len(plan.Purge.Stores) != 1 || plan.Purge.Stores[0].Documents["ccproxy_call"] != 1 || len(plan.Purge.Dirs) != 3 {
		t.Fatalf("the dry run's plan: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(settings); !bytes.Equal(after, before) || managedDocs() != 4 {
		t.Fatal("the dry run changed something")
	}
	for _, d := range spills {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("the dry run removed %s", d)
		}
	}

	out, errs, code = runCLI("claude-code", "uninstall", "--project", project, "--purge")
	if code != 0 {
		t.Fatalf("uninstall --purge: %s", errs)
	}
	if !strings.Contains(out, "evicted 4 managed-mode documents (1 calls, 1 conversations)") || !strings.Contains(errs, "the recorded sessions stay in sqlite:"+db) {
		t.Errorf("uninstall --purge says:\n%s%s", out, errs)
	}
	if after, _ := os.ReadFile(settings); strings.Contains(string(after), "ctxstore") {
		t.Errorf("settings still name ctxstore:\n%s", after)
	}
	if n := managedDocs(); n != 0 {
		t.Errorf("%d managed-mode documents left", n)
	}
	st, err := openSQLite(context.Background(), location{backend: backendSQLite, path: db}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ccproxy-call:" + mgSession + ":c0:1", "ccproxy-conversation:" + mgSession + ":c0"} {
		if h, err := st.History(context.Background(), id, store.HistoryOptions{}); err != nil || len(h) != 0 {
			t.Errorf("%s: %d versions left after eviction (%v)", id, len(h), err)
		}
	}
	st.Close()
	for _, d := range spills {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there (%v)", d, err)
		}
	}
	// The recorded session stays.
	if out, errs, code := runCLI("--store", db, "--json", "calls", mgSession); code != 0 || !strings.Contains(out, `"message_id":"m3"`) {
		t.Errorf("the recorded session is gone: %s %s", out, errs)
	}
	if _, _, code := runCLI("--store", db, "claude-code", "calls", mgSession); code == 0 {
		t.Error("claude-code calls still finds managed calls")
	}
}
