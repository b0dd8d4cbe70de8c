package tests

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// txLine is the human output of a write.
var txLine = regexp.MustCompile(`^tx (\d+) at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)\n$`)

// writeOut is the --json output of put, delete and evict.
type writeOut struct {
	TxID   int64    `json:"tx_id"`
	TxTime string   `json:"tx_time"`
	IDs    []string `json:"ids"`
}

type historyRow struct {
	ValidTime   string         `json:"valid_time"`
	TxID        int64          `json:"tx_id"`
	TxTime      string         `json:"tx_time"`
	Deleted     bool           `json:"deleted"`
	ContentHash *string        `json:"content_hash"`
	Doc         map[string]any `json:"doc"`
}

type logTx struct {
	TxID   int64  `json:"tx_id"`
	TxTime string `json:"tx_time"`
	Ops    []struct {
		Op        string         `json:"op"`
		ID        string         `json:"id"`
		ValidFrom *string        `json:"valid_from"`
		ValidTo   *string        `json:"valid_to"`
		Doc       map[string]any `json:"doc"`
	} `json:"ops"`
}

// decodeJSON decodes s (numbers as json.Number) or fails the test.
func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	return v
}

func TestCLIRoundTrip(t *testing.T) {
	c := newCLI(t)
	st := "--store=" + c.path("s.db")

	// put: human output, from a file.
	out := c.ok("", st, "put", c.write("ada.json", `{"xt/id": "ada", "name": "Ada", "born": 1815, "knows": ["bob"], "note": "<&>"}`))
	if m := txLine.FindStringSubmatch(out); m == nil || m[1] != "0" {
		t.Fatalf("put output %q, want tx 0 at TIME", out)
	}
	// put --json, from stdin, JSON Lines.
	var w writeOut
	c.jsonOut(&w, "{\"xt/id\":\"bob\",\"name\":\"Bob\",\"born\":1900}\n\n{\"xt/id\":\"cy\",\"name\":\"Cy\",\"born\":1950,\"knows\":[\"ada\",\"bob\"]}\n", st, "put", "--lines", "-")
	if w.TxID != 1 || !reflect.DeepEqual(w.IDs, []string{"bob", "cy"}) || w.TxTime == "" {
		t.Fatalf("put --lines --json = %+v", w)
	}

	// get: pretty JSON, xt/id first; --json: the document on one line.
	out = c.ok("", st, "get", "ada")
	if !strings.HasPrefix(out, "{\n  \"xt/id\": \"ada\",\n") {
		t.Errorf("get output not pretty with xt/id first: %q", out)
	}
	want := decodeJSON(t, `{"xt/id": "ada", "name": "Ada", "born": 1815, "knows": ["bob"], "note": "<&>"}`)
	if got := decodeJSON(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("get ada = %v, want %v", got, want)
	}
	var doc any
	c.jsonOut(&doc, "", st, "get", "ada")
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("get --json ada = %v, want %v", doc, want)
	}

	// A new version of ada, then history.
	c.ok("", st, "put", c.write("ada2.json", `{"xt/id": "ada", "name": "Ada Lovelace", "born": 1815, "knows": ["bob"]}`))
	var hist []historyRow
	c.jsonOut(&hist, "", st, "history", "ada", "--with-docs")
	if len(hist) != 2 || hist[0].TxID != 0 || hist[1].TxID != 2 || hist[1].Doc["name"] != "Ada Lovelace" || hist[0].ContentHash == nil || hist[0].Deleted {
		t.Fatalf("history --json = %+v", hist)
	}
	c.jsonOut(&hist, "", st, "history", "ada", "--desc")
	if len(hist) != 2 || hist[0].TxID != 2 || hist[0].Doc != nil {
		t.Fatalf("history --desc --json = %+v", hist)
	}
	out = c.ok("", st, "history", "ada")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "VALID_TIME") || !strings.Contains(lines[2], (*hist[0].ContentHash)[:12]) {
		t.Errorf("history table:\n%s", out)
	}
	c.jsonOut(&hist, "", st, "history", "nobody")
	if len(hist) != 0 {
		t.Errorf("history of an unknown id = %+v", hist)
	}

	// get at an earlier transaction sees the first version.
	c.jsonOut(&doc, "", st, "get", "ada", "--tx-id", "1")
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("get --tx-id 1 = %v", doc)
	}

	// query with flags.
	var docs []map[string]any
	c.jsonOut(&docs, "", st, "query", "--where", "born>=1815", "--where", "born<1950", "--order", "born:desc")
	if ids := idsOf(docs); !reflect.DeepEqual(ids, []string{"bob", "ada"}) {
		t.Errorf("query born in [1815,1950) desc = %v", ids)
	}
	c.jsonOut(&docs, "", st, "query", "-w", "knows=bob", "--find", "name")
	if !reflect.DeepEqual(docs, []map[string]any{{"xt/id": "ada", "name": "Ada Lovelace"}, {"xt/id": "cy", "name": "Cy"}}) {
		t.Errorf("query knows=bob find name = %v", docs)
	}
	c.jsonOut(&docs, "", st, "query", "-w", "knows@=cy", "--order", "name")
	if ids := idsOf(docs); !reflect.DeepEqual(ids, []string{"ada", "bob"}) {
		t.Errorf("query knows@=cy (ref_by) = %v", ids)
	}
	c.jsonOut(&docs, "", st, "query", "-w", `name=["Bob","Cy"]`, "--limit", "1", "--order", "name:desc")
	if ids := idsOf(docs); !reflect.DeepEqual(ids, []string{"cy"}) {
		t.Errorf("query name in [Bob Cy] limit 1 = %v", ids)
	}
	c.jsonOut(&docs, "", st, "query", "-w", "note?")
	if len(docs) != 0 { // ada's note went with its first version
		t.Errorf("query note? = %v", docs)
	}
	c.jsonOut(&docs, "", st, "query", "-w", "note?", "--tx-id", "0")
	if ids := idsOf(docs); !reflect.DeepEqual(ids, []string{"ada"}) {
		t.Errorf("query note? at tx 0 = %v", ids)
	}
	c.jsonOut(&docs, "", st, "query", "-w", `born="1815"`)
	if len(docs) != 0 {
		t.Errorf(`query born="1815" (a string) = %v`, docs)
	}
	out = c.ok("", st, "query", "-w", "born>1800", "--find", "name,born", "--order", "born")
	if want := "xt/id  name          born\nada    Ada Lovelace  1815\nbob    Bob           1900\ncy     Cy            1950\n"; out != want {
		t.Errorf("query table:\n%s\nwant:\n%s", out, want)
	}
	out = c.ok("", st, "query", "-w", "name=Bob")
	if out != `{"xt/id":"bob","born":1900,"name":"Bob"}`+"\n" {
		t.Errorf("query human whole documents = %q", out)
	}
	// query --file in the store.Query form.
	qf := c.write("q.json", `{"where": [{"field": "born", "op": "gt", "value": 1800}, {"field": "name", "op": "in", "values": ["Ada Lovelace", "Cy"]}], "order_by": [{"field": "born", "desc": true}], "find": ["born"]}`)
	c.jsonOut(&docs, "", st, "query", "--file", qf)
	if !reflect.DeepEqual(docs, []map[string]any{{"xt/id": "cy", "born": json.Number("1950")}, {"xt/id": "ada", "born": json.Number("1815")}}) {
		t.Errorf("query --file = %v", docs)
	}

	// log: human and --json.
	out = c.ok("", st, "log")
	if want := regexp.MustCompile(`^tx 0 at \S+\n  put +ada\ntx 1 at \S+\n  put +bob\n  put +cy\ntx 2 at \S+\n  put +ada\n$`); !want.MatchString(out) {
		t.Errorf("log:\n%s", out)
	}
	var log []logTx
	c.jsonOut(&log, "", st, "log", "--after", "0", "--limit", "1")
	if len(log) != 1 || log[0].TxID != 1 || len(log[0].Ops) != 2 || log[0].Ops[1].Doc["name"] != "Cy" || log[0].Ops[0].Op != "put" {
		t.Errorf("log --after 0 --limit 1 = %+v", log)
	}

	// status: human and --json.
	out = c.ok("", st, "status")
	for _, w := range []string{"backend    sqlite", "location   " + c.path("s.db"), "latest tx  tx 2 at ", "entities   3"} {
		if !strings.Contains(out, w) {
			t.Errorf("status lacks %q:\n%s", w, out)
		}
	}
	var status struct {
		Backend         string `json:"backend"`
		Location        string `json:"location"`
		LatestCompleted *struct {
			TxID   int64  `json:"tx_id"`
			TxTime string `json:"tx_time"`
		} `json:"latest_completed"`
		Detail map[string]int64 `json:"detail"`
	}
	c.jsonOut(&status, "", st, "status")
	if status.Backend != "sqlite" || status.LatestCompleted == nil || status.LatestCompleted.TxID != 2 || status.Detail["entities"] != 3 {
		t.Errorf("status --json = %+v", status)
	}

	// delete, then evict.
	c.jsonOut(&w, "", st, "delete", "bob")
	if w.TxID != 3 || !reflect.DeepEqual(w.IDs, []string{"bob"}) {
		t.Errorf("delete --json = %+v", w)
	}
	c.fail(1, "", []string{st, "get", "bob"}, `"bob" not found`)
	c.jsonOut(&hist, "", st, "history", "bob")
	if len(hist) != 2 || !hist[1].Deleted || hist[1].ContentHash != nil {
		t.Errorf("history after delete = %+v", hist)
	}
	out = c.ok("", st, "evict", "cy")
	if m := txLine.FindStringSubmatch(out); m == nil || m[1] != "4" {
		t.Errorf("evict output %q", out)
	}
	c.jsonOut(&hist, "", st, "history", "cy")
	if len(hist) != 0 {
		t.Errorf("history after evict = %+v", hist)
	}
	c.jsonOut(&log, "", st, "log", "--after", "2")
	if len(log) != 2 || log[0].Ops[0].Op != "delete" || log[1].Ops[0].Op != "evict" || log[1].Ops[0].ID != "cy" {
		t.Errorf("log after delete and evict = %+v", log)
	}
	c.jsonOut(&log, "", st, "log")
	if log[1].Ops[1].ID != "cy" || log[1].Ops[1].Doc != nil {
		t.Errorf("evicted document still in the log: %+v", log[1].Ops[1])
	}
}

