package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// The store's input rules and write safety through the real CLI (issue
// 20: poison numbers, half-applied imports, reserved ids, duplicate keys,
// invalid UTF-8, terminal escapes, durable mode, compare-and-swap,
// concurrent creation). docs/security.md, "Input rules of the store".

// onBackends runs fn once on a new SQLite store and once on the shared
// XTDB test server (a subtest xtdbtest.ForTest skips, or fails with
// CI=true, when no server can be had); pfx makes ids unique on XTDB.
func onBackends(t *testing.T, fn func(t *testing.T, c *cli, st, pfx string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, newCLI(t), "s.db", "sq-") })
	t.Run("xtdb", func(t *testing.T) {
		if testing.Short() {
			t.Skip("XTDB needs a JVM; skipped with -short")
		}
		url := xtdbtest.ForTest(t)
		fn(t, newCLI(t), url, "in"+strconv.FormatInt(time.Now().UnixNano(), 36)+"-")
	})
}

// TestCLIPoisonNumbers: numbers a store cannot hold exactly are refused
// at put with an error naming the id and field, and the store stays
// readable (a put of 1.2345678901234567e19 used to break
// get, query, log and export for ever; 9007199254740993 was rounded).
func TestCLIPoisonNumbers(t *testing.T) {
	onBackends(t, func(t *testing.T, c *cli, st, pfx string) {
		c.ok(fmt.Sprintf(`{"xt/id":"%sok","n":1.5}`, pfx), "--store", st, "put")
		for _, n := range []string{"1.2345678901234567e19", "9007199254740993", "18446744073709551616", "1e400", "0.1000000000000000000001"} {
			id := pfx + "f"
			c.fail(1, fmt.Sprintf(`{"xt/id":"%s","a":{"n":%s}}`, id, n), []string{"--store", st, "put"}, `"a.n"`, id, n)
		}
		c.ok("", "--store", st, "get", pfx+"ok")
		c.fail(1, "", []string{"--store", st, "get", pfx + "f"}, "not found")
		c.ok("", "--store", st, "query", "--where", "xt/id="+pfx+"ok")
		c.ok("", "--json", "--store", st, "log")
		if !strings.HasPrefix(st, "http") {
			c.ok("", "--store", st, "export", "-o", "all.jsonl")
		}
	})
}

// TestCLIImportStdinAllOrNothing: import - checks the whole log before
// applying any of it: a log whose end-line checksum fails changes nothing,
// and the good log imported afterwards is applied, not skipped.
func TestCLIImportStdinAllOrNothing(t *testing.T) {
	c := newCLI(t)
	src, _ := vlSource(t, c.dir, "src.db", "", 12, 3)
	c.ok("", "--store", src, "export", "-o", "log.jsonl")
	good := string(c.read("log.jsonl"))
	bad := strings.Replace(good, `"valid_to":null`, `"valid_to":"2999-01-01T00:00:00.000Z"`, 1)
	if bad == good {
		t.Fatal("no tx line to corrupt")
	}
	c.ok(`{"xt/id":"mine"}`, "--store", "dst.db", "put")
	before := c.ok("", "--json", "--store", "dst.db", "log")
	c.fail(1, bad, []string{"--store", "dst.db", "import", "-"}, "stdin", "checksum mismatch")
	if after := c.ok("", "--json", "--store", "dst.db", "log"); after != before {
		t.Fatalf("import - of a corrupt log changed the target:\n%s\nwas\n%s", after, before)
	}
	var im importOut
	c.jsonOut(&im, good, "--store", "dst.db", "import", "-")
	if im.Applied == 0 || im.Skipped != 0 {
		t.Fatalf("import - of the good log after a refused one: applied %d, skipped %d", im.Applied, im.Skipped)
	}
}

