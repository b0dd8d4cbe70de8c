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
