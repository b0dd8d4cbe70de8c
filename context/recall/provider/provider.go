// Package provider holds the model clients of the session index and
// query_session (docs/recall.md): Anthropic's Messages API and the
// OpenAI-compatible chat completions API (OpenAI, llama.cpp's server,
// Ollama, vLLM, …). Both are plain HTTP clients of the real wire formats;
// tests drive them against local servers speaking those formats.
package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// Request is one completion: a system prompt and one user message.
type Request struct {
	System    string
	Prompt    string
	MaxTokens int
	// JSON asks for a JSON object answer where the API has a switch for it
	// (OpenAI's response_format); the prompt says so either way.
	JSON bool
}

// Usage is what a completion cost.
type Usage struct {
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Response is a completion's text.
type Response struct {
	Text  string
	Model string
	Usage Usage
}

// Provider completes prompts with one model.
type Provider interface {
	// Name is the configured provider's name.
	Name() string
	// Model is the model asked.
	Model() string
	// Complete runs one request. Every error is a transport or provider
	// error (*Error): callers do not retry them (001 "Generation contract").
	Complete(ctx context.Context, r Request) (Response, error)
}

// Error is a failed call: the HTTP status (0 when none came back), and the
// provider's message.
type Error struct {
	Provider string
	Status   int
	Msg      string
	Err      error
}

func (e *Error) Error() string {
	s := e.Provider + ": "
	if e.Status != 0 {
		s += fmt.Sprintf("HTTP %d: ", e.Status)
	}
	s += e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Config configures one provider (one entry of the recall config file).
type Config struct {
	// Name identifies the provider in the config's "use" list.
	Name string `json:"name"`
	// Type is "anthropic" or "openai" (any OpenAI-compatible server).
	Type string `json:"type"`
	// BaseURL: default https://api.anthropic.com for anthropic,
	// https://api.openai.com/v1 for openai (llama.cpp and Ollama serve
	// http://127.0.0.1:PORT/v1).
	BaseURL string `json:"base_url,omitempty"`
	// Model is required.
	Model string `json:"model"`
	// APIKeyEnv names the environment variable holding the key (the key
	// never sits in the file); empty: no key (local servers).
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// TimeoutMS bounds one call (default 60000).
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// Prices in USD per million tokens, for the cost of each attempt.
	InputPerMTok  float64 `json:"input_usd_per_mtok,omitempty"`
	OutputPerMTok float64 `json:"output_usd_per_mtok,omitempty"`
}

// Validate checks c, naming the bad field.
func (c Config) Validate() error {
	switch {
	case c.Name == "":
		return errors.New("name: required")
	case c.Type != "anthropic" && c.Type != "openai":
		return fmt.Errorf("type: %q is not anthropic or openai", c.Type)
	case strings.TrimSpace(c.Model) == "":
		return errors.New("model: required (no model configured)")
	case c.TimeoutMS < 0:
		return errors.New("timeout_ms: must not be negative")
	case c.InputPerMTok < 0 || c.OutputPerMTok < 0:
		return errors.New("prices must not be negative")
	}
	if c.BaseURL != "" && !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		return fmt.Errorf("base_url: %q is not an http(s) URL", c.BaseURL)
	}
	if c.APIKeyEnv != "" && os.Getenv(c.APIKeyEnv) == "" {
		return fmt.Errorf("api_key_env: $%s is not set", c.APIKeyEnv)
	}
	return nil
}

// New returns the client c describes.
func New(c Config) (Provider, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("provider %q: %w", c.Name, err)
	}
	timeout := time.Duration(c.TimeoutMS) * time.Millisecond
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	b := base{cfg: c, key: os.Getenv(c.APIKeyEnv), hc: &http.Client{Timeout: timeout}}
	if c.Type == "anthropic" {
		if b.cfg.BaseURL == "" {
			b.cfg.BaseURL = "https://api.anthropic.com"
		}
		return &Anthropic{b}, nil
	}
	if b.cfg.BaseURL == "" {
		b.cfg.BaseURL = "https://api.openai.com/v1"
	}
	return &OpenAI{b}, nil
}

