package recall

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/recall/provider"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
)

// TestQuerySessionWithModel: the model gets the session's conversation,
// most recent messages first up to the cap with compaction summaries kept,
// and its answer is returned with usage.
func TestQuerySessionWithModel(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		var prompt string
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				Messages []struct{ Content string } `json:"messages"`
			}
			json.NewDecoder(r.Body).Decode(&body)
			prompt = body.Messages[0].Content
			json.NewEncoder(w).Encode(map[string]any{"model": "claude-cheap", "content": []any{map[string]any{"type": "text", "text": "Because the listener was detached."}},
				"usage": map[string]any{"input_tokens": 900, "output_tokens": 9}})
		}))
		defer hs.Close()
		p, err := provider.New(provider.Config{Name: "a", Type: "anthropic", BaseURL: hs.URL, Model: "claude-cheap"})
		if err != nil {
			t.Fatal(err)
		}
		old := strings.Repeat("old filler words ", 40)
		s := newSession(t, e, "q", turns(
			"The conversation history before this point was compacted into the following summary: we chose RocksDB.", "ok",
			old, "noted",
			"Why did the escape test fail?", "The listener was detached too early.",
		))
		set := &Settings{Config: Config{QueryMaxBytes: 200}, Provider: p}
		a, err := QuerySession(context.Background(), e.Store, set, Scope{}, s.ID(), "why did it fail?")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(a.Text, "Because the listener was detached.") || a.Model != "claude-cheap" || a.Usage == nil || a.Usage.InputTokens != 900 {
			t.Errorf("answer %+v", a)
		}
		if !strings.Contains(prompt, "we chose RocksDB") || !strings.Contains(prompt, "Why did the escape test fail?") || strings.Contains(prompt, "old filler") {
			t.Errorf("prompt (capped at 200 bytes, summary kept):\n%s", prompt)
		}
		if !strings.Contains(prompt, "Question: why did it fail?") {
			t.Errorf("prompt lacks the question:\n%s", prompt)
		}
	})
}
