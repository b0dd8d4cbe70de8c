// Package recordedtest holds what the tests of recorded sessions
// (harness/recorded, explain/inspect) share: reading a transcript as the
// API billed it, independently of the decoders they test.
package recordedtest

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// FileCalls reads a Claude Code file as the API billed it: one call per
// message id of the main thread's assistant records with usage, and the
// tokens they sent.
func FileCalls(tb testing.TB, path string) (calls int, sent int64) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r struct {
			Type      string `json:"type"`
			Sidechain bool   `json:"isSidechain"`
			Message   struct {
				ID    string `json:"id"`
				Model string `json:"model"`
				Usage *struct {
					Input int64 `json:"input_tokens"`
					Read  int64 `json:"cache_read_input_tokens"`
					Write int64 `json:"cache_creation_input_tokens"`
				} `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Type != "assistant" || r.Sidechain || r.Message.Usage == nil ||
			r.Message.Model == "<synthetic>" || seen[r.Message.ID] {
			continue
		}
		seen[r.Message.ID] = true
		calls++
		sent += r.Message.Usage.Input + r.Message.Usage.Read + r.Message.Usage.Write
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return calls, sent
}
