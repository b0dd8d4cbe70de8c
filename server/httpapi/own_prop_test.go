package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/sessionbundle"
)

const tokB = "token-for-session-sb-0123"

// propOp is one write a session-limited token makes.
type propOp struct {
	kind string // "observe", "read", "context", "user", "import"
	id   string
	// bundle is the import's body, made once so that every run sends the
	// same bytes.
	bundle []byte
}

// propIDs are the ids session s may try: its own plain ids, its own and
// the other session's derived ids (present or future), and ids derived
// for no one session.
func propIDs(s, o string) []string {
	ids := []string{"call_" + s + "_1", "call_" + s + "_2", "call_" + s + "_3", "toolu_" + s + "_x"}
	for _, p := range []string{s, o} {
		for n := 1; n <= 8; n++ {
			ids = append(ids, fmt.Sprintf("ctx-%s-%d", p, n))
		}
		ids = append(ids, "session-chunk:"+p+":turn:0", "session-chunk:"+p+":turn:2", "session-chunk:"+p+":toolcalls:0",
			"session-chunk:"+p+":index:0", "chat:"+p, "session:"+p, "system_prompt:"+p, "session-meta:"+p)
	}
	return append(ids, "ctx-content:00ff", "ctxstore:sync-cursor:x", "import-cursor:00", "ctx-0123456789abcdef0123")
}

// propScript draws the writes of session s (the other is o).
func propScript(tb testing.TB, r *rand.Rand, s, o string, n int) []propOp {
	ids := propIDs(s, o)
	pick := func() string { // half the time one of its own plain ids
		if r.IntN(2) == 0 {
			return ids[r.IntN(4)]
		}
		return ids[r.IntN(len(ids))]
	}
	var ops []propOp
	if r.IntN(3) != 0 { // a bundle first, while the session does not exist
		ops = append(ops, propOp{kind: "import", id: pick()})
	}
	ops = append(ops, propOp{kind: "open"})
	for range n {
		op := propOp{id: pick()}
		switch k := r.IntN(10); {
		case k < 3:
			op.kind = "observe"
		case k < 4:
			op.kind = "read"
		case k < 6:
			op.kind = "user"
		case k < 9:
			op.kind = "context"
		default:
			op.kind = "import"
		}
		ops = append(ops, op)
	}
	for i := range ops {
		if ops[i].kind == "import" {
			if strings.HasPrefix(ops[i].id, store.ReservedPrefix) {
				ops[i].id = "ctx-content:00ff" // no store holds a reserved id to export
			}
			if owner, _ := session.Namespace(ops[i].id); owner == s {
				// Its own head, chat or chunk forged would break the
				// scratch session's export: the other session's instead.
				ops[i].id = strings.Replace(ops[i].id, s, o, 1)
			}
			ops[i].bundle = hostileBundle(tb, s, ops[i].id)
		}
	}
	return ops
}

// propRun is what one session saw of a run.
type propRun struct {
	statuses []string
	contexts []string
	info     SessionInfo
	entities []string
}

// fileIDs matches file object ids, which hold the file's path and so
// differ between the runs' directories.
var fileIDs = regexp.MustCompile(`\b[0-9a-f]{16}([0-9a-f]{48})?\b`)

// txNumbers matches the store's transaction numbers in rendered text
// (an object's version): the store's counter, which the other session's
// writes move on.
var txNumbers = regexp.MustCompile(`(version[= ])[0-9]+`)

// norm makes a run's text comparable with another run's: its directory,
// file ids and transaction numbers named alike.
func (p *propSession) norm(s string) string {
	s = fileIDs.ReplaceAllString(strings.ReplaceAll(s, p.e.dir, "<dir>"), "<file>")
	return txNumbers.ReplaceAllString(s, "${1}N")
}

// propSession plays one session's script step by step.
type propSession struct {
	e     *env
	sid   string
	token string
	ops   []propOp
	next  int
	log   piLogBuilder
	run   propRun
}

