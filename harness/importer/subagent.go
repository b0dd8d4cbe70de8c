package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// subagentMeta is the sidecar of a 2.1.x sub-agent transcript
// (<session>/subagents/agent-<id>.meta.json).
type subagentMeta struct {
	AgentType   string `json:"agentType"`
	Description string `json:"description"`
	ToolUseID   string `json:"toolUseId"`
	Model       string `json:"model"`
}

// subagent prepares the first import of a Claude Code 2.1.x sub-agent file
// (<dir>/<session>/subagents/agent-<id>.jsonl): its chain forks at the
// commit of the parent session that spawned it, found through the parent
// file's cursor (the Task/Agent call whose result names the agent, or the
// one the .meta.json names); the parent file is imported first when it
// has not been. The sidecar's agentType is the commits' template.
func (w *walk) subagent() error {
	dir := filepath.Dir(w.path)
	base := filepath.Base(w.path)
	if filepath.Base(dir) != "subagents" || !strings.HasPrefix(base, "agent-") || !strings.HasSuffix(base, ".jsonl") {
		return nil
	}
	agent := strings.TrimSuffix(strings.TrimPrefix(base, "agent-"), ".jsonl")
	sessDir := filepath.Dir(dir)
	session := filepath.Base(sessDir)
	parentFile := filepath.Join(filepath.Dir(sessDir), session+".jsonl")
	var meta subagentMeta
	metaFile := strings.TrimSuffix(w.path, ".jsonl") + ".meta.json"
	if w.im.opts.Allow != nil && w.im.opts.Allow(metaFile) != nil {
		metaFile = "" // outside what the importer may read: as if absent
	}
	if b, err := os.ReadFile(metaFile); metaFile != "" && err == nil {
		if err := json.Unmarshal(b, &meta); err != nil {
			w.problem(0, "%s.meta.json does not decode: %v; not read", strings.TrimSuffix(base, ".jsonl"), err)
		}
	}
	w.cur.Template = meta.AgentType
	if w.cur.Harness == Auto {
		w.cur.Harness = ClaudeCode
	}
	if _, err := os.Stat(parentFile); err != nil {
		w.problem(0, "the parent session's file %s is not there; the sub-agent's chain is a root", parentFile)
		return nil
	}
	pc, err := w.im.readCursor(w.ctx, CursorID(parentFile))
	if err != nil {
		return err
	}
	if pc == nil {
		if _, err := w.im.ImportFile(w.ctx, parentFile); err != nil {
			return err
		}
		if pc, err = w.im.readCursor(w.ctx, CursorID(parentFile)); err != nil || pc == nil {
			return err
		}
	}
	spawn := pc.Spawns[agent]
	if spawn == "" && meta.ToolUseID != "" {
		spawn = pc.Tasks[meta.ToolUseID]
	}
	if spawn == "" {
		spawn = pc.MainTip
		w.problem(0, "no Task/Agent call of %s names agent %s (yet); forked at the session's last commit %s", parentFile, agent, spawn)
	}
	w.cur.Parent, w.cur.MainTip, w.cur.Session = spawn, spawn, pc.Session
	w.res.Parent = spawn
	return nil
}

// spawned links the first import of a file whose codec named the session
// that spawned it (ImportState.SpawnedBy: a Codex sub-agent's rollout) as
// a Claude Code sub-agent file is linked: its chain forks at the parent
// file's commit holding the call whose result names the sub-agent (the
// parent's file is imported first when it has not been), else at the
// parent's last commit, reported.
func (w *walk) spawned() error {
	sp := w.cur.SpawnedBy
	w.cur.SpawnedBy = nil
	parentFile := ""
	if sp.File != nil {
		parentFile = sp.File(w.path)
	}
	if parentFile == "" {
		w.problem(0, "the file of the parent session %s is not found; the sub-agent's chain is a root", sp.Parent)
		return nil
	}
	if w.im.opts.Allow != nil && w.im.opts.Allow(parentFile) != nil {
		w.problem(0, "the parent session's file %s is outside what the import may read; the sub-agent's chain is a root", parentFile)
		return nil
	}
	pc, err := w.im.readCursor(w.ctx, CursorID(parentFile))
	if err != nil {
		return err
	}
	if pc == nil {
		if _, err := w.im.ImportFile(w.ctx, parentFile); err != nil {
			return err
		}
		if pc, err = w.im.readCursor(w.ctx, CursorID(parentFile)); err != nil || pc == nil {
			return err
		}
	}
	spawn := pc.Spawns[sp.Agent]
	if spawn == "" {
		spawn = pc.MainTip
		if spawn == "" {
			spawn = pc.Tip
		}
		w.problem(0, "no call of %s names sub-agent %s (yet); forked at the session's last commit %s", parentFile, sp.Agent, spawn)
	}
	w.cur.Parent = spawn
	w.res.Parent = spawn
	return nil
}