// TestCLIReservedIDs: no user write can touch the version log's reserved
// ids (a put of a sync cursor used to make later imports skip everything).
func TestCLIReservedIDs(t *testing.T) {
	onBackends(t, func(t *testing.T, c *cli, st, pfx string) {
		id := "ctxstore:sync-cursor:" + pfx + "sqlite:/elsewhere.db"
		c.fail(1, `{"xt/id":"`+id+`","source":"x","tx_id":999999}`, []string{"--store", st, "put"}, "reserved", id)
		c.fail(1, "", []string{"--store", st, "delete", id}, "reserved")
		c.fail(1, "", []string{"--store", st, "evict", id}, "reserved")
	})
	c := newCLI(t)
	src, _ := vlSource(t, c.dir, "src.db", "", 5, 4)
	c.ok("", "--store", src, "export", "-o", "log.jsonl")
	var h struct {
		Source struct {
			ID string `json:"id"`
		} `json:"source"`
	}
	first, _, _ := strings.Cut(string(c.read("log.jsonl")), "\n")
	if err := json.Unmarshal([]byte(first), &h); err != nil || h.Source.ID == "" {
		t.Fatalf("header %s: %v", first, err)
	}
	c.fail(1, `{"xt/id":"ctxstore:sync-cursor:`+h.Source.ID+`","source":"`+h.Source.ID+`","tx_id":999999,"tx_time":"2999-01-01T00:00:00.000Z"}`,
		[]string{"--store", "dst.db", "put"}, "reserved")
	var im importOut
	c.jsonOut(&im, "", "--store", "dst.db", "import", "log.jsonl")
	if im.Applied == 0 || im.Skipped != 0 {
		t.Fatalf("import after a refused cursor put: applied %d, skipped %d", im.Applied, im.Skipped)
	}
}

// TestCLIDocumentText: a repeated key (xt/id included) and invalid UTF-8
// are refused, naming the key or the byte offset, instead of keeping the
// last value or writing U+FFFD.
func TestCLIDocumentText(t *testing.T) {
	c := newCLI(t)
	c.fail(1, `{"xt/id":"a","xt/id":"b"}`, []string{"--store", "s.db", "put"}, `duplicate key "xt/id"`, "byte 13")
	c.fail(1, `{"xt/id":"a","o":{"k":1,"k":2}}`, []string{"--store", "s.db", "put"}, `duplicate key "k"`, `"o.k"`)
	c.fail(1, "{\"xt/id\":\"a\",\"s\":\"\xff\"}", []string{"--store", "s.db", "put"}, "invalid UTF-8 at byte 18")
	c.fail(1, "{\"xt/id\":\"a\"}\n{\"xt/id\":\"b\",\"xt/id\":\"c\"}\n", []string{"--store", "s.db", "put", "--lines"}, "stdin:2:", "duplicate")
	c.fail(1, "", []string{"--store", "s.db", "get", "a"}, "no store")
}

// TestCLIEscapesTerminalControls: log and query text output shows control
// characters escaped, never raw; --json keeps the exact strings. Ids may
// not hold C0 or C1 controls (put refuses them), but may hold a
// direction override; values hold anything.
func TestCLIEscapesTerminalControls(t *testing.T) {
	c := newCLI(t)
	id := "evil\u202e"
	doc, _ := json.Marshal(map[string]any{"xt/id": id, "t": "x\u001b]0;pwned\u0007\u009b2J\u001b[2Jy\ttab"})
	c.ok(string(doc), "--store", "s.db", "put")
	for _, args := range [][]string{{"log"}, {"query", "--find", "t"}, {"query"}, {"get", id}, {"history", id}} {
		out := c.ok("", append([]string{"--store", "s.db"}, args...)...)
		for _, raw := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
			if strings.Contains(out, raw) {
				t.Errorf("ctxstore %s printed %q raw:\n%q", args[0], raw, out)
			}
		}
		if args[0] == "log" && !strings.Contains(out, `\u202e`) {
			t.Errorf("ctxstore log does not show the override as \\u202e:\n%q", out)
		}
	}
	var got []map[string]any
	c.jsonOut(&got, "", "--store", "s.db", "query")
	if len(got) != 1 || got[0]["xt/id"] != id || got[0]["t"] != "x\u001b]0;pwned\u0007\u009b2J\u001b[2Jy\ttab" {
		t.Errorf("query --json = %q, want the exact strings", got)
	}
}