func (p *propSession) step() {
	e := p.e
	e.token = p.token
	op := p.ops[p.next]
	p.next++
	var st int
	var eb ErrorBody
	out := "out of " + op.id
	switch op.kind {
	case "open":
		st, eb = e.do("PUT", "/v1/sessions/"+p.sid, OpenRequest{Cwd: e.dir, SystemPrompt: "You are a test agent.", Harness: "pi"}, nil)
	case "observe":
		st, eb = e.do("POST", "/v1/sessions/"+p.sid+"/observe", ObserveRequest{ToolCallID: op.id, Tool: "bash", Args: map[string]any{"command": "cat f.txt"}, Output: &out}, nil)
	case "read":
		st, eb = e.do("POST", "/v1/sessions/"+p.sid+"/tools/read", ToolRequest{ToolCallID: op.id, Args: map[string]any{"path": "f.txt"}}, nil)
	case "user", "context":
		n := len(p.log.msgs)
		p.log.user("do " + op.id)
		if op.kind == "context" {
			p.log.call(op.id, "bash", map[string]any{"command": "echo"})
			p.log.result(op.id, "bash", out, false)
			p.log.say("done")
		}
		var ans piAnswer
		st, eb = e.do("POST", "/v1/sessions/"+p.sid+"/context", p.log.body(), &ans)
		if st == 200 {
			p.run.contexts = append(p.run.contexts, p.norm(flat(ans.Messages)))
		} else {
			p.log.msgs = p.log.msgs[:n] // the harness drops what was refused
		}
	case "import":
		var body []byte
		st, _, body = e.raw("POST", "/v1/sessions/"+p.sid+"/import", "application/x-ndjson", op.bundle)
		if st != 200 {
			eb.Code = string(body)
		}
	}
	code := eb.Code
	if i := strings.Index(code, `"code":"`); i >= 0 {
		code = strings.SplitN(code[i+8:], `"`, 2)[0]
	}
	p.run.statuses = append(p.run.statuses, fmt.Sprintf("%s %s: %d %s", op.kind, op.id, st, code))
}

// finish records the session's state, checks that it reopens and that
// every call rebuilds, and returns what it saw.
func (p *propSession) finish(tb testing.TB) propRun {
	tb.Helper()
	ctx := context.Background()
	e := p.e
	e.token = p.token
	e.ok("GET", "/v1/sessions/"+p.sid, nil, &p.run.info)
	p.run.info.Tx = 0
	for _, l := range [][]string{p.run.info.Index, p.run.info.Pool, p.run.info.Active, p.run.info.Pinned} {
		for i := range l {
			l[i] = p.norm(l[i])
		}
	}
	e.ok("POST", "/v1/sessions/"+p.sid+"/close", nil, nil)
	if r := e.open(p.sid); r.State != "resumed" || r.Calls != p.run.info.Calls {
		tb.Fatalf("%s does not reopen as it was: %+v, want %d calls", p.sid, r, p.run.info.Calls)
	}
	for n := 1; n <= p.run.info.Calls; n++ {
		if _, err := assemble.Rebuild(ctx, e.st, p.sid, n); err != nil {
			tb.Fatalf("%s: rebuilding call %d: %v", p.sid, n, err)
		}
	}
	var b bytes.Buffer
	_, err := sessionbundle.Export(ctx, e.st, p.sid, &b, sessionbundle.ExportOptions{TempDir: tb.TempDir()})
	if err != nil {
		tb.Fatalf("exporting %s: %v", p.sid, err)
	}
	info, err := sessionbundle.Verify(bytes.NewReader(b.Bytes()))
	if err != nil {
		tb.Fatalf("the export of %s: %v", p.sid, err)
	}
	for _, en := range info.Entities {
		if strings.HasPrefix(en.ID, "session-meta:") || strings.HasPrefix(en.ID, "session-index-attempt:") {
			continue // the recall index, written in the background when it is
		}
		p.run.entities = append(p.run.entities, p.norm(en.ID)+" "+string(en.Role))
	}
	slices.Sort(p.run.entities)
	return p.run
}