func idsOf(docs []map[string]any) []string {
	ids := []string{}
	for _, d := range docs {
		id, _ := d["xt/id"].(string)
		ids = append(ids, id)
	}
	return ids
}

func TestCLIValidTimeRange(t *testing.T) {
	c := newCLI(t)
	st := "--store=sqlite:" + c.path("vt.db")
	c.ok("", st, "put", "--valid-from", "2024-01-01T00:00:00Z", c.write("v1.json", `{"xt/id": "p", "price": 10}`))
	out := c.ok(`{"xt/id": "p", "price": 12}`, st, "put", "--valid-from", "2024-02-01", "--valid-to", "2024-03-01T00:00:00+00:00")
	if m := txLine.FindStringSubmatch(out); m == nil || m[1] != "1" {
		t.Fatalf("ranged put output %q", out)
	}
	price := func(args ...string) string {
		t.Helper()
		var doc map[string]any
		c.jsonOut(&doc, "", append([]string{st, "get", "p"}, args...)...)
		return doc["price"].(json.Number).String()
	}
	for vt, want := range map[string]string{
		"2024-01-15T00:00:00Z":     "10",
		"2024-02-01T00:00:00Z":     "12",
		"2024-02-29T23:59:59.999Z": "12",
		"2024-03-01T00:00:00Z":     "10",
		"2030-01-01T00:00:00Z":     "10",
	} {
		if got := price("--valid-time", vt); got != want {
			t.Errorf("price at %s = %s, want %s", vt, got, want)
		}
	}
	if got := price("--valid-time", "2024-02-15T00:00:00Z", "--tx-id", "0"); got != "10" {
		t.Errorf("price at 2024-02-15 as of tx 0 = %s, want 10", got)
	}
	var log []logTx
	c.jsonOut(&log, "", st, "log")
	if got := price("--valid-time", "2024-02-15T00:00:00Z", "--tx-time", log[1].TxTime); got != "12" {
		t.Errorf("price at 2024-02-15 as of tx time %s = %s, want 12", log[1].TxTime, got)
	}
	if op := log[1].Ops[0]; op.ValidFrom == nil || *op.ValidFrom != "2024-02-01T00:00:00.000Z" || op.ValidTo == nil || *op.ValidTo != "2024-03-01T00:00:00.000Z" {
		t.Errorf("logged range = %+v", op)
	}
	c.fail(1, "", []string{st, "get", "p", "--valid-time", "2023-12-31T23:59:59Z"}, `"p" not found`)

	var hist []historyRow
	c.jsonOut(&hist, "", st, "history", "p", "--valid-time", "2030-01-01T00:00:00Z")
	var got []string
	for _, h := range hist {
		got = append(got, h.ValidTime)
	}
	if want := []string{"2024-01-01T00:00:00.000Z", "2024-02-01T00:00:00.000Z", "2024-03-01T00:00:00.000Z"}; !reflect.DeepEqual(got, want) {
		t.Errorf("history valid times = %v, want %v", got, want)
	}
	c.jsonOut(&hist, "", st, "history", "p", "--valid-time", "2030-01-01T00:00:00Z", "--start-valid-time", "2024-02-01T00:00:00Z", "--end-valid-time", "2024-03-01T00:00:00Z")
	if len(hist) != 1 || hist[0].TxID != 1 {
		t.Errorf("history in [02-01, 03-01) = %+v", hist)
	}

	// A ranged delete punches a hole.
	c.ok("", st, "delete", "p", "--valid-from", "2024-05-01T00:00:00Z", "--valid-to", "2024-06-01T00:00:00Z")
	c.fail(1, "", []string{st, "get", "p", "--valid-time", "2024-05-15T00:00:00Z"}, "not found")
	if got := price("--valid-time", "2024-06-15T00:00:00Z"); got != "10" {
		t.Errorf("price after the deleted range = %s, want 10", got)
	}
}

