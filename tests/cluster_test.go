package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/store/storetest"
	"github.com/ctxstore/ctxstore/sync/versionlog"
	"github.com/ctxstore/ctxstore/xtdb"
	"github.com/ctxstore/ctxstore/xtdb/xtdbserver"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// clusterNode is one XTDB node of a cluster: tx log and documents in the
// shared PostgreSQL database, its index in RocksDB under dataDir.
type clusterNode struct {
	name    string
	dataDir string
	srv     *xtdbserver.Server
	log     *lockedBuffer
}

func (n *clusterNode) url() string { return n.srv.URL() }

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startNode starts (or restarts, on the same index) a node of the cluster.
func startNode(t *testing.T, pg *xtdbtest.Postgres, n *clusterNode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n.log = &lockedBuffer{}
	srv, err := xtdbserver.Start(ctx, xtdbserver.Options{Postgres: pg.Options(), DataDir: n.dataDir, Log: n.log})
	if err != nil {
		t.Fatalf("starting %s: %v", n.name, err)
	}
	n.srv = srv
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stopping %s: %v", n.name, err)
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", n.name, tail(n.log.String(), 4000))
		}
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func openNode(t *testing.T, n *clusterNode) *xtdb.Store {
	t.Helper()
	s, err := xtdb.Open(context.Background(), n.url(), xtdb.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", n.name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// latest is the latest tx id in the cluster's log, as node n sees it.
func latest(t *testing.T, s store.Store) int64 {
	t.Helper()
	st, err := s.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.LatestSubmitted == nil {
		return -1
	}
	return st.LatestSubmitted.ID
}

// TestXTDBCluster runs the cluster of docs/xtdb-cluster.md: three XTDB nodes on one
// PostgreSQL tx log and document store (xtdb-jdbc), each with its own
// RocksDB index; a ctxstore serve in front of two of them. The nodes are
// shared by the subtests (JVM starts are slow), which run in order.
func TestXTDBCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no JVM, no PostgreSQL")
	}
	ctx := context.Background()
	pg, err := xtdbtest.StartPostgres(ctx)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL: %v", err)
		}
		t.Skipf("PostgreSQL (set CI=true to fail instead): %v", err)
	}
	t.Cleanup(func() {
		if err := pg.Stop(); err != nil {
			t.Errorf("stopping PostgreSQL: %v", err)
		}
	})
	nodes := make([]*clusterNode, 3)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range nodes {
		nodes[i] = &clusterNode{name: fmt.Sprintf("node%d", i+1), dataDir: t.TempDir()}
		// The schema is created by the first node; the others start after
		// it (PostgreSQL's advisory lock makes it safe anyway).
		if i == 0 {
			startNode(t, pg, nodes[0])
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); startNode(t, pg, nodes[i]) }()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("three nodes up in %v", time.Since(start).Round(time.Millisecond))

	t.Run("session-across-nodes", func(t *testing.T) { testSessionAcrossNodes(t, nodes) })
	t.Run("conformance", func(t *testing.T) {
		storetest.Run(t, storetest.Harness{Name: "xtdb-cluster-node2", New: func(t *testing.T) store.Store { return openNode(t, nodes[1]) }})
	})
	t.Run("differential", func(t *testing.T) {
		storetest.Differential(t, func(t *testing.T) (store.Store, store.Store) {
			sq, err := bitemporal.Open(ctx, ":memory:", bitemporal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sq.Close() })
			return sq, openNode(t, nodes[2])
		}, storetest.DiffConfig{Seed: 19, Txs: 120, Entities: 20, BasisPoints: 60})
	})
	t.Run("versionlog-sync", func(t *testing.T) { testClusterVersionLog(t, nodes) })
	t.Run("kill-9", func(t *testing.T) { testKillNode(t, pg, nodes) })
	t.Run("postgres-restart", func(t *testing.T) { testPostgresRestart(t, pg, nodes) })
	t.Run("fourth-node", func(t *testing.T) { testFourthNode(t, pg, nodes) })
}