func propEnv(tb testing.TB) *env {
	e := newEnv(tb, func(o *Options) {
		o.Tokens = []Token{{Secret: tokAll}, {Secret: tokA, Sessions: []string{"sa"}}, {Secret: tokB, Sessions: []string{"sb"}}}
	})
	e.file("f.txt", "a file\n")
	return e
}

// Random writes from two tokens, each limited to its session (observe,
// tool calls, context calls, bundle imports, with ids of their own, ids
// ctxstore derives for either session, present or future, and ids it
// derives for no one session): each session's answers, contexts, state,
// export, reopen and rebuilt calls are those it gets when it runs alone.
// Nothing one session does changes the other.
func TestPropertySessionsDoNotTouchEachOther(t *testing.T) {
	seeds, steps := 6, 14
	if testing.Short() {
		seeds, steps = 3, 10
	}
	seen := map[string]int{} // what the writes drew, so the test is not vacuous
	defer func() {
		for _, k := range []string{"import 200", "import 403", "observe 200", "observe 403", "context 200", "context 403", "read 200"} {
			if seen[k] == 0 && !t.Failed() {
				t.Errorf("no write drew %q: %v", k, seen)
			}
		}
	}()
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 38))
			scripts := map[string][]propOp{
				"sa": propScript(t, r, "sa", "sb", steps),
				"sb": propScript(t, r, "sb", "sa", steps),
			}
			tokens := map[string]string{"sa": tokA, "sb": tokB}
			// Together, interleaved at random.
			both := propEnv(t)
			ps := map[string]*propSession{}
			for sid, ops := range scripts {
				ps[sid] = &propSession{e: both, sid: sid, token: tokens[sid], ops: ops}
			}
			for ps["sa"].next < len(scripts["sa"]) || ps["sb"].next < len(scripts["sb"]) {
				sid := "sa"
				if ps["sa"].next == len(scripts["sa"]) || (ps["sb"].next < len(scripts["sb"]) && r.IntN(2) == 0) {
					sid = "sb"
				}
				ps[sid].step()
			}
			together := map[string]propRun{"sa": ps["sa"].finish(t), "sb": ps["sb"].finish(t)}
			for _, run := range together {
				for _, st := range run.statuses {
					kind, rest, _ := strings.Cut(st, " ")
					_, code, _ := strings.Cut(rest, ": ")
					seen[kind+" "+strings.Fields(code)[0]]++
				}
			}
			// Each alone, in a store of its own.
			for sid, ops := range scripts {
				alone := &propSession{e: propEnv(t), sid: sid, token: tokens[sid], ops: ops}
				for alone.next < len(ops) {
					alone.step()
				}
				got, want := together[sid], alone.finish(t)
				if !slices.Equal(got.statuses, want.statuses) {
					t.Errorf("%s's answers with the other session:\n%s\nalone:\n%s", sid, strings.Join(got.statuses, "\n"), strings.Join(want.statuses, "\n"))
				}
				if !slices.Equal(got.contexts, want.contexts) {
					t.Errorf("%s's contexts differ with the other session: %s", sid, firstDiff(got.contexts, want.contexts))
				}
				if fmt.Sprint(got.info) != fmt.Sprint(want.info) {
					t.Errorf("%s's state with the other session: %+v\nalone: %+v", sid, got.info, want.info)
				}
				if !slices.Equal(got.entities, want.entities) {
					t.Errorf("%s's export with the other session: %v\nalone: %v", sid, got.entities, want.entities)
				}
			}
		})
	}
}

// firstDiff shows where two runs' contexts part.
func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			continue
		}
		j := 0
		for j < min(len(a[i]), len(b[i])) && a[i][j] == b[i][j] {
			j++
		}
		from := max(0, j-80)
		return fmt.Sprintf("context %d, byte %d:\n%q\nalone:\n%q", i, j, a[i][from:min(len(a[i]), j+120)], b[i][from:min(len(b[i]), j+120)])
	}
	return fmt.Sprintf("%d contexts, alone %d", len(a), len(b))
}
