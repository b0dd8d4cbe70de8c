package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
)

// TestLogEvictedMatch: log tells a match whose expected document was
// evicted since from a match that expected absence, in text and --json;
// and log and export take "--after -1", their documented default, as
// written.
func TestLogEvictedMatch(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "s.db")
	st, err := bitemporal.Open(ctx, db, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	secret := store.Doc{store.IDKey: "secret", "v": "classified"}
	for _, ops := range [][]store.Op{
		{store.Put(secret)},
		{store.Match("secret", secret), store.Match("nobody", nil)},
		{store.Evict("secret")},
	} {
		if _, err := store.SubmitWait(ctx, st, ops); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(ctx, append([]string{"--store", db}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}

	code, out, errs := cli("log", "--after", "-1")
	if code != 0 {
		t.Fatalf("log --after -1: exit %d: %s", code, errs)
	}
	for _, want := range []string{"put    secret  (document evicted)", "match  secret  (expected document evicted)", "match  nobody  (expects absence)"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "classified") {
		t.Errorf("log shows evicted content:\n%s", out)
	}

	code, out, errs = cli("--json", "log", "--after", "-1")
	if code != 0 {
		t.Fatalf("log --json: exit %d: %s", code, errs)
	}
	var log []struct {
		Ops []map[string]any `json:"ops"`
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil || len(log) != 3 {
		t.Fatalf("log --json: %v\n%s", err, out)
	}
	ops := log[1].Ops
	if len(ops) != 2 || ops[0]["evicted"] != true || ops[0]["doc"] != nil || ops[1]["evicted"] != nil || ops[1]["doc"] != nil {
		t.Errorf("log --json of the matches: %v; want the first evicted, the second without evicted, neither with doc", ops)
	}
	if ops := log[0].Ops; len(ops) != 1 || ops[0]["evicted"] != true {
		t.Errorf("log --json of the put: %v; want evicted", ops)
	}

	for _, after := range [][]string{{"--after", "-1"}, {"--after=-1"}, {}} {
		out := filepath.Join(t.TempDir(), "log.jsonl")
		code, stdout, errs := cli(append(append([]string{"export"}, after...), "-o", out)...)
		if code != 0 || !strings.Contains(stdout, "exported 3 transactions") {
			t.Errorf("export %v: exit %d\n%s%s", after, code, stdout, errs)
		}
	}
	for _, bad := range []string{"-2", "x"} {
		if code, _, errs := cli("log", "--after", bad); code != exitUsage || !strings.Contains(errs, "want a tx id") {
			t.Errorf("log --after %s: exit %d, %q; want a usage error", bad, code, errs)
		}
	}
}
