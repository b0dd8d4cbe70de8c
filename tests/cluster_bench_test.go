package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/server/httpapi"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/xtdb"
	"github.com/ctxstore/ctxstore/xtdb/xtdbserver"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// BenchmarkXTDBAgents drives 1, 4 and 16 synthetic agents, each a session
// making context calls through the real service (ctxstore's HTTP API, in
// process, over loopback TCP), against one XTDB node (RocksDB) and against
// a three-node cluster on one PostgreSQL log (agent i uses the service in
// front of node i mod 3). A call appends a turn to the session's log (a
// user prompt, a bash call and its ~1 KiB output) and asks for the
// context; every session is cut after 30 calls and a new one started, so
// the log size stays in the range real agents have between compactions.
// It reports calls/s (all agents together) and the p50/p99 latency of one
// call. With XTDB_BENCH_POLL10=1 a second cluster polls the log every
// 10 ms instead of XTDB's 100 ms (--log-poll). Everything (PostgreSQL, four JVMs) starts once, before the first
// sub-benchmark:
//
//	go test -run '^$' -bench XTDBAgents -benchtime 300x ./tests/
func BenchmarkXTDBAgents(b *testing.B) {
	ctx := context.Background()
	pg, err := xtdbtest.StartPostgres(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pg.Stop() })
	start := func(o xtdbserver.Options) *xtdbserver.Server {
		o.JVMArgs = append([]string{"-Xmx1g"}, xtdbserver.DefaultJVMArgs[1:]...)
		s, err := xtdbserver.Start(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Stop() })
		return s
	}
	single := start(xtdbserver.Options{DataDir: b.TempDir()})
	var cluster, slow []*xtdbserver.Server
	for range 3 {
		cluster = append(cluster, start(xtdbserver.Options{DataDir: b.TempDir(), Postgres: pg.Options()}))
	}
	if os.Getenv("XTDB_BENCH_POLL10") != "" {
		// The same cluster polling the log every 10 ms (default: 100 ms).
		pg100 := pg.Options()
		pg100.Poll = 10 * time.Millisecond
		for range 3 {
			slow = append(slow, start(xtdbserver.Options{DataDir: b.TempDir(), Postgres: pg100}))
		}
	}
	services := func(nodes []*xtdbserver.Server) []string {
		var urls []string
		for _, n := range nodes {
			st, err := xtdb.Open(ctx, n.URL(), xtdb.Options{})
			if err != nil {
				b.Fatal(err)
			}
			res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-bench"})
			if err != nil {
				b.Fatal(err)
			}
			srv, err := httpapi.New(httpapi.Options{Store: st, Resolver: res, Roots: []string{os.TempDir()}})
			if err != nil {
				b.Fatal(err)
			}
			ts := httptest.NewServer(srv.Handler())
			b.Cleanup(func() { ts.Close(); srv.Close(); st.Close() })
			urls = append(urls, ts.URL)
		}
		return urls
	}
	targets := map[string][]string{"single": services([]*xtdbserver.Server{single}), "cluster3": services(cluster)}
	topos := []string{"single", "cluster3"}
	if slow != nil {
		targets["cluster3-poll10ms"] = services(slow)
		topos = append(topos, "cluster3-poll10ms")
	}
	work := b.TempDir()
	for _, topo := range topos {
		for _, agents := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/agents=%d", topo, agents), func(b *testing.B) {
				benchAgents(b, targets[topo], agents, work)
			})
		}
	}
	// Catch-up: a new node indexes the whole log. b.N is ignored: the log
	// gets catchUpTxs more small transactions (16 writers through the
	// three nodes) and a fourth node is timed from its start until it has
	// indexed the latest; its JVM start is timed apart, on an empty log.
	b.Run("catch-up", func(b *testing.B) {
		benchCatchUp(b, pg, cluster)
	})
}

// catchUpTxs is how many transactions the catch-up run adds to the log.
var catchUpTxs = 10000

