package xtdbserver

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestLuceneSurvivesRestart: the Lucene index of a node with a data
// directory lives beside its RocksDB indexes (dataDir/lucene) and answers
// after a restart.
func TestLuceneSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := startForTest(t, Options{DataDir: dir})
	putAndAwait(t, s.URL(), `{"xt/id":"n","type":"note","content":"quince marmalade recipe"}`)
	search := func(base string) string {
		resp, err := http.Get(base + "/_xtdb/ctxstore/search?text=quince&words=quince")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("search: status %d: %s", resp.StatusCode, b)
		}
		return string(b)
	}
	if got := search(s.URL()); strings.Count(got, `:id "n"`) != 1 || !strings.Contains(got, "«quince»") {
		t.Fatalf("before restart: %s", got)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	s2 := startForTest(t, Options{DataDir: dir})
	if got := search(s2.URL()); strings.Count(got, `:id "n"`) != 1 {
		t.Fatalf("after restart: %s", got)
	}
}
