package xtdbtest

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/xtdb/xtdbserver"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

func TestForTest(t *testing.T) {
	base := ForTest(t)
	if base != ForTest(t) {
		t.Fatal("ForTest returned different URLs")
	}
	req, err := http.NewRequest(http.MethodGet, base+"/_xtdb/status", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status: %d %s %v", resp.StatusCode, body, err)
	}
	if !strings.Contains(string(body), `"`+xtdbserver.Version+`"`) {
		t.Fatalf("status answer does not name version %s: %s", xtdbserver.Version, body)
	}
}

// TestShortStartsNoJVM checks the gate make test-short relies on: under
// -short, ForTest skips instead of starting a node.
func TestShortStartsNoJVM(t *testing.T) {
	if !testing.Short() || os.Getenv("XTDB_URL") != "" {
		t.Skip("only meaningful under -short without XTDB_URL")
	}
	ran := false
	t.Run("inner", func(t *testing.T) {
		defer func() { ran = true }()
		ForTest(t)
		t.Fatal("ForTest returned under -short")
	})
	if !ran || shared.started {
		t.Fatalf("ForTest started a server under -short (started=%v)", shared.started)
	}
}
