package tests

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/context/runtime"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/xtdb"
)

// sessionAgentEnv makes the test binary an agent process (sessionAgent):
// the value is the store (an SQLite path or an XTDB URL).
const sessionAgentEnv = "CTXSTORE_TEST_SESSION_AGENT"

// agentCmd is one command to the agent process, one JSON object per line
// on its stdin; it answers each with one agentReply line on stdout.
type agentCmd struct {
	// Op is "context" (ingest Log and assemble a call, writing the bytes
	// to Out), "wait" (until the latest version of the file at Path has
	// content containing Want, or null content when Want is empty) or
	// "quit" (flush the turn in progress and exit).
	Op   string                 `json:"op"`
	Log  []conversation.Message `json:"log,omitempty"`
	Out  string                 `json:"out,omitempty"`
	Path string                 `json:"path,omitempty"`
	Want string                 `json:"want,omitempty"`
}

type agentReply struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
	N       int    `json:"n,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Rebased bool   `json:"rebased,omitempty"`
	Applied int    `json:"applied,omitempty"`
	Resumed bool   `json:"resumed,omitempty"`
}

// sessionAgent runs a ctxstore session the way a harness integration does,
// in its own process: it creates or reopens session "e2e" (reconciling its
// files with the disk on resume), tracks every file it indexes with
// fsnotify, and ingests the log it is sent.
func sessionAgent(storeURL string) int {
	ctx := context.Background()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "agent:", err); return 1 }
	var st store.Store
	var err error
	if strings.HasPrefix(storeURL, "http") {
		st, err = xtdb.Open(ctx, storeURL, xtdb.Options{})
	} else {
		st, err = bitemporal.Open(ctx, storeURL, bitemporal.Options{})
	}
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	cwd := os.Getenv("CTXSTORE_TEST_AGENT_CWD")
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-e2e"})
	if err != nil {
		return fail(err)
	}
	ix := files.NewIndexer(st, res, 0)
	tr, err := files.NewTracker(ix, files.TrackerOptions{Debounce: 20 * time.Millisecond,
		OnError: func(err error) { fmt.Fprintln(os.Stderr, "agent: tracker:", err) }})
	if err != nil {
		return fail(err)
	}
	defer tr.Close()
	sid := os.Getenv("CTXSTORE_TEST_AGENT_SESSION")
	rt, err := runtime.Open(ctx, st, sid, runtime.Options{
		Create:   session.CreateOptions{SystemPrompt: "You are a careful agent.", Harness: "e2e"},
		Indexer:  ix,
		Tools:    tools.Options{Tracker: tr},
		Assemble: assemble.Options{Tools: []assemble.ToolSpec{{Name: "read"}, {Name: "bash"}}},
		Ingest:   ingest.Options{Cwd: cwd},
	})
	if err != nil {
		return fail(err)
	}
	if rt.ResumeFiles != nil {
		return fail(rt.ResumeFiles)
	}
	resumed := rt.State == runtime.Resumed
	in := rt.Ingester
	out := json.NewEncoder(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var c agentCmd
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return fail(err)
		}
		r := agentReply{OK: true, Resumed: resumed}
		switch c.Op {
		case "context":
			ac, rep, err := in.Context(ctx, c.Log)
			if err == nil {
				err = os.WriteFile(c.Out, ac.Bytes, 0o644)
			}
			if err != nil {
				r = agentReply{Error: err.Error()}
				break
			}
			h := sha256.Sum256(ac.Bytes)
			r.N, r.SHA256, r.Rebased, r.Applied = ac.N, hex.EncodeToString(h[:]), ac.Rebased, rep.Applied
		case "wait":
			if err := waitFor(ctx, st, ix, c.Path, c.Want); err != nil {
				r = agentReply{Error: err.Error()}
			}
		case "quit":
			if err := in.Flush(ctx); err != nil {
				return fail(err)
			}
			_ = out.Encode(r)
			return 0
		default:
			r = agentReply{Error: "unknown op " + c.Op}
		}
		if err := out.Encode(r); err != nil {
			return fail(err)
		}
	}
	return 0
}

// waitFor polls until the file object of path has content containing
// want (null content when want is empty): what the tracker writes.
func waitFor(ctx context.Context, st store.Store, ix *files.Indexer, path, want string) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		id, err := ix.ObjectID(path)
		if err != nil {
			return err
		}
		doc, err := st.Entity(ctx, id, store.Basis{})
		if err == nil {
			c, isStr := doc["content"].(string)
			if (want == "" && doc["content"] == nil) || (isStr && want != "" && strings.Contains(c, want)) {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no version of %s with %q after 20s", path, want)
}
