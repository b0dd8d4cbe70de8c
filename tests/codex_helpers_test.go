package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// codexVersion is the Codex CLI the tests run (@openai/codex; its binary
// comes in the platform package @openai/codex-linux-x64, which npm
// installs with it).
const codexVersion = "0.171.0"

// codexCLI returns the codex launcher (@openai/codex codexVersion,
// installed by npmTool into the cache's codex-<version> on first use).
func codexCLI(t testing.TB) string {
	t.Helper()
	dir := npmTool(t, "codex-"+codexVersion, "@openai/codex@"+codexVersion)
	return filepath.Join(dir, "node_modules", ".bin", "codex")
}

// responsesRequest is what the tests read of a Responses API request.
type responsesRequest struct {
	Model string `json:"model"`
	Input []struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		CallID    string          `json:"call_id"`
		Output    json.RawMessage `json:"output"`
	} `json:"input"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// responsesText is a content value's text: a string or a list of parts.
func responsesText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// scriptedResponses is an offline model behind OpenAI's Responses API
// (POST /v1/responses, streamed as server-sent events), for Codex: each
// request is appended, as sent, to a JSON Lines log and answered with the
// step respond chooses (text, or a function call).
type scriptedResponses struct {
	t       testing.TB
	srv     *httptest.Server
	log     string
	mu      sync.Mutex
	n       int
	respond func(responsesRequest) piStep
	// tokens, when set, is the input token count a response reports
	// (default: the request's bytes / 4).
	tokens func(responsesRequest) int
}

func startScriptedResponses(t testing.TB, log string, respond func(responsesRequest) piStep) *scriptedResponses {
	t.Helper()
	m := &scriptedResponses{t: t, log: log, respond: respond}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *scriptedResponses) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		http.Error(w, `{"error":{"type":"not_found","message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	n := m.n
	m.n++
	f, err := os.OpenFile(m.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err == nil {
		var compact bytes.Buffer
		if err = json.Compact(&compact, body); err == nil {
			_, err = f.Write(append(compact.Bytes(), '\n'))
		}
		f.Close()
	}
	m.mu.Unlock()
	if err != nil {
		m.t.Errorf("scripted Responses log: %v", err)
	}
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	step := m.respond(req)
	inTokens := len(body) / 4
	if m.tokens != nil {
		inTokens = m.tokens(req)
	}
	var item map[string]any
	if step.Tool != "" {
		args, _ := json.Marshal(step.Args)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", n), "name": step.Tool, "arguments": string(args), "call_id": step.ID}
		if ns, name, ok := strings.Cut(step.Tool, "."); ok {
			// A tool of a namespace (multi_agent_v1.spawn_agent).
			item["namespace"], item["name"] = ns, name
		}
	} else {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n), "role": "assistant", "status": "completed",
			"content": []map[string]any{{"type": "output_text", "text": step.Text, "annotations": []any{}}}}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(event string, data map[string]any) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	}
	id := fmt.Sprintf("resp_%d", n)
	send("response.created", map[string]any{"response": map[string]any{"id": id}})
	send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	send("response.completed", map[string]any{"response": map[string]any{"id": id, "usage": map[string]any{
		"input_tokens": inTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 1, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": inTokens + 1}}})
}

// cxScript answers a Responses request by the newest user message holding
// one of the markers: the marker's steps, one per function call output
// after that message.
func cxScript(legs map[string][]piStep) func(responsesRequest) piStep {
	return func(req responsesRequest) piStep {
		for i := len(req.Input) - 1; i >= 0; i-- {
			in := req.Input[i]
			if in.Type != "message" || in.Role != "user" {
				continue
			}
			text := responsesText(in.Content)
			for marker, steps := range legs {
				if !strings.Contains(text, marker) {
					continue
				}
				outputs := 0
				for _, x := range req.Input[i+1:] {
					if x.Type == "function_call_output" {
						outputs++
					}
				}
				return steps[min(outputs, len(steps)-1)]
			}
		}
		return piStep{Text: "ok"}
	}
}

// cxRequestText flattens a logged Responses request's input: one line per
// item (message text by role, function call name and arguments, output).
func cxRequestText(t *testing.T, line []byte) string {
	t.Helper()
	var req responsesRequest
	if err := json.Unmarshal(line, &req); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, x := range req.Input {
		switch x.Type {
		case "message":
			fmt.Fprintf(&b, "%s text: %s\n", x.Role, responsesText(x.Content))
		case "function_call":
			fmt.Fprintf(&b, "function_call %s %s: %s\n", x.CallID, x.Name, x.Arguments)
		case "function_call_output":
			fmt.Fprintf(&b, "function_call_output %s: %s\n", x.CallID, responsesText(x.Output))
		default:
			fmt.Fprintf(&b, "%s\n", x.Type)
		}
	}
	return b.String()
}

// cxRequestWith returns the input (cxRequestText) of the first logged
// request that holds marker.
func cxRequestWith(t *testing.T, log, marker string) string {
	t.Helper()
	return requestWith(t, log, marker, cxRequestText)
}

// codexHome makes a CODEX_HOME whose config points Codex at endpoint (a
// model provider speaking the Responses API, no websockets), runs
// commands without a sandbox or approvals, and turns off what would reach
// the network.
func codexHome(t testing.TB, dir, endpoint string) {
	t.Helper()
	cfg := fmt.Sprintf(`model = "scripted-1"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.scripted]
name = "scripted"
base_url = "%s/v1"
env_key = "CTXSTORE_SCRIPTED_KEY"
wire_api = "responses"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0
`, endpoint)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runCodex runs the real Codex CLI non-interactively (codex exec ...) in
// dir with CODEX_HOME home and HOME homeDir, and returns what it printed.
func runCodex(t *testing.T, dir, home, homeDir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codexCLI(t), append([]string{"exec", "--skip-git-repo-check"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(xhEnvWithout("CODEX_HOME", "OPENAI_API_KEY", "OPENAI_BASE_URL"), "CODEX_HOME="+home, "HOME="+homeDir,
		"CTXSTORE_SCRIPTED_KEY=offline-test", "CTXSTORE_SERVICE_URL=")
	cmd.Stdin = strings.NewReader("")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("codex %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out) + stderr.String()
}