// TestCLIDurable: --durable and CTXSTORE_DURABLE open SQLite with
// synchronous=FULL (status shows it).
func TestCLIDurable(t *testing.T) {
	c := newCLI(t)
	c.ok(`{"xt/id":"a"}`, "--store", "s.db", "put")
	durable := func(env string, args ...string) int64 {
		t.Helper()
		var st struct {
			Detail map[string]int64 `json:"detail"`
		}
		saved := c.env
		if env != "" {
			c.env = append(append([]string{}, c.env...), env)
		}
		c.jsonOut(&st, "", append(args, "--store", "s.db", "status")...)
		c.env = saved
		return st.Detail["durable"]
	}
	if d := durable(""); d != 0 {
		t.Errorf("status without --durable: durable %d, want 0", d)
	}
	if d := durable("", "--durable"); d != 1 {
		t.Errorf("status --durable: durable %d, want 1", d)
	}
	if d := durable("CTXSTORE_DURABLE=1"); d != 1 {
		t.Errorf("CTXSTORE_DURABLE=1 status: durable %d, want 1", d)
	}
	c.ok(`{"xt/id":"b"}`, "--durable", "--store", "s.db", "put")
}

// TestCLIPutIfMatch: put --if-match is a compare-and-swap: it writes only
// over the version named (a content hash, or absent), else exits 3 with a
// conflict and writes nothing.
func TestCLIPutIfMatch(t *testing.T) {
	onBackends(t, func(t *testing.T, c *cli, st, pfx string) {
		id := pfx + "cas"
		put := func(v int, ifMatch string) result {
			return c.run(fmt.Sprintf(`{"xt/id":"%s","v":%d}`, id, v), "--store", st, "put", "--if-match", ifMatch)
		}
		if r := put(1, "absent"); r.code != 0 {
			t.Fatalf("put --if-match absent of a new id: exit %d: %s", r.code, r.stderr)
		}
		c.fail(3, fmt.Sprintf(`{"xt/id":"%s","v":2}`, id), []string{"--store", st, "put", "--if-match", "absent"}, "conflict", id)
		var hist []struct {
			ContentHash string `json:"content_hash"`
		}
		c.jsonOut(&hist, "", "--store", st, "history", id)
		if len(hist) != 1 || hist[0].ContentHash == "" {
			t.Fatalf("history: %+v", hist)
		}
		h1 := hist[0].ContentHash
		if r := put(2, h1); r.code != 0 {
			t.Fatalf("put --if-match the current hash: exit %d: %s", r.code, r.stderr)
		}
		c.fail(3, fmt.Sprintf(`{"xt/id":"%s","v":3}`, id), []string{"--store", st, "put", "--if-match", h1}, "conflict", "nothing was written")
		var doc map[string]any
		c.jsonOut(&doc, "", "--store", st, "get", id)
		if fmt.Sprint(doc["v"]) != "2" {
			t.Errorf("after a refused --if-match the document is %v, want v 2", doc)
		}
		c.fail(2, "{}\n", []string{"--store", st, "put", "--lines", "--if-match", "absent"}, "--if-match")
	})
}

// TestCLIConcurrentCreate: eight processes writing to one store that does
// not exist yet all succeed (45 of 160 used to fail).
func TestCLIConcurrentCreate(t *testing.T) {
	c := newCLI(t)
	for round := range 4 {
		st := c.path(fmt.Sprintf("new-%d.db", round))
		var wg sync.WaitGroup
		errs := make([]string, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(ctxstoreBin, "--store", st, "put")
				cmd.Env = c.env
				cmd.Stdin = strings.NewReader(fmt.Sprintf(`{"xt/id":"p%d"}`, i))
				var errb bytes.Buffer
				cmd.Stderr = &errb
				if err := cmd.Run(); err != nil {
					errs[i] = fmt.Sprintf("%v: %s", err, errb.String())
				}
			}()
		}
		wg.Wait()
		for i, e := range errs {
			if e != "" {
				t.Errorf("round %d process %d: %s", round, i, e)
			}
		}
		var q []map[string]any
		c.jsonOut(&q, "", "--store", st, "query")
		if len(q) != 8 {
			t.Errorf("round %d: %d documents, want 8", round, len(q))
		}
	}
}