// testSessionAcrossNodes: a session written through a ctxstore serve in
// front of node 1 is read, after await-tx on node 2, through a serve in
// front of node 2 with the same context, and continued there; node 1's
// serve then sees the continuation.
func testSessionAcrossNodes(t *testing.T, nodes []*clusterNode) {
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "a.txt"), []byte("alpha one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s1 := startServe(t, nodes[0].url(), "--no-track")
	s2 := startServe(t, nodes[1].url(), "--no-track")
	sid := fmt.Sprintf("cluster-%d", time.Now().UnixNano())
	open := func(s *serveProc) map[string]any {
		var out map[string]any
		clusterCall(t, s.url, http.MethodPut, "/v1/sessions/"+sid, map[string]any{"cwd": work, "system_prompt": "You help."}, &out)
		return out
	}
	contextCall := func(s *serveProc, log []conversation.Message) string {
		var out struct {
			Assembled json.RawMessage `json:"assembled"`
			Call      int             `json:"call"`
		}
		clusterCall(t, s.url, http.MethodPost, "/v1/sessions/"+sid+"/context", map[string]any{"log": log}, &out)
		return string(out.Assembled)
	}
	if st := open(s1)["state"]; st != "created" {
		t.Fatalf("open on node 1: %v", st)
	}
	log := []conversation.Message{
		{Role: conversation.RoleUser, Text: "read a.txt"},
		{Role: conversation.RoleAssistant, ToolCalls: []conversation.ToolCall{{ID: "c1", Name: "read", Args: map[string]any{"path": "a.txt"}}}},
		{Role: conversation.RoleToolResult, ToolCallID: "c1", ToolName: "read", Output: "alpha one\n"},
	}
	c1 := contextCall(s1, log)
	if !strings.Contains(c1, "alpha one") {
		t.Fatalf("call 1 on node 1 lacks the file: %s", tail(c1, 500))
	}
	clusterCall(t, s1.url, http.MethodPost, "/v1/sessions/"+sid+"/close", map[string]any{}, nil)

	// Node 2 indexes what node 1 logged.
	n1, n2 := openNode(t, nodes[0]), openNode(t, nodes[1])
	if _, err := n2.AwaitTx(context.Background(), latest(t, n1), 30*time.Second); err != nil {
		t.Fatalf("await-tx on node 2: %v", err)
	}
	if st := open(s2)["state"]; st != "resumed" {
		t.Fatalf("open on node 2: %v, want resumed", st)
	}
	c1again := contextCall(s2, log)
	if c1again != c1 {
		t.Fatalf("node 2 assembles another context for the same log:\n%s\nvs\n%s", tail(c1again, 300), tail(c1, 300))
	}
	log = append(log, conversation.Message{Role: conversation.RoleAssistant, Text: "It says alpha one."},
		conversation.Message{Role: conversation.RoleUser, Text: "thanks"})
	c2 := contextCall(s2, log)
	if !strings.Contains(c2, "It says alpha one.") || !strings.HasPrefix(strings.TrimSuffix(c2, "]"), strings.TrimSuffix(c1, "]")) {
		t.Fatalf("node 2's continuation does not extend the context:\n%s", tail(c2, 500))
	}
	clusterCall(t, s2.url, http.MethodPost, "/v1/sessions/"+sid+"/close", map[string]any{}, nil)
	if _, err := n1.AwaitTx(context.Background(), latest(t, n2), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := open(s1); got["state"] != "resumed" || got["calls"] != float64(3) {
		t.Fatalf("node 1 after node 2's continuation: %v, want resumed with 3 calls", got)
	}
	if c2again := contextCall(s1, log); c2again != c2 {
		t.Fatal("node 1 assembles another context than node 2 for the continued log")
	}
}

// clusterCall sends a JSON request to a ctxstore serve and decodes a 2xx
// answer into out.
func clusterCall(t *testing.T, base, method, path string, body, out any) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, base+path, strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&raw)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
}

// sampleOps makes n small transactions over a few entities under prefix.
func sampleOps(prefix string, n int) [][]store.Op {
	var out [][]store.Op
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s%d", prefix, i%7)
		ops := []store.Op{store.Put(store.Doc{"xt/id": id, "i": i, "s": strings.Repeat("x", i%5)})}
		if i%5 == 4 {
			ops = append(ops, store.Delete(fmt.Sprintf("%s%d", prefix, (i+3)%7)))
		}
		out = append(out, ops)
	}
	return out
}

