package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIDPrefixes: session, commit and object ids may be shortened to any
// prefix that names one id, in every command that takes one (they are
// resolved in one place, when the store opens); an ambiguous prefix is an
// error naming the candidates; an unknown id is still "not found".
func TestIDPrefixes(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	cli := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--store", db}, args...), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	var tip string
	for _, sid := range []string{"7801e790-aaaa-4000-8000-000000000001", "7801e790-bbbb-4000-8000-000000000002", "9c2f0000-cccc-4000-8000-000000000003"} {
		line := `{"type":"user","uuid":"u-` + sid + `","parentUuid":null,"sessionId":"` + sid + `","cwd":"/w","timestamp":"2026-12-01T10:00:00Z","message":{"role":"user","content":"hello from ` + sid + `"}}` + "\n" +
			`{"type":"assistant","uuid":"a-` + sid + `","parentUuid":"u-` + sid + `","sessionId":"` + sid + `","timestamp":"2026-12-01T10:00:01Z","message":{"id":"m-` + sid + `","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":5,"output_tokens":1}}}` + "\n"
		p := filepath.Join(dir, sid+".jsonl")
		if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errs, code := cli("--json", "import", p)
		var res struct {
			Files []struct {
				Tip string `json:"tip"`
			} `json:"files"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Files) != 1 {
			t.Fatalf("import: %d %s %s", code, out, errs)
		}
		tip = res.Files[0].Tip
	}
	out, errs, code := cli("session", "show", "9c2f")
	if code != 0 || !strings.Contains(out, "9c2f0000-cccc-4000-8000-000000000003") {
		t.Fatalf("session show by prefix: %d %q %q", code, out, errs)
	}
	_, errs, code = cli("session", "show", "7801e790")
	if code == 0 || !strings.Contains(errs, "ambiguous") || !strings.Contains(errs, "7801e790-aaaa") || !strings.Contains(errs, "7801e790-bbbb") {
		t.Fatalf("an ambiguous prefix: %d %q", code, errs)
	}
	if _, errs, code = cli("calls", "7801e790"); code == 0 || !strings.Contains(errs, "ambiguous") {
		t.Fatalf("calls with an ambiguous prefix: %d %q", code, errs)
	}
	if _, errs, code = cli("session", "show", "no-such"); code == 0 || !strings.Contains(errs, "no-such") || strings.Contains(errs, "ambiguous") {
		t.Fatalf("an unknown id: %d %q", code, errs)
	}
	full := tip
	if !strings.HasPrefix(full, "ctx-") {
		t.Fatalf("import tip %q", full)
	}
	for _, short := range []string{full[:12], strings.TrimPrefix(full, "ctx-")[:10]} {
		out, errs, code = cli("--json", "commit", "show", short)
		if code != 0 || !strings.Contains(out, full) {
			t.Fatalf("commit show %s: %d %q %q", short, code, out, errs)
		}
	}
	if _, errs, code = cli("commit", "show", "ctx-"); code == 0 || !strings.Contains(errs, "ambiguous") {
		t.Fatalf("commit show ctx-: %d %q", code, errs)
	}
}
