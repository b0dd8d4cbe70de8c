package xtdbserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"olympos.io/encoding/edn"
)

// startForTest starts a server and stops it in t.Cleanup. Like ForTest, it fails
// when CI=true and skips otherwise if no server can be started.
func startForTest(t *testing.T, opts Options) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a JVM; skipped in -short mode")
	}
	log := newTail(64 << 10)
	opts.Log = log
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, err := Start(ctx, opts)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Start: %v", err)
		}
		t.Skipf("Start (set CI=true to fail instead): %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if t.Failed() {
			t.Logf("server output tail:\n%s", log)
		}
	})
	return s
}

// call does one request (JSON body) and decodes the EDN answer into out (if
// not nil), with keyword keys as strings.
func call(t *testing.T, method, url, body string, out *map[string]any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/edn")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	if out != nil && resp.StatusCode < 300 {
		var v map[any]any
		if err := edn.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, b)
		}
		*out = map[string]any{}
		for k, e := range v {
			key := fmt.Sprint(k)
			if kw, ok := k.(edn.Keyword); ok {
				key = string(kw)
			}
			(*out)[key] = e
		}
	}
	return resp.StatusCode
}

// putAndAwait submits a put of doc and waits until it is indexed.
func putAndAwait(t *testing.T, base, doc string) {
	t.Helper()
	var tx, awaited map[string]any
	if code := call(t, "POST", base+"/_xtdb/submit-tx", `{"tx-ops":[["put",`+doc+`]]}`, &tx); code != http.StatusAccepted {
		t.Fatalf("submit-tx: status %d", code)
	}
	id, _ := tx["xtdb.api/tx-id"].(int64)
	url := base + "/_xtdb/await-tx?tx-id=" + strconv.FormatInt(id, 10) + "&timeout=10000"
	if code := call(t, "GET", url, "", &awaited); code != http.StatusOK || awaited["xtdb.api/tx-id"].(int64) < id {
		t.Fatalf("await-tx: status %d, %+v, want tx %d", code, awaited, id)
	}
}

func getEntity(t *testing.T, base, eid string) (map[string]any, int) {
	t.Helper()
	var doc map[string]any
	code := call(t, "GET", base+"/_xtdb/entity?eid="+eid, "", &doc)
	return doc, code
}

func TestStartPutGetStop(t *testing.T) {
	s := startForTest(t, Options{})
	putAndAwait(t, s.URL(), `{"xt/id":"a","v":1}`)
	doc, code := getEntity(t, s.URL(), "a")
	if code != http.StatusOK || doc["xt/id"] != "a" || doc["v"] != int64(1) {
		t.Fatalf("entity a: status %d, doc %v", code, doc)
	}
	if _, code := getEntity(t, s.URL(), "nope"); code != http.StatusNotFound {
		t.Errorf("entity nope: status %d, want 404", code)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URL(), "http://"), time.Second); err == nil {
		c.Close()
		t.Fatalf("port of %s still open after Stop", s.URL())
	}
}

func TestRocksDBSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := startForTest(t, Options{DataDir: dir})
	putAndAwait(t, s.URL(), `{"xt/id":"r","name":"kept"}`)
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	s2 := startForTest(t, Options{DataDir: dir})
	doc, code := getEntity(t, s2.URL(), "r")
	if code != http.StatusOK || doc["name"] != "kept" {
		t.Fatalf("after restart: status %d, doc %v", code, doc)
	}
}

func TestNodeConfig(t *testing.T) {
	got := nodeConfig("/d/x\"y", nil)
	for _, want := range []string{
		`:xtdb/tx-log {:kv-store {:xtdb/module xtdb.rocksdb/->kv-store :db-dir "/d/x\"y/tx-log"}}`,
		`:xtdb/index-store`, `:xtdb/document-store`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	if mem := nodeConfig("", nil); strings.Contains(mem, "rocksdb") {
		t.Errorf("in-memory config mentions rocksdb: %s", mem)
	}
}

func TestTailBuffer(t *testing.T) {
	b := newTail(4)
	fmt.Fprint(b, "abc")
	fmt.Fprint(b, "def")
	if b.String() != "cdef" {
		t.Fatalf("got %q", b)
	}
}
