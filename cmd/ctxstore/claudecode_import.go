package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/integrations/claudecode/hooks"
	"github.com/ctxstore/ctxstore/store"
)

// checkpointPaths are the transcripts a checkpoint imports, in order: the
// session's, the subagent's it ran in, then (catch-up events) every other
// subagent transcript of the session.
func checkpointPaths(c hooks.Checkpoint) []string {
	paths := []string{c.Transcript}
	if c.AgentTranscript != "" {
		paths = append(paths, c.AgentTranscript)
	}
	if c.Subagents {
		more, _ := filepath.Glob(filepath.Join(hooks.SubagentDir(c.Transcript), "agent-*.jsonl"))
		sort.Strings(more)
		for _, p := range more {
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	return paths
}

// missingTranscript says whether the i-th path of c does not exist and is
// to be skipped, or is an error. Claude Code writes the session's
// transcript with the first prompt (SessionStart and the first
// UserPromptSubmit come before it); its own helpers (the compaction agent)
// run SubagentStop with a transcript path it never writes.
func missingTranscript(c hooks.Checkpoint, i int, p string) (bool, error) {
	_, err := os.Stat(p)
	if !errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if i > 0 || c.Event == "SessionStart" || c.Event == "UserPromptSubmit" {
		return true, nil
	}
	return true, fmt.Errorf("transcript %s does not exist", p)
}

// importCheckpoint brings the checkpoint's transcripts into st with the
// transcript import (harness/importer, docs/import.md): the session's
// transcript first (a subagent's chain forks from the commit that spawned
// it), then the subagent's, then, on catch-up events, every subagent
// transcript of the session. Each import adds only what the file gained
// since the last one.
func importCheckpoint(ctx context.Context, st store.Store, c hooks.Checkpoint) (hooks.Result, error) {
	host, _ := os.Hostname()
	im := importer.New(st, importer.Options{As: importer.ClaudeCode, Machine: host, Principal: os.Getenv("CTXSTORE_PRINCIPAL")})
	var res hooks.Result
	var detail []string
	for i, p := range checkpointPaths(c) {
		if skip, err := missingTranscript(c, i, p); skip || err != nil {
			if err != nil {
				return res, err
			}
			continue
		}
		fr, err := im.ImportFile(ctx, p)
		if err != nil {
			return res, err
		}
		if fr.Status == importer.Failed {
			return res, fmt.Errorf("importing %s: %s", p, fr.Error)
		}
		res.Commits += len(fr.Commits)
		detail = append(detail, fmt.Sprintf("%s %s +%d lines, %d commits", filepath.Base(p), fr.Status, fr.NewLines, len(fr.Commits)))
	}
	res.Detail = strings.Join(detail, "; ")
	return res, nil
}

// serviceImporter asks a running ctxstore serve to import the
// checkpoint's transcripts (POST /v1/import with their paths, which must
// lie under the server's --root directories). The service has no request
// that keeps a spilled output, so those go into the store directly
// (store.keep), which is opened only when a run has one.
type serviceImporter struct {
	url, token string
	store      storeImporter
}

// Checkpoint implements hooks.Importer.
func (s serviceImporter) Checkpoint(ctx context.Context, c hooks.Checkpoint) (hooks.Result, error) {
	res := hooks.Result{Via: "service " + s.url}
	var detail []string
	for i, p := range checkpointPaths(c) {
		if skip, err := missingTranscript(c, i, p); skip || err != nil {
			if err != nil {
				return res, err
			}
			continue
		}
		body, _ := json.Marshal(map[string]string{"path": p, "as": string(importer.ClaudeCode), "principal": os.Getenv("CTXSTORE_PRINCIPAL")})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/import", bytes.NewReader(body))
		if err != nil {
			return res, err
		}
		req.Header.Set("Content-Type", "application/json")
		if s.token != "" {
			req.Header.Set("Authorization", "Bearer "+s.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			var op *net.OpError
			if i == 0 && errors.As(err, &op) && op.Op == "dial" {
				return res, fmt.Errorf("service %s: %w (%v)", s.url, hooks.ErrUnreachable, err)
			}
			return res, fmt.Errorf("service %s: %w", s.url, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return res, fmt.Errorf("service %s: importing %s: %s: %s", s.url, p, resp.Status, bytes.TrimSpace(b))
		}
		var r importer.Result
		if err := json.Unmarshal(b, &r); err != nil {
			return res, fmt.Errorf("service %s: answer: %w", s.url, err)
		}
		for _, f := range r.Files {
			if f.Status == importer.Failed {
				return res, fmt.Errorf("service %s: importing %s: %s", s.url, p, f.Error)
			}
			res.Commits += len(f.Commits)
			detail = append(detail, fmt.Sprintf("%s %s +%d lines, %d commits", filepath.Base(f.Path), f.Status, f.NewLines, len(f.Commits)))
		}
	}
	res.Detail = strings.Join(detail, "; ")
	var err error
	if res.Outputs, err = s.store.keep(ctx, c); err != nil {
		return res, fmt.Errorf("keeping spilled outputs in the store: %w", err)
	}
	return res, nil
}