type base struct {
	cfg Config
	key string
	hc  *http.Client
}

func (b *base) Name() string  { return b.cfg.Name }
func (b *base) Model() string { return b.cfg.Model }

func (b *base) cost(in, out int) float64 {
	return float64(in)*b.cfg.InputPerMTok/1e6 + float64(out)*b.cfg.OutputPerMTok/1e6
}

// post sends body as JSON and decodes a 200 answer into out; any other
// status is an *Error carrying the provider's message.
func (b *base) post(ctx context.Context, url string, headers map[string]string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return &Error{Provider: b.cfg.Name, Msg: "encoding the request", Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return &Error{Provider: b.cfg.Name, Msg: "request", Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return &Error{Provider: b.cfg.Name, Msg: "POST " + url, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return &Error{Provider: b.cfg.Name, Status: resp.StatusCode, Msg: "reading the answer", Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return &Error{Provider: b.cfg.Name, Status: resp.StatusCode, Msg: errorMessage(data)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &Error{Provider: b.cfg.Name, Status: resp.StatusCode, Msg: "the answer is not the API's JSON", Err: err}
	}
	return nil
}

// errorMessage extracts {"error":{"message":…}} (both APIs) or the body.
func errorMessage(data []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// Anthropic is a client of Anthropic's Messages API (POST /v1/messages).
type Anthropic struct{ base }

// Complete implements Provider.
func (a *Anthropic) Complete(ctx context.Context, r Request) (Response, error) {
	if r.MaxTokens <= 0 {
		r.MaxTokens = 1024
	}
	body := map[string]any{
		"model":      a.cfg.Model,
		"max_tokens": r.MaxTokens,
		"messages":   []any{map[string]any{"role": "user", "content": r.Prompt}},
	}
	if r.System != "" {
		body["system"] = r.System
	}
	headers := map[string]string{"anthropic-version": "2023-06-01"}
	if a.key != "" {
		headers["x-api-key"] = a.key
	}
	var out struct {
		Model   string `json:"model"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := a.post(ctx, strings.TrimRight(a.cfg.BaseURL, "/")+"/v1/messages", headers, body, &out); err != nil {
		return Response{}, err
	}
	var text strings.Builder
	for _, c := range out.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	model := out.Model
	if model == "" {
		model = a.cfg.Model
	}
	return Response{Text: text.String(), Model: model, Usage: Usage{InputTokens: out.Usage.InputTokens,
		OutputTokens: out.Usage.OutputTokens, CostUSD: a.cost(out.Usage.InputTokens, out.Usage.OutputTokens)}}, nil
}

// OpenAI is a client of the OpenAI-compatible chat completions API (POST
// {base}/chat/completions).
type OpenAI struct{ base }

// Complete implements Provider.
func (o *OpenAI) Complete(ctx context.Context, r Request) (Response, error) {
	var msgs []any
	if r.System != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": r.System})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": r.Prompt})
	body := map[string]any{"model": o.cfg.Model, "messages": msgs}
	if r.MaxTokens > 0 {
		body["max_tokens"] = r.MaxTokens
	}
	if r.JSON {
		body["response_format"] = map[string]any{"type": "json_object"}
	}
	headers := map[string]string{}
	if o.key != "" {
		headers["Authorization"] = "Bearer " + o.key
	}
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := o.post(ctx, strings.TrimRight(o.cfg.BaseURL, "/")+"/chat/completions", headers, body, &out); err != nil {
		return Response{}, err
	}
	if len(out.Choices) == 0 {
		return Response{}, &Error{Provider: o.cfg.Name, Status: http.StatusOK, Msg: "the answer has no choices"}
	}
	model := out.Model
	if model == "" {
		model = o.cfg.Model
	}
	return Response{Text: out.Choices[0].Message.Content, Model: model, Usage: Usage{InputTokens: out.Usage.PromptTokens,
		OutputTokens: out.Usage.CompletionTokens, CostUSD: o.cost(out.Usage.PromptTokens, out.Usage.CompletionTokens)}}, nil
}
