package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// wire answers one scripted reply per request in each API's format and
// records the requests.
type wire struct {
	t       *testing.T
	kind    string // anthropic or openai
	replies []func(w http.ResponseWriter)
	got     []map[string]any
	headers []http.Header
}

func (s *wire) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	want := "/v1/messages"
	if s.kind == "openai" {
		want = "/v1/chat/completions"
	}
	if r.Method != http.MethodPost || r.URL.Path != want {
		s.t.Errorf("%s %s, want POST %s", r.Method, r.URL.Path, want)
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.t.Errorf("request body: %v", err)
	}
	s.got = append(s.got, body)
	s.headers = append(s.headers, r.Header.Clone())
	n := len(s.got) - 1
	if n >= len(s.replies) {
		http.Error(w, "no more scripted replies", 500)
		return
	}
	s.replies[n](w)
}

// text answers a completion with text in the server's format.
func (s *wire) text(text string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		if s.kind == "anthropic" {
			json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-1",
				"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": "end_turn",
				"usage": map[string]any{"input_tokens": 1000, "output_tokens": 200}})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test-1",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}})
	}
}

func status(code int, msg string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": msg}})
	}
}

func client(t *testing.T, kind, url string, timeout int) Provider {
	t.Helper()
	t.Setenv("TEST_PROVIDER_KEY", "sk-test-123")
	base := url
	if kind == "openai" {
		base += "/v1"
	}
	p, err := New(Config{Name: kind + "-test", Type: kind, BaseURL: base, Model: "cheap-model", APIKeyEnv: "TEST_PROVIDER_KEY",
		TimeoutMS: timeout, InputPerMTok: 1, OutputPerMTok: 5})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestClients(t *testing.T) {
	for _, kind := range []string{"anthropic", "openai"} {
		t.Run(kind, func(t *testing.T) {
			s := &wire{t: t, kind: kind}
			s.replies = []func(http.ResponseWriter){s.text(`{"ok":true}`), status(429, "slow down")}
			srv := httptest.NewServer(s)
			defer srv.Close()
			p := client(t, kind, srv.URL, 0)
			r, err := p.Complete(context.Background(), Request{System: "sys", Prompt: "hello", MaxTokens: 100, JSON: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != `{"ok":true}` || r.Usage.InputTokens != 1000 || r.Usage.OutputTokens != 200 {
				t.Errorf("response %+v", r)
			}
			if want := 1000*1.0/1e6 + 200*5.0/1e6; r.Usage.CostUSD != want {
				t.Errorf("cost %v, want %v", r.Usage.CostUSD, want)
			}
			req, h := s.got[0], s.headers[0]
			if req["model"] != "cheap-model" {
				t.Errorf("model %v", req["model"])
			}
			switch kind {
			case "anthropic":
				if h.Get("x-api-key") != "sk-test-123" || h.Get("anthropic-version") != "2023-06-01" || req["system"] != "sys" {
					t.Errorf("anthropic request: headers %v body %v", h, req)
				}
				msgs := req["messages"].([]any)
				if len(msgs) != 1 || msgs[0].(map[string]any)["content"] != "hello" {
					t.Errorf("messages %v", msgs)
				}
			case "openai":
				if h.Get("Authorization") != "Bearer sk-test-123" {
					t.Errorf("authorization %q", h.Get("Authorization"))
				}
				msgs := req["messages"].([]any)
				if len(msgs) != 2 || msgs[0].(map[string]any)["role"] != "system" || req["response_format"] == nil {
					t.Errorf("openai request %v", req)
				}
			}
			_, err = p.Complete(context.Background(), Request{Prompt: "again"})
			if !rateLimited(err) || !strings.Contains(err.Error(), "slow down") {
				t.Errorf("429: %v", err)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(1500 * time.Millisecond):
		}
	}))
	defer srv.Close()
	p := client(t, "anthropic", srv.URL, 200)
	start := time.Now()
	_, err := p.Complete(context.Background(), Request{Prompt: "x"})
	var pe *Error
	if !errors.As(err, &pe) || time.Since(start) > 3*time.Second {
		t.Fatalf("timeout: %v after %v", err, time.Since(start))
	}
}

func TestConfigValidate(t *testing.T) {
	t.Setenv("SET_KEY", "k")
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Name: "a", Type: "anthropic"}, "model: required"},
		{Config{Name: "a", Type: "gemini", Model: "m"}, "type"},
		{Config{Name: "a", Type: "openai", Model: "m", BaseURL: "ftp://x"}, "base_url"},
		{Config{Name: "a", Type: "openai", Model: "m", APIKeyEnv: "UNSET_KEY_FOR_TEST"}, "api_key_env"},
		{Config{Name: "a", Type: "openai", Model: "m", APIKeyEnv: "SET_KEY"}, ""},
	} {
		err := c.cfg.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// rateLimited reports whether err is a 429 answer.
func rateLimited(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && pe.Status == http.StatusTooManyRequests
}