func benchCatchUp(b *testing.B, pg *xtdbtest.Postgres, cluster []*xtdbserver.Server) {
	ctx := context.Background()
	b.StopTimer()
	var stores []*xtdb.Store
	for _, n := range cluster {
		st, err := xtdb.Open(ctx, n.URL(), xtdb.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		stores = append(stores, st)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	t0 := time.Now()
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := stores[w%len(stores)]
			for i := next.Add(1); i <= int64(catchUpTxs); i = next.Add(1) {
				id := fmt.Sprintf("cu-%d-%d", os.Getpid(), i%5000)
				if _, err := st.Submit(ctx, []store.Op{store.Put(store.Doc{"xt/id": id, "i": i, "pad": "0123456789abcdef"})}); err != nil {
					firstErr.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatal(err)
	}
	write := time.Since(t0)
	st0, err := stores[0].Status(ctx)
	if err != nil || st0.LatestSubmitted == nil {
		b.Fatal(err)
	}
	last := st0.LatestSubmitted.ID
	total, err := countLog(ctx, stores[0])
	if err != nil {
		b.Fatal(err)
	}
	o := xtdbserver.Options{DataDir: b.TempDir(), Postgres: pg.Options(), JVMArgs: append([]string{"-Xmx1g"}, xtdbserver.DefaultJVMArgs[1:]...)}
	b.StartTimer()
	t1 := time.Now()
	n4, err := xtdbserver.Start(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	defer n4.Stop()
	started := time.Since(t1)
	st4, err := xtdb.Open(ctx, n4.URL(), xtdb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st4.Close()
	if _, err := st4.AwaitTx(ctx, last, 30*time.Minute); err != nil {
		b.Fatal(err)
	}
	catchUp := time.Since(t1)
	b.StopTimer()
	b.ReportMetric(float64(total), "txs")
	b.ReportMetric(float64(catchUpTxs)/write.Seconds(), "write-tx/s")
	b.ReportMetric(started.Seconds(), "start-s")
	b.ReportMetric(catchUp.Seconds(), "catch-up-s")
	b.ReportMetric((catchUp-started).Seconds()/float64(total)*1e6, "s/Mtx")
}

// countLog counts the transactions of the log, a page at a time.
func countLog(ctx context.Context, s *xtdb.Store) (int, error) {
	n, after := 0, int64(-1)
	for {
		page, err := s.TxLog(ctx, after, 1000)
		if err != nil {
			return n, err
		}
		if len(page) == 0 {
			return n, nil
		}
		n += len(page)
		after = page[len(page)-1].ID
	}
}

var benchSession atomic.Int64

func benchAgents(b *testing.B, urls []string, agents int, work string) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	post := func(method, url string, body any) error {
		data, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, url, bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, buf.String())
		}
		return nil
	}
	out := strings.Repeat("some output of the build that takes a line of room\n", 20)
	var (
		next      atomic.Int64
		mu        sync.Mutex
		latencies []time.Duration
		firstErr  error
		wg        sync.WaitGroup
	)
	b.ResetTimer()
	begin := time.Now()
	for a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := urls[a%len(urls)]
			var sid string
			var log []conversation.Message
			calls := 0
			for next.Add(1) <= int64(b.N) {
				if sid == "" || calls == 30 {
					if sid != "" {
						_ = post(http.MethodPost, base+"/v1/sessions/"+sid+"/close", map[string]any{})
					}
					sid = fmt.Sprintf("bench-%d-%d", os.Getpid(), benchSession.Add(1))
					log, calls = nil, 0
					if err := post(http.MethodPut, base+"/v1/sessions/"+sid, map[string]any{"cwd": work, "system_prompt": "bench"}); err != nil {
						mu.Lock()
						firstErr = err
						mu.Unlock()
						return
					}
				}
				calls++
				id := fmt.Sprintf("%s-c%d", sid, calls)
				log = append(log,
					conversation.Message{Role: conversation.RoleUser, Text: fmt.Sprintf("Turn %d: run the build.", calls)},
					conversation.Message{Role: conversation.RoleAssistant, ToolCalls: []conversation.ToolCall{{ID: id, Name: "bash", Args: map[string]any{"command": "make build"}}}},
					conversation.Message{Role: conversation.RoleToolResult, ToolCallID: id, ToolName: "bash", Output: out})
				t0 := time.Now()
				err := post(http.MethodPost, base+"/v1/sessions/"+sid+"/context", map[string]any{"log": log})
				d := time.Since(t0)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				latencies = append(latencies, d)
				mu.Unlock()
				if err != nil {
					return
				}
			}
			if sid != "" {
				_ = post(http.MethodPost, base+"/v1/sessions/"+sid+"/close", map[string]any{})
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	slices.Sort(latencies)
	q := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "calls/s")
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