func TestCLIStoreSelection(t *testing.T) {
	c := newCLI(t)
	// The default store is created under the working directory.
	c.ok(`{"xt/id": "d"}`, "put")
	if _, err := os.Stat(c.path(".ctxstore/store.db")); err != nil {
		t.Fatalf("default store not created: %v", err)
	}
	c.ok("", "get", "d")
	// CTXSTORE_URL names the store; --store wins over it.
	c.env = append(c.env, "CTXSTORE_URL=file:"+c.path("env.db"))
	c.ok(`{"xt/id": "e"}`, "put")
	c.ok("", "--store", c.path("env.db"), "get", "e")
	c.fail(1, "", []string{"get", "d"}, "not found")
	c.ok("", "--store", "sqlite:.ctxstore/store.db", "get", "d")
	c.ok("", "--store", "file://"+c.path(".ctxstore/store.db"), "get", "d")
	// In memory: a fresh store each run.
	out := c.ok(`{"xt/id": "m"}`, "--store", ":memory:", "put")
	if !txLine.MatchString(out) {
		t.Errorf("put to :memory: printed %q", out)
	}
	// Reads do not create stores.
	c.fail(1, "", []string{"--store", c.path("none.db"), "status"}, "no store at")
	if _, err := os.Stat(c.path("none.db")); err == nil {
		t.Error("status created a store")
	}
	c.fail(1, `{"xt/id": "x"}`, []string{"--store", c.path("nodir/x.db"), "put", "-"}, "does not exist")
	c.fail(2, "", []string{"--store", c.path("x.sqlite"), "status"}, "not a store URL")
	c.fail(2, "", []string{"--store", "ftp://x/y.db", "status"}, "unknown scheme")
	// XTDB URLs go to the XTDB backend (here: none reachable).
	c.fail(1, "", []string{"--store", "http://127.0.0.1:1", "status"}, "XTDB")
}

