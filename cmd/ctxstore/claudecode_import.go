package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/ctxstore/ctxstore/context/harness/claudecode/hooks"
	"github.com/ctxstore/ctxstore/store"
)

// importCheckpoint brings the checkpoint's transcripts into st.
func importCheckpoint(ctx context.Context, st store.Store, c hooks.Checkpoint) (hooks.Result, error) {
	return hooks.Result{}, errors.New("this build has no Claude Code transcript import yet")
}

// serviceImporter posts the checkpoint to a running ctxstore serve.
type serviceImporter struct {
	url, token string
}

// Checkpoint implements hooks.Importer.
func (s serviceImporter) Checkpoint(ctx context.Context, c hooks.Checkpoint) (hooks.Result, error) {
	body, _ := json.Marshal(c)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/claude-code/checkpoint", bytes.NewReader(body))
	if err != nil {
		return hooks.Result{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return hooks.Result{}, fmt.Errorf("service %s: %w (%v)", s.url, hooks.ErrUnreachable, err)
		}
		return hooks.Result{}, fmt.Errorf("service %s: %w", s.url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return hooks.Result{}, fmt.Errorf("service %s: %s: %s", s.url, resp.Status, bytes.TrimSpace(b))
	}
	var r hooks.Result
	if err := json.Unmarshal(b, &r); err != nil {
		return hooks.Result{}, fmt.Errorf("service %s: answer: %w", s.url, err)
	}
	r.Via = "service " + s.url
	return r, nil
}
