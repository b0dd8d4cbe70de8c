package tests

import (
	"bytes"
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
)

// BenchmarkPostgresServe measures context calls per second with 1, 8 and
// 32 concurrent sessions spread over 1, 2 and 4 `ctxstore serve`
// processes on one PostgreSQL database (docs/benchmarks.md). Each session
// stays on one server and makes CTXSTORE_BENCH_CALLS calls (default 10),
// each adding a turn (an answer and a prompt) to its log, as a harness
// does; calls/s is all the sessions' calls over the wall time, p50 and p99
// the calls' latencies. The servers, the database and the clients share
// the machine.
func BenchmarkPostgresServe(b *testing.B) {
	calls := 10
	if v := os.Getenv("CTXSTORE_BENCH_CALLS"); v != "" {
		fmt.Sscan(v, &calls)
	}
	pg := pgtest.ForTest(b)
	url := pg.Schema(b)
	work := b.TempDir()
	if err := os.WriteFile(filepath.Join(work, "a.txt"), []byte("alpha one\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	servers := make([]*serveProc, 4)
	for i := range servers {
		servers[i] = startServe(b, url, "--no-track", "--log-level", "warn")
	}
	client := &http.Client{Timeout: time.Minute}
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
