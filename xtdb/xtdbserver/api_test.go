package xtdbserver

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestXTDBHTTPAPI sends requests built from the examples of XTDB 1.24.5's
// HTTP documentation (docs/clients http.adoc and the module's example
// answers) to the front and checks each answer's status and shape against
// what XTDB's module answers (docs/xtdb-api.md).
func TestXTDBHTTPAPI(t *testing.T) {
	s := startForTest(t, Options{})
	b := s.URL() + "/_xtdb"
	type step struct {
		name, method, path, ctype, body string
		accept                          string // default application/edn
		status                          int
		want                            []string // substrings of the answer
		notWant                         []string // substrings the answer must not hold
		prefix                          string   // the answer starts with it
	}
	const js = "application/json"
	esc := url.QueryEscape
	steps := []step{
		{name: "status", method: "GET", path: "/status", status: 200, want: []string{":xtdb.version/version \"1.24.5\""}},
		{name: "no tx yet", method: "GET", path: "/latest-completed-tx", status: 404, want: []string{`{:error "No latest-completed-tx found."}`}},
		// http.adoc, submit-tx: EDN body.
		{name: "submit EDN", method: "POST", path: "/submit-tx", ctype: "application/edn",
			body:   `{:tx-ops [[:xtdb.api/put {:xt/id :ivan, :name "Ivan" :last-name "Ivanov"}] [:xtdb.api/put {:xt/id :boris :name "Boris" :last-name "Petrov"}]]}`,
			status: 202, want: []string{":xtdb.api/tx-id 0", ":xtdb.api/tx-time #inst"}},
		// The same op form, as JSON.
		{name: "submit JSON", method: "POST", path: "/submit-tx", ctype: "application/json",
			body:   `{"tx-ops": [["put", {"xt/id": "ivan", "name": "Ivan", "n": 1}, "2020-01-01T00:00:00Z"], ["put", {"xt/id": "ivan", "name": "Ivan", "n": 1}, "2020-01-02T00:00:00Z", "2020-01-03T00:00:00Z"]]}`,
			status: 202, want: []string{":xtdb.api/tx-id 1"}},
		{name: "await-tx", method: "GET", path: "/await-tx?tx-id=1&timeout=10000", status: 200, want: []string{":xtdb.api/tx-id 1"}},
		{name: "sync", method: "GET", path: "/sync?timeout=10000", status: 200, want: []string{":xtdb.api/tx-time #inst"}},
		{name: "await-tx-time", method: "GET", path: "/await-tx-time?tx-time=2000-01-01T00:00:00Z&timeout=1000", status: 200, want: []string{":xtdb.api/tx-time #inst"}},
		{name: "tx-committed", method: "GET", path: "/tx-committed?tx-id=0", status: 200, want: []string{"{:tx-committed? true}"}},
		{name: "tx-committed camelCase", method: "GET", path: "/tx-committed?txId=0", status: 200, want: []string{"{:tx-committed? true}"}},
		// XTDB's module: the handler returns the exception as the body.
		{name: "tx-committed not indexed", method: "GET", path: "/tx-committed?tx-id=99", status: 500, want: []string{}},
		{name: "latest-completed-tx", method: "GET", path: "/latest-completed-tx", status: 200, want: []string{":xtdb.api/tx-id 1"}},
		{name: "latest-submitted-tx", method: "GET", path: "/latest-submitted-tx", status: 200, want: []string{":xtdb.api/tx-id 1"}},
		{name: "db", method: "GET", path: "/db?tx-id=0", status: 200, want: []string{":xtdb.api/valid-time #inst", ":xtdb.api/tx {", ":xtdb.api/tx-id 0"}},
		{name: "entity eid-edn", method: "GET", path: "/entity?eid-edn=" + esc(":ivan"), status: 200, want: []string{`:name "Ivan"`, ":xt/id :ivan"}},
		{name: "entity eid-json", method: "GET", path: "/entity?eid-json=" + esc(`"ivan"`) + "&valid-time=2020-01-01T12:00:00Z", status: 200, want: []string{`:xt/id "ivan"`, ":n 1"}},
		{name: "entity eid, camelCase validTime", method: "GET", path: "/entity?eid=ivan&validTime=2019-01-01T00:00:00Z", status: 404, want: []string{`{:error "ivan entity not found"}`}},
		{name: "entity without eid", method: "GET", path: "/entity", status: 400, want: []string{":missing-eid"}},
		{name: "entity history", method: "GET", path: "/entity?eid=ivan&history=true&sort-order=asc&with-docs=true&valid-time=2030-01-01T00:00:00Z", status: 200,
			prefix: "({", want: []string{":xtdb.api/content-hash #xtdb/id", ":xtdb.api/doc {"}},
		{name: "entity history with tx-time bounds", method: "GET", path: "/entity?eid=ivan&history=true&sortOrder=asc&startTxTime=2000-01-01T00:00:00Z&endTxTime=2100-01-01T00:00:00Z&valid-time=2030-01-01T00:00:00Z", status: 200, prefix: "({"},
		{name: "entity history, nothing", method: "GET", path: "/entity?eid=nobody&history=true&sort-order=asc", status: 200, want: []string{"()"}},
		{name: "entity history without sort-order", method: "GET", path: "/entity?eid=ivan&history=true", status: 500, want: []string{`:type "exception"`}},
		{name: "entity-tx", method: "GET", path: "/entity-tx?eid-edn=" + esc(":ivan"), status: 200, want: []string{":xtdb.api/content-hash", ":xtdb.api/tx-id 0"}},
		{name: "entity-tx missing", method: "GET", path: "/entity-tx?eid=nobody", status: 404, want: []string{`{:error "nobody entity-tx not found"}`}},
		// http.adoc, query: POST an EDN body; GET with query-edn.
		{name: "query POST", method: "POST", path: "/query", ctype: "application/edn",
			body: `{:query {:find [e] :where [[e :last-name "Petrov"]]}}`, status: 200, want: []string{"([:boris])"}},
		{name: "query POST, query as text, in-args-json", method: "POST", path: "/query?in-args-json=" + esc(`["Ivan"]`), ctype: "application/edn",
			body: `{:query "{:find [e] :in [n] :where [[e :name n]]}"}`, status: 200, prefix: "(["},
		{name: "query GET", method: "GET", path: "/query?query-edn=" + esc(`{:find [n] :where [[e :name n]]}`), status: 200, prefix: "(["},
		// A bag: one row per binding, duplicates kept.
		{name: "query duplicates", method: "GET", path: "/query?query-edn=" + esc(`{:find [n] :in [[x ...]] :where [[e :name n]]}`) + "&in-args-edn=" + esc(`[[1 2]]`), status: 200,
			want: []string{`["Ivan"]`}},
		{name: "query without query", method: "POST", path: "/query", ctype: "application/edn", body: `{}`, status: 400, want: []string{":no-query"}},
		{name: "query with a bad clause", method: "GET", path: "/query?query-edn=" + esc(`{:find [e] :where [[e]]}`), status: 400, want: []string{":xtdb.error/"}},
		{name: "future basis", method: "GET", path: "/entity?eid=ivan&tx-id=1000", status: 400, want: []string{"node-out-of-sync"}},
		{name: "attribute-stats", method: "GET", path: "/attribute-stats", status: 200, want: []string{":name 3"}},
		{name: "tx-log", method: "GET", path: "/tx-log?with-ops%3F=true", status: 200, prefix: "({:xtdb.api/tx-id 0", want: []string{":xtdb.api/tx-ops ([:xtdb.api/put"}},
		{name: "tx-log after", method: "GET", path: "/tx-log?after-tx-id=1", status: 200, want: []string{"()"}},
		{name: "await params", method: "GET", path: "/entity?eid-edn=" + esc(":boris") + "&await-tx-id=1&await-tx-timeout=1000", status: 200, want: []string{`"Boris"`}},
		{name: "unsupported parameter", method: "GET", path: "/tx-log?limit=1", status: 400, want: []string{"unsupported parameter limit"}},
		{name: "misspelt parameter", method: "GET", path: "/tx-log?with-ops=true", status: 400, want: []string{"unsupported parameter with-ops"}},
		{name: "bad integer", method: "GET", path: "/await-tx?tx-id=x", status: 400, want: []string{"invalid tx-id"}},
		{name: "malformed EDN", method: "POST", path: "/submit-tx", ctype: "application/edn", body: `{:tx-ops [`, status: 400, want: []string{`Malformed \"application/edn\" request.`}},
		{name: "malformed JSON op", method: "POST", path: "/submit-tx", ctype: "application/json", body: `{"tx-ops": [["upsert", {}]]}`, status: 400, want: []string{`Malformed \"application/json\" request.`}},
		{name: "over-long URL", method: "GET", path: "/entity?eid=" + strings.Repeat("x", 9000), status: 414},
		{name: "no route", method: "GET", path: "/nothing", status: 404},
		// JSON answers (Accept: application/json), shaped as http.adoc's
		// JSON examples: top-level keys camelCased without their namespace,
		// documents and query tuples as they are, times cut to seconds.
		{name: "JSON status", method: "GET", path: "/status", accept: js, status: 200, prefix: "{", want: []string{`"version":"1.24.5"`, `"indexVersion":`}},
		{name: "JSON entity", method: "GET", path: "/entity?eid=ivan", accept: js, status: 200, want: []string{`"xt/id":"ivan"`, `"name":"Ivan"`, `"n":1`}},
		{name: "JSON entity keyword id", method: "GET", path: "/entity?eid-edn=" + esc(":boris"), accept: js, status: 200, want: []string{`"xt/id":"boris"`, `"last-name":"Petrov"`}},
		{name: "JSON entity-tx", method: "GET", path: "/entity-tx?eid=ivan", accept: js, status: 200, want: []string{`"id":"`, `"contentHash":"`, `"txId":1`, `"validTime":"`}},
		{name: "JSON entity history", method: "GET", path: "/entity?eid=ivan&history=true&sortOrder=asc&withDocs=true&valid-time=2030-01-01T00:00:00Z", accept: js, status: 200,
			prefix: `[{"`, want: []string{`"txTime":"20`, `"contentHash":"`, `"doc":{"`}, notWant: []string{"xtdb.api/"}},
		{name: "JSON query", method: "POST", path: "/query", ctype: "application/edn", accept: js,
			body: `{:query {:find [e] :where [[e :last-name "Petrov"]]}}`, status: 200, want: []string{`[["boris"]]`}},
		{name: "JSON db", method: "GET", path: "/db?tx-id=0", accept: js, status: 200, want: []string{`"validTime":"`, `"tx":{`}},
		{name: "JSON tx-committed", method: "GET", path: "/tx-committed?tx-id=0", accept: js, status: 200, want: []string{`{"txCommitted?":true}`}},
		{name: "JSON tx-log", method: "GET", path: "/tx-log?with-ops%3F=true", accept: js, status: 200, prefix: `[{"`, want: []string{`"txId":0`, `"txOps":[["put",{`}},
		{name: "JSON missing eid", method: "GET", path: "/entity", accept: js, status: 400, want: []string{`"xtdb.error/error-type":"missing-eid"`}},
		{name: "JSON bad query", method: "GET", path: "/query?query-edn=" + esc(`{:find [e] :where [[e]]}`), accept: js, status: 400, want: []string{`"xtdb.error/`}},
		{name: "JSON unsupported parameter", method: "GET", path: "/sync?limit=1", accept: js, status: 400, want: []string{`{"error":"unsupported parameter limit`}},
		{name: "JSON not found", method: "GET", path: "/entity?eid=nobody", accept: js, status: 404, want: []string{`{"error":"nobody entity not found"}`}},
		{name: "Accept by q", method: "GET", path: "/latest-completed-tx", accept: "application/json;q=0.5, application/edn", status: 200, prefix: "{:xtdb.api/"},
		{name: "Accept any", method: "GET", path: "/latest-completed-tx", accept: "*/*", status: 200, prefix: "{:xtdb.api/"},
		{name: "transit is not served", method: "GET", path: "/status", accept: "application/transit+json", status: 406, want: []string{"not served"}},
		// Last: it adds a transaction.
		{name: "JSON submit", method: "POST", path: "/submit-tx", ctype: js, accept: js,
			body: `{"tx-ops": [["put", {"xt/id": "olga"}]]}`, status: 202, want: []string{`"txId":2`, `"txTime":"`}, notWant: []string{"xtdb.api"}},
	}
	for _, st := range steps {
		do := func() (int, string) {
			req, err := http.NewRequest(st.method, b+st.path, strings.NewReader(st.body))
			if err != nil {
				t.Fatal(err)
			}
			accept := st.accept
			if accept == "" {
				accept = "application/edn"
			}
			req.Header.Set("Accept", accept)
			if st.ctype != "" {
				req.Header.Set("Content-Type", st.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(data)
		}
		status, got := do()
		// XTDB updates attribute statistics after indexing, in the
		// background: poll (up to 30 s) until the written attributes show.
		for deadline := time.Now().Add(30 * time.Second); st.name == "attribute-stats" && got == "{}" && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			status, got = do()
		}
		resp := struct{ StatusCode int }{status}
		if resp.StatusCode != st.status {
			t.Errorf("%s: %s %s = %d %s, want %d", st.name, st.method, st.path, resp.StatusCode, got, st.status)
			continue
		}
		if st.want != nil && len(st.want) == 0 && got != "" {
			t.Errorf("%s: body %q, want none", st.name, got)
		}
		for _, w := range st.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: answer %s lacks %s", st.name, got, w)
			}
		}
		for _, w := range st.notWant {
			if strings.Contains(got, w) {
				t.Errorf("%s: answer %s holds %s", st.name, got, w)
			}
		}
		if st.accept == js && st.status < 300 && regexp.MustCompile(`T\d\d:\d\d:\d\d\.\d`).MatchString(got) {
			t.Errorf("%s: answer %s has a time with fractions of a second; the module's JSON cuts times to seconds", st.name, got)
		}
		if !strings.HasPrefix(got, st.prefix) {
			t.Errorf("%s: answer %s does not start with %s", st.name, got, st.prefix)
		}
		if st.name == "query duplicates" && strings.Count(got, `["Ivan"]`) < 2 {
			t.Errorf("query duplicates: %s, want the row twice", got)
		}
	}
}