func TestCLIHelp(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		out := c.ok("", args...)
		for _, cmd := range []string{"put", "delete", "evict", "get", "history", "query", "log", "status"} {
			if !strings.Contains(out, "  "+cmd+" ") {
				t.Errorf("%v: %q missing from\n%s", args, cmd, out)
			}
		}
	}
	for _, args := range [][]string{{"help", "query"}, {"query", "-h"}, {"query", "--help"}} {
		out := c.ok("", args...)
		if !strings.Contains(out, "Usage: ctxstore query") || !strings.Contains(out, "--where") {
			t.Errorf("%v:\n%s", args, out)
		}
	}
	c.fail(2, "", nil, "no command")
	c.fail(2, "", []string{"help", "frob"}, "frob")
}

// snapshot is the store's whole transaction log as JSON, to check that a
// failed command wrote nothing.
func snapshot(c *cli, store string) string {
	c.t.Helper()
	return c.ok("", "--json", "--store", store, "log")
}

func TestCLIBadInput(t *testing.T) {
	c := newCLI(t)
	st := c.path("bad.db")
	c.ok(`{"xt/id": "keep", "v": 1}`, "--store", st, "put")
	before := snapshot(c, st)

	bad := c.write("bad.jsonl", "{\"xt/id\": \"l1\"}\n{\"xt/id\": \"l2\"}\n{\"xt/id\": \"l3\", \"v\": }\n{\"xt/id\": \"l4\"}\n")
	noID := c.write("noid.json", `{"name": "x"}`)
	multi := c.write("multi.json", "{\n  \"xt/id\": \"m\",\n  \"v\": [1, 2,,]\n}\n")
	cases := []struct {
		name  string
		code  int
		stdin string
		args  []string
		want  []string
	}{
		{"malformed JSON", 1, `{"xt/id": "x",`, []string{"put"}, []string{"stdin", "malformed JSON"}},
		{"malformed JSON names the line", 1, "", []string{"put", multi}, []string{multi + ":3: malformed JSON"}},
		{"no id", 1, "", []string{"put", noID}, []string{noID, `no "xt/id"`}},
		{"numeric id", 1, `{"xt/id": 7}`, []string{"put"}, []string{`"xt/id" must be a string`}},
		{"empty id", 1, `{"xt/id": ""}`, []string{"put"}, []string{`"xt/id" must not be empty`}},
		{"not an object", 1, `[{"xt/id": "a"}]`, []string{"put"}, []string{"must be a JSON object", "--lines"}},
		{"two documents", 1, `{"xt/id": "a"} {"xt/id": "b"}`, []string{"put"}, []string{"data after the document"}},
		{"empty input", 1, "  \n", []string{"put"}, []string{"empty"}},
		{"missing file", 1, "", []string{"put", c.path("missing.json")}, []string{"missing.json"}},
		{"bad line", 1, "", []string{"put", "--lines", bad}, []string{bad + ":3: malformed JSON", "nothing was written"}},
		{"bad lines from stdin", 1, "{\"xt/id\": \"s1\"}\n{\"id\": 2}\n[]\n", []string{"put", "--lines"}, []string{"stdin:2: document has no \"xt/id\"", "stdin:3: a document must be a JSON object"}},
		{"valid-to before valid-from", 2, `{"xt/id": "r"}`, []string{"put", "--valid-from", "2024-02-01T00:00:00Z", "--valid-to", "2024-01-01T00:00:00Z"}, []string{"--valid-to", "before --valid-from"}},
		{"valid-to without valid-from", 2, `{"xt/id": "r"}`, []string{"put", "--valid-to", "2024-01-01T00:00:00Z"}, []string{"--valid-to needs --valid-from"}},
		{"delete range backwards", 2, "", []string{"delete", "keep", "--valid-from", "2024-02-01", "--valid-to", "2024-01-01"}, []string{"before --valid-from"}},
		{"bad time", 2, `{"xt/id": "r"}`, []string{"put", "--valid-from", "yesterday"}, []string{"--valid-from", "RFC 3339"}},
		{"unknown subcommand", 2, "", []string{"frobnicate"}, []string{`unknown command "frobnicate"`}},
		{"unknown flag", 2, `{"xt/id": "r"}`, []string{"put", "--frob"}, []string{"unknown flag --frob"}},
		{"missing argument", 2, "", []string{"get"}, []string{"expected \"<id>\""}},
		{"extra argument", 2, "", []string{"evict", "a", "b"}, []string{"unexpected argument b"}},
		{"tx-id and tx-time", 2, "", []string{"get", "keep", "--tx-id", "0", "--tx-time", "2024-01-01T00:00:00Z"}, []string{"--tx-id", "--tx-time"}},
		{"bad tx-id", 2, "", []string{"get", "keep", "--tx-id", "x"}, []string{"--tx-id"}},
		{"bad where", 2, "", []string{"query", "--where", "nofield"}, []string{"FIELD=VALUE"}},
		{"where null", 2, "", []string{"query", "--where", "v=null"}, []string{"null never matches"}},
		{"file with where", 2, "", []string{"query", "--file", noID, "--where", "a=1"}, []string{"--file cannot be combined"}},
		{"bad query file", 1, "", []string{"query", "--file", noID}, []string{"unknown field"}},
		{"invalid query", 1, "", []string{"query", "--where", "v<true"}, []string{"booleans are not ordered"}},
		{"basis beyond the log", 1, "", []string{"get", "keep", "--tx-id", "99"}, []string{"after the latest transaction"}},
		{"not found", 1, "", []string{"get", "nope"}, []string{`"nope" not found`}},
		{"negative limit", 2, "", []string{"log", "--limit=-1"}, []string{"--limit"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			args := append([]string{"--store", st}, tc.args...)
			r := c.fail(tc.code, tc.stdin, args, tc.want...)
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			if after := snapshot(c, st); after != before {
				t.Errorf("the store changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	c.t = t
	// No document of the bad --lines file was written.
	for _, id := range []string{"l1", "l2", "l4", "s1"} {
		c.fail(1, "", []string{"--store", st, "get", id}, "not found")
	}
}

// TestCLICorruptDatabase: a .db file holding random bytes is refused and
// left byte for byte as it was.
func TestCLICorruptDatabase(t *testing.T) {
	c := newCLI(t)
	junk := make([]byte, 8192)
	rand.Read(junk)
	p := c.path("junk.db")
	if err := os.WriteFile(p, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"get", "a"}, {"log"}, {"put", "-"}} {
		c.fail(1, `{"xt/id": "a"}`, append([]string{"--store", p}, args...), "not a SQLite database")
	}
	checkUnchanged(t, p, junk)
}

// TestCLIForeignDatabase: another application's SQLite database is
// refused and left byte for byte as it was.
func TestCLIForeignDatabase(t *testing.T) {
	c := newCLI(t)
	p := c.path("other.db")
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)", "INSERT INTO customers (name) VALUES ('ada'), ('bob')"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"put", "-"}, {"status"}, {"get", "a"}} {
		c.fail(1, `{"xt/id": "a"}`, append([]string{"--store", p}, args...), "another application")
	}
	checkUnchanged(t, p, orig)
}

// checkUnchanged fails unless the file at p holds want and no journal
// files were left beside it.
func checkUnchanged(t *testing.T, p string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s was modified", filepath.Base(p))
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(p + suffix); err == nil {
			t.Errorf("%s%s was created", filepath.Base(p), suffix)
		}
	}
}
