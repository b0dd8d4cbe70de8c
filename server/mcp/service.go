package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ServiceActivator is Activator through a running `ctxstore serve`
// (docs/service.md): the tool runs in the session the service has open, as
// the harness's own call would, so the service's in-memory session and the
// store stay one. A session the service does not have open is an error.
type ServiceActivator struct {
	// URL is the service's base URL; Token its bearer token, if any.
	URL, Token string
	// Client defaults to one with a 30 s timeout.
	Client *http.Client
}

// Run implements Activator.
func (s ServiceActivator) Run(ctx context.Context, session, tool, id string) (ToolOutcome, error) {
	body, _ := json.Marshal(map[string]any{"args": map[string]any{"id": id}})
	u := strings.TrimRight(s.URL, "/") + "/v1/sessions/" + url.PathEscape(session) + "/tools/" + url.PathEscape(tool)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return ToolOutcome{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	c := s.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return ToolOutcome{}, fmt.Errorf("ctxstore serve at %s is unreachable: %w", s.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return ToolOutcome{}, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Code, Message string }
		if json.Unmarshal(b, &e) == nil && e.Message != "" {
			if e.Code == "session_not_open" {
				return ToolOutcome{}, fmt.Errorf("session %s is not open in ctxstore serve at %s (its harness opens it): %s", session, s.URL, e.Message)
			}
			return ToolOutcome{}, fmt.Errorf("ctxstore serve: %s: %s", e.Code, e.Message)
		}
		return ToolOutcome{}, fmt.Errorf("ctxstore serve answered %s", resp.Status)
	}
	var out ToolOutcome
	if err := json.Unmarshal(b, &out); err != nil {
		return ToolOutcome{}, fmt.Errorf("ctxstore serve: %v", err)
	}
	return out, nil
}
