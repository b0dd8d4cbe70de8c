package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal/postgres/pgtest"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/xtdb/xtdbserver"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// BenchmarkServeLoad measures context calls per second with 1, 8 and 32
// concurrent sessions spread over 1, 2 and 4 `ctxstore serve` processes
// sharing one store (docs/benchmarks.md), on two backends in one run:
//
//   - postgres: the four servers on one PostgreSQL database;
//   - xtdb-cluster: four XTDB nodes on one PostgreSQL log (XTDB's default
//     100 ms poll, docs/xtdb-cluster.md), a server in front of each.
//
// Each session stays on one server and makes CTXSTORE_BENCH_CALLS calls
// (default 10), each adding a turn (an answer and a prompt) to its log, as
// a harness does; calls/s is all the sessions' calls over the wall time
// (opening the sessions included), p50 and p99 the calls' latencies. A
// backend is started when its sub-benchmark begins and stopped when it
// ends, so the two never run at once; the servers, the databases, the
// JVMs and the clients share the machine.
func BenchmarkServeLoad(b *testing.B) {
	b.Run("postgres", func(b *testing.B) {
		url := pgtest.ForTest(b).Schema(b)
		servers := make([]*serveProc, 4)
		for i := range servers {
			servers[i] = startServe(b, url, "--no-track", "--log-level", "warn")
		}
		serveLoad(b, servers)
	})
	b.Run("xtdb-cluster", func(b *testing.B) {
		if testing.Short() {
			b.Skip("-short: no JVM")
		}
		ctx := context.Background()
		pg, err := xtdbtest.StartPostgres(ctx)
		if err != nil {
			b.Fatalf("PostgreSQL for the XTDB log: %v", err)
		}
		b.Cleanup(func() { pg.Stop() })
		nodes := make([]*xtdbserver.Server, 4)
		for i := range nodes {
			// One at a time: the first creates the log's table, and four
			// JVMs starting at once on two cores only start slower.
			n, err := xtdbserver.Start(ctx, xtdbserver.Options{DataDir: b.TempDir(), Postgres: pg.Options(), StartTimeout: 5 * time.Minute})
			if err != nil {
				b.Fatalf("XTDB node %d: %v", i+1, err)
			}
			b.Cleanup(func() { n.Stop() })
			nodes[i] = n
		}
		servers := make([]*serveProc, 4)
		for i := range servers {
			servers[i] = startServe(b, nodes[i].URL(), "--no-track", "--log-level", "warn")
		}
		serveLoad(b, servers)
	})
}

// serveLoad runs the sessions × servers grid of BenchmarkServeLoad.
func serveLoad(b *testing.B, servers []*serveProc) {
	calls := 10
	if v := os.Getenv("CTXSTORE_BENCH_CALLS"); v != "" {
		fmt.Sscan(v, &calls)
	}
	work := b.TempDir()
	if err := os.WriteFile(filepath.Join(work, "a.txt"), []byte("alpha one\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Minute}
	post := func(method, u string, body any) error {
		data, _ := json.Marshal(body)
		req, err := http.NewRequest(method, u, bytes.NewReader(data))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: %d %s", method, u, resp.StatusCode, tail(string(answer), 300))
		}
		return nil
	}
	for _, nServers := range []int{1, 2, 4} {
		for _, nSessions := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("servers=%d/sessions=%d", nServers, nSessions), func(b *testing.B) {
				var mu sync.Mutex
				var lat []time.Duration
				var firstErr error
				start := time.Now()
				var wg sync.WaitGroup
				for s := range nSessions {
					wg.Add(1)
					go func() {
						defer wg.Done()
						srv := servers[s%nServers]
						sid := fmt.Sprintf("load-%d-%d-%d-%d", nServers, nSessions, s, time.Now().UnixNano())
						base := srv.url + "/v1/sessions/" + sid
						fail := func(err error) {
							mu.Lock()
							if firstErr == nil {
								firstErr = err
							}
							mu.Unlock()
						}
						if err := post(http.MethodPut, base, map[string]any{"cwd": work, "system_prompt": "You help."}); err != nil {
							fail(err)
							return
						}
						log := []conversation.Message{{Role: conversation.RoleUser, Text: "read a.txt"}}
						for c := range calls {
							t0 := time.Now()
							if err := post(http.MethodPost, base+"/context", map[string]any{"log": log}); err != nil {
								fail(err)
								return
							}
							d := time.Since(t0)
							mu.Lock()
							lat = append(lat, d)
							mu.Unlock()
							log = append(log, conversation.Message{Role: conversation.RoleAssistant, Text: fmt.Sprintf("answer %d", c)},
								conversation.Message{Role: conversation.RoleUser, Text: fmt.Sprintf("question %d", c+1)})
						}
					}()
				}
				wg.Wait()
				wall := time.Since(start)
				if firstErr != nil {
					b.Fatal(firstErr)
				}
				slices.Sort(lat)
				b.ReportMetric(float64(len(lat))/wall.Seconds(), "calls/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
			})
		}
	}
}