// testClusterVersionLog: the version log syncs an embedded SQLite store
// into the cluster (through node 1) and back out of it (through node 3)
// into a new SQLite store, which then holds the same documents.
func testClusterVersionLog(t *testing.T, nodes []*clusterNode) {
	ctx := context.Background()
	dir := t.TempDir()
	src, err := bitemporal.Open(ctx, filepath.Join(dir, "src.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	prefix := fmt.Sprintf("vl-%d-", time.Now().UnixNano())
	for _, ops := range sampleOps(prefix, 40) {
		if _, err := store.SubmitWait(ctx, src, ops); err != nil {
			t.Fatal(err)
		}
	}
	n1, n3 := openNode(t, nodes[0]), openNode(t, nodes[2])
	if _, err := versionlog.Sync(ctx, src, n1, versionlog.SyncOptions{}); err != nil {
		t.Fatalf("SQLite -> cluster: %v", err)
	}
	if _, err := n3.AwaitTx(ctx, latest(t, n1), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	back, err := bitemporal.Open(ctx, filepath.Join(dir, "back.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if _, err := versionlog.Sync(ctx, n3, back, versionlog.SyncOptions{}); err != nil {
		t.Fatalf("cluster -> SQLite: %v", err)
	}
	for i := 0; i < 7; i++ {
		id := fmt.Sprintf("%s%d", prefix, i)
		want, werr := src.Entity(ctx, id, store.Basis{})
		for name, s := range map[string]store.Store{"node 3": n3, "SQLite back": back} {
			got, gerr := s.Entity(ctx, id, store.Basis{})
			if (werr == nil) != (gerr == nil) || (werr == nil && !store.SameDoc(got, want)) {
				t.Errorf("%s: %s = %v (%v), source has %v (%v)", name, id, got, gerr, want, werr)
			}
		}
		hs, _ := src.History(ctx, id, store.HistoryOptions{Order: store.Asc})
		hb, _ := back.History(ctx, id, store.HistoryOptions{Order: store.Asc})
		if len(hs) != len(hb) {
			t.Errorf("%s: %d history points in the source, %d after the round trip", id, len(hs), len(hb))
		}
	}
	// Again: nothing new to apply.
	sum, err := versionlog.Sync(ctx, src, n1, versionlog.SyncOptions{})
	if err != nil || sum.Import.Applied != 0 {
		t.Errorf("second sync: %+v, %v", sum.Import, err)
	}
}

// writer submits transactions one after another through s until stopped,
// keeping every acknowledged (returned) tx.
type writer struct {
	acked  []store.Tx
	ids    []string
	errs   []error
	mu     sync.Mutex
	stop   atomic.Bool
	done   chan struct{}
	failed atomic.Int64
}

func startWriter(s store.Store, prefix string) *writer {
	w := &writer{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; !w.stop.Load(); i++ {
			id := fmt.Sprintf("%s%d", prefix, i)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			tx, err := s.Submit(ctx, []store.Op{store.Put(store.Doc{"xt/id": id, "i": i})})
			cancel()
			w.mu.Lock()
			if err == nil {
				w.acked = append(w.acked, tx)
				w.ids = append(w.ids, id)
			} else {
				w.failed.Add(1)
				if len(w.errs) < 5 {
					w.errs = append(w.errs, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func (w *writer) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for w.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the writer acknowledged %d txs in 60 s, want %d (errors: %v)", w.count(), n, w.errs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *writer) finish() {
	w.stop.Store(true)
	<-w.done
}

// checkAcked: every acknowledged write is on node s.
func checkAcked(t *testing.T, name string, s store.Store, w *writer) {
	t.Helper()
	ctx := context.Background()
	last := w.acked[len(w.acked)-1]
	if _, err := s.AwaitTx(ctx, last.ID, 60*time.Second); err != nil {
		t.Fatalf("%s: await-tx %d: %v", name, last.ID, err)
	}
	for i, id := range w.ids {
		doc, err := s.Entity(ctx, id, store.Basis{})
		if err != nil {
			t.Errorf("%s: acknowledged write %d (%s, tx %d) is lost: %v", name, i, id, w.acked[i].ID, err)
			continue
		}
		et, err := s.EntityTx(ctx, id, store.Basis{})
		if err != nil || et.TxID != w.acked[i].ID {
			t.Errorf("%s: %s written in tx %d, node says %+v %v (doc %v)", name, id, w.acked[i].ID, et, err, doc)
		}
	}
}

// testKillNode: node 1 is killed with SIGKILL while a writer submits
// through it; every acknowledged transaction is on node 2; node 1,
// restarted on its index, catches up from the log and answers the same.
func testKillNode(t *testing.T, pg *xtdbtest.Postgres, nodes []*clusterNode) {
	n1 := openNode(t, nodes[0])
	w := startWriter(n1, fmt.Sprintf("kill-%d-", time.Now().UnixNano()))
	w.waitFor(t, 20)
	if err := nodes[0].srv.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	w.finish()
	if w.failed.Load() == 0 {
		t.Error("no write failed after the kill")
	}
	for _, err := range w.errs {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("a write to the killed node failed with %v, want ErrUnavailable", err)
		}
	}
	t.Logf("%d writes acknowledged before the kill, %d failed after it", len(w.acked), w.failed.Load())
	n2 := openNode(t, nodes[1])
	checkAcked(t, "node 2", n2, w)

	// Writes go on through node 2 while node 1 is down.
	more := startWriter(n2, fmt.Sprintf("down-%d-", time.Now().UnixNano()))
	more.waitFor(t, 10)
	more.finish()

	start := time.Now()
	startNode(t, pg, nodes[0])
	n1 = openNode(t, nodes[0])
	checkAcked(t, "node 1 restarted", n1, w)
	checkAcked(t, "node 1 restarted", n1, more)
	t.Logf("node 1 restarted and caught up in %v", time.Since(start).Round(time.Millisecond))
}

// testPostgresRestart: PostgreSQL is restarted while a writer submits
// through node 2: writes during the outage fail with a clear error
// (ErrUnavailable naming the failure), none acknowledged is lost, and
// writes succeed again once it is back.
func testPostgresRestart(t *testing.T, pg *xtdbtest.Postgres, nodes []*clusterNode) {
	ctx := context.Background()
	n2 := openNode(t, nodes[1])
	w := startWriter(n2, fmt.Sprintf("pg-%d-", time.Now().UnixNano()))
	w.waitFor(t, 10)
	before := w.count()
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, before+20) // writes succeed again
	w.finish()
	t.Logf("%d writes acknowledged, %d failed around the restart; errors: %v", len(w.acked), w.failed.Load(), w.errs)
	for _, err := range w.errs {
		if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "XTDB") {
			t.Errorf("a write during the restart failed with %v, want a clear ErrUnavailable", err)
		}
	}
	checkAcked(t, "node 2", n2, w)
	checkAcked(t, "node 3", openNode(t, nodes[2]), w)
	// Reads and the tx log work as before.
	if _, err := n2.TxLog(ctx, w.acked[0].ID-1, 5); err != nil {
		t.Errorf("tx log after the restart: %v", err)
	}
}

// testFourthNode: a node added to the cluster later builds its index from
// the log and then answers as the others.
func testFourthNode(t *testing.T, pg *xtdbtest.Postgres, nodes []*clusterNode) {
	ctx := context.Background()
	n2 := openNode(t, nodes[1])
	last := latest(t, n2)
	logged, err := n2.TxLog(ctx, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	fourth := &clusterNode{name: "node4", dataDir: t.TempDir()}
	startNode(t, pg, fourth)
	n4 := openNode(t, fourth)
	if _, err := n4.AwaitTx(ctx, last, 2*time.Minute); err != nil {
		t.Fatalf("node 4 catching up to tx %d: %v", last, err)
	}
	t.Logf("node 4 started and indexed %d transactions in %v", len(logged), time.Since(start).Round(time.Millisecond))
	ids := map[string]bool{}
	// Entities put back after an eviction with the same document: XTDB
	// applies an eviction to the shared document store again when a node
	// indexes it; ctxstore's document store keeps the document put back
	// (jvm/clj/ctxstore/xtdb_docs.clj), and they are compared like the rest.
	evicted, reput := map[string]bool{}, map[string]bool{}
	for _, lt := range logged {
		for _, op := range lt.Ops {
			if op.ID != "" && !strings.HasPrefix(op.ID, xtdb.UnknownIDPrefix) {
				ids[op.ID] = true
			}
			switch {
			case op.Kind == store.OpEvict:
				evicted[op.ID] = true
			case op.Kind == store.OpPut && evicted[op.ID]:
				reput[op.ID] = true
			}
		}
	}
	if len(reput) == 0 {
		t.Error("no entity was put back after an eviction: the log lacks the case")
	}
	if len(ids) < 50 {
		t.Fatalf("only %d ids in the log", len(ids))
	}
	b := store.Basis{TxID: &last}
	checked := 0
	order := make([]string, 0, len(ids))
	for id := range reput {
		order = append(order, id)
	}
	for id := range ids {
		if !reput[id] {
			order = append(order, id)
		}
	}
	for _, id := range order {
		if len(id) > store.MaxIDBytes {
			continue
		}
		for name, f := range map[string]func(s store.Store) (any, error){
			"entity":    func(s store.Store) (any, error) { return s.Entity(ctx, id, b) },
			"entity-tx": func(s store.Store) (any, error) { return s.EntityTx(ctx, id, b) },
			"history": func(s store.Store) (any, error) {
				return s.History(ctx, id, store.HistoryOptions{Order: store.Asc, WithCorrections: true, WithDocs: true, Basis: b})
			},
		} {
			want, werr := f(n2)
			got, gerr := f(n4)
			if fmt.Sprint(want, werr) != fmt.Sprint(got, gerr) {
				t.Errorf("%s of %s: node 4 answers %v %v, node 2 %v %v", name, id, got, gerr, want, werr)
			}
		}
		if checked++; checked >= 300 {
			break
		}
	}
	log4, err := n4.TxLog(ctx, -1, 0)
	if err != nil || len(log4) != len(logged) {
		t.Errorf("node 4's tx log: %d txs (%v), node 2's %d", len(log4), err, len(logged))
	}
}
