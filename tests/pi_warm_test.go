package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPiCacheWarm: Pi keeps a prompt's cache entry warm by sending the
// same request again with a one-token output cap before the entry expires,
// while the agent runs and, by default since Pi 1.5.1 ("cacheWarming":
// "idle"), while it waits for the user. Under ctxstore each warm request
// must be the request it keeps warm, byte for byte but for max_tokens: the
// same tools (the bare head withholds ctxstore's management tools), the
// same breakpoints; a different one would write a second entry at the
// write price instead of reading the first. Warming is decided once: while
// the tool runs ctxstore decides (ski rental): it warms where Pi's own rule
// would not (its $0.05 floor on the expected saving, far above what a warm
// of this small prompt saves), and stops once the pause's warms would cost
// more than the rewrite they save: at this model's prices, two per pause
// (tests/testdata/pi/scripted-model.ts). Once the turn has finished, Pi's
// own decision stands, so no warm request follows a finished turn (with
// ctxstore's bound there, two did). A warm request is not a model call to
// ctxstore, but the next call tells it of the renewal (cache_renewed_at):
// with the service's cache lifetime at 4 s, the call after the 5-second
// tool run finds the cache warm, not cold, in the service's log.
func TestPiCacheWarm(t *testing.T) {
	t.Parallel()
	e := newPiEnv(t)
	e.env = append(e.env, "CTXSTORE_HEAD=") // the default, bare: tools withheld
	e.model = "scripted-warm"               // priced, a 12-second cache: a warm every 2 s
	srv := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"), "--cache-ttl", "4s")
	var mu sync.Mutex
	var kinds []string // "real" or "warm", in the order the model saw them
	e.respond = func(req messagesRequest) piStep {
		mu.Lock()
		defer mu.Unlock()
		if req.MaxTokens == 1 {
			kinds = append(kinds, "warm")
			return piStep{Text: "."}
		}
		kinds = append(kinds, "real")
		b, _ := json.Marshal(req.Messages)
		if !strings.Contains(string(b), `"tool_result"`) {
			return piStep{Tool: "bash", Args: map[string]any{"command": "sleep 5; echo slept"}, ID: "call_1"}
		}
		return piStep{Text: "Done."}
	}
	pi := startPi(t, e, srv.pxURL, nil)
	pi.prompt("Wait for the build.")
	time.Sleep(6 * time.Second) // idle under Pi's default: Pi's rule sends nothing at 2 s and 4 s
	// The next turn begins 6 s after the last request, past the service's
	// 4 s cache: a cold start, from which the head is cached for the hour.
	pi.prompt("Is it done?")
	time.Sleep(3 * time.Second)
	pi.quit()
	calls, _, _, _ := srv.contextCalls()
	srv.Stop()

	b, err := os.ReadFile(e.ctxLog)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != len(kinds) {
		t.Fatalf("%d requests logged, %d answered", len(lines), len(kinds))
	}
	if calls != 3 {
		t.Errorf("ctxstore answered %d context calls, want 3 (warm requests are not calls)", calls)
	}
	// Each warm request against the last real one before it.
	var last map[string]any
	reals, running, idle, afterCold := 0, 0, 0, 0
	for i, line := range lines {
		var req map[string]any
		if err := json.Unmarshal(line, &req); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if kinds[i] == "real" {
			last = req
			reals++
			continue
		}
		if last == nil {
			t.Fatalf("request %d is a warm request before any real one", i)
		}
		switch reals {
		case 1:
			running++
		case 2:
			idle++
		default:
			afterCold++
		}
		delete(req, "max_tokens")
		want := map[string]any{}
		for k, v := range last {
			want[k] = v
		}
		delete(want, "max_tokens")
		got, _ := json.Marshal(req)
		exp, _ := json.Marshal(want)
		if !bytes.Equal(got, exp) {
			t.Errorf("warm request %d is not the request it keeps warm:\n got %.600s\nwant %.600s", i, got, exp)
		}
		if strings.Contains(string(got), `"name":"activate"`) {
			t.Errorf("warm request %d offers the withheld activate tool", i)
		}
		if !strings.Contains(string(got), `"cache_control"`) {
			t.Errorf("warm request %d has no breakpoint", i)
		}
	}
	if reals != 3 {
		t.Errorf("%d real requests, want 3", reals)
	}
	// The service's log line of call 2: a share of it served warm.
	m := regexp.MustCompile(`msg="context call".* call=2 .*cached_share=([0-9.]+)`).FindStringSubmatch(srv.stderr.String())
	if m == nil {
		t.Fatalf("no log line for call 2:\n%s", srv.stderr)
	}
	if share, _ := strconv.ParseFloat(m[1], 64); share <= 0 {
		t.Errorf("call 2 after the warmed tool run: cached share %s, want > 0 (the renewal was not counted)", m[1])
	}
	if running == 0 || running > 2 || idle != 0 || afterCold != 0 {
		t.Errorf("warm requests: %d while the tool ran, %d after the first turn finished, %d after the second; want 1 or 2, 0 and 0 (requests: %v)", running, idle, afterCold, kinds)
	}
	// Call 3 began cold and asked for the head's hour.
	if !regexp.MustCompile(`msg="context call".* call=3 .*head_ttl_s=3600`).MatchString(srv.stderr.String()) {
		t.Errorf("call 3 did not ask for the head's hour:\n%s", srv.stderr)
	}
}
