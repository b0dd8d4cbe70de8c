package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var testConfig = Config{
	Command: "/opt/ctxstore --store sqlite:/p/.ctxstore/store.db claude-code hook",
	Timeout: 10,
	MCP:     &MCPServer{Command: "/opt/ctxstore", Args: []string{"--store", "sqlite:/p/.ctxstore/store.db", "mcp"}},
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func install(t *testing.T, s Scope, c Config) []Change {
	t.Helper()
	ch, err := PlanInstall(s, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(ch); err != nil {
		t.Fatal(err)
	}
	return ch
}

func uninstall(t *testing.T, s Scope) []Change {
	t.Helper()
	ch, err := PlanUninstall(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(ch); err != nil {
		t.Fatal(err)
	}
	return ch
}

// managedEntries counts, per event, the hook entries carrying Marker.
func managedEntries(t *testing.T, settings string) map[string]int {
	t.Helper()
	var s struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(settings), &s); err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for ev, groups := range s.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				if IsManaged(h.Command) {
					if h.Type != "command" || h.Timeout != 10 || !strings.HasPrefix(h.Command, testConfig.Command) {
						t.Errorf("%s: managed entry %+v", ev, h)
					}
					if (ev == "PostToolUse") != (g.Matcher == "*") {
						t.Errorf("%s: matcher %q", ev, g.Matcher)
					}
					n[ev]++
				}
			}
		}
	}
	return n
}

func TestInstallIntoNothingAndBack(t *testing.T) {
	dir := t.TempDir()
	s := ProjectScope(dir)
	ch := install(t, s, testConfig)
	if len(ch) != 2 || ch[0].Before != nil || ch[1].Before != nil {
		t.Fatalf("changes %+v", ch)
	}
	got := managedEntries(t, read(t, s.Settings))
	for _, ev := range Events {
		if got[ev] != 1 {
			t.Errorf("%s: %d managed entries, want 1", ev, got[ev])
		}
	}
	var mcp struct {
		MCPServers map[string]struct {
			Type, Command string
			Args          []string
			Env           map[string]string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(read(t, s.MCP)), &mcp); err != nil {
		t.Fatal(err)
	}
	if e := mcp.MCPServers[MCPName]; e.Command != "/opt/ctxstore" || !reflect.DeepEqual(e.Args, testConfig.MCP.Args) || e.Env[MCPMarkerEnv] == "" {
		t.Errorf(".mcp.json: %+v", mcp)
	}
	if !strings.Contains(read(t, s.Settings), `"enabledMcpjsonServers": [
    "ctxstore"
  ]`) {
		t.Errorf("settings do not enable the server:\n%s", read(t, s.Settings))
	}
	uninstall(t, s)
	for _, p := range []string{s.Settings, s.MCP} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there after uninstall (install created it): %v", p, err)
		}
	}
}

// settingsWithOthers is a settings file as Claude Code writes it, with the
// user's own hooks on events ctxstore uses and on one it does not.
const settingsWithOthers = `{
  "permissions": {
    "allow": [
      "Bash(npm run lint)"
    ],
    "deny": []
  },
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Write|Edit",
        "hooks": [
          {
            "type": "command",
            "command": "npx prettier --write \"$(jq -r .tool_input.file_path)\" && echo ok > /dev/null"
          },
          {
            "type": "command",
            "command": "./scripts/lint.sh",
            "timeout": 30
          }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "./scripts/guard.sh"
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send done"
          }
        ]
      }
    ]
  },
  "enabledMcpjsonServers": [
    "github"
  ],
  "model": "opus",
  "env": {
    "FOO": "<bar> & baz"
  }
}
`

const mcpWithOthers = `{
  "mcpServers": {
    "github": {
      "command": "gh-mcp",
      "args": []
    }
  }
}
`

func TestInstallKeepsEverythingAndUninstallRestoresIt(t *testing.T) {
	dir := t.TempDir()
	s := ProjectScope(dir)
	write(t, s.Settings, settingsWithOthers)
	write(t, s.MCP, mcpWithOthers)
	if err := os.Chmod(s.Settings, 0o600); err != nil {
		t.Fatal(err)
	}
	install(t, s, testConfig)
	after := read(t, s.Settings)
	for _, want := range []string{`"npx prettier --write \"$(jq -r .tool_input.file_path)\" && echo ok > /dev/null"`,
		`"./scripts/lint.sh"`, `"./scripts/guard.sh"`, `"notify-send done"`, `"Bash(npm run lint)"`, `"model": "opus"`,
		`"FOO": "<bar> & baz"`} {
		if !strings.Contains(after, want) {
			t.Errorf("install lost %s:\n%s", want, after)
		}
	}
	if n := managedEntries(t, after); len(n) != len(Events) {
		t.Errorf("managed entries %v", n)
	}
	// The user's groups come first, ctxstore's group after them.
	if i, j := strings.Index(after, "./scripts/lint.sh"), strings.Index(after, Marker); i < 0 || j < i {
		t.Errorf("ctxstore's PostToolUse group is not after the user's")
	}
	var enabled struct{ EnabledMcpjsonServers []string }
	json.Unmarshal([]byte(after), &enabled)
	if !reflect.DeepEqual(enabled.EnabledMcpjsonServers, []string{"github", "ctxstore"}) {
		t.Errorf("enabledMcpjsonServers %v", enabled.EnabledMcpjsonServers)
	}
	if st, _ := os.Stat(s.Settings); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the file's 0600 kept", st.Mode().Perm())
	}
	if !strings.Contains(read(t, s.MCP), `"github"`) {
		t.Errorf(".mcp.json lost the user's server")
	}

	// Installing again changes nothing.
	again, err := PlanInstall(s, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range again {
		if c.Changed() {
			t.Errorf("a second install changes %s:\n%s", c.Path, c.Diff())
		}
	}

	// Uninstall gives back the files byte for byte.
	uninstall(t, s)
	if got := read(t, s.Settings); got != settingsWithOthers {
		t.Errorf("after uninstall:\n%s\nwant:\n%s", got, settingsWithOthers)
	}
	if got := read(t, s.MCP); got != mcpWithOthers {
		t.Errorf(".mcp.json after uninstall:\n%s", got)
	}
	// Uninstalling again finds nothing.
	if ch, err := PlanUninstall(s); err != nil || len(ch) != 0 {
		t.Errorf("second uninstall: %v %+v", err, ch)
	}
}

// TestUninstallKeepsWhatTheUserAddedToOurGroup: a hook the user added to
// ctxstore's matcher group stays (with its group); only the marked entry
// goes.
func TestUninstallKeepsWhatTheUserAddedToOurGroup(t *testing.T) {
	dir := t.TempDir()
	s := ProjectScope(dir)
	install(t, s, Config{Command: testConfig.Command, Timeout: 10})
	var v map[string]any
	json.Unmarshal([]byte(read(t, s.Settings)), &v)
	groups := v["hooks"].(map[string]any)["Stop"].([]any)
	g := groups[0].(map[string]any)
	g["hooks"] = append(g["hooks"].([]any), map[string]any{"type": "command", "command": "say done"})
	b, _ := json.MarshalIndent(v, "", "  ")
	write(t, s.Settings, string(b))
	uninstall(t, s)
	got := read(t, s.Settings)
	if strings.Contains(got, Marker) || !strings.Contains(got, `"say done"`) || strings.Contains(got, "PostToolUse") {
		t.Errorf("after uninstall:\n%s", got)
	}
	if _, err := os.Stat(s.MCP); !os.IsNotExist(err) {
		t.Errorf("install without MCP wrote %s", s.MCP)
	}
}

func TestInstallRefusesAForeignMCPServer(t *testing.T) {
	dir := t.TempDir()
	s := ProjectScope(dir)
	foreign := `{"mcpServers": {"ctxstore": {"command": "my-own-ctxstore"}}}`
	write(t, s.MCP, foreign)
	_, err := PlanInstall(s, testConfig)
	if err == nil || !strings.Contains(err.Error(), s.MCP) || !strings.Contains(err.Error(), "mcpServers.ctxstore") {
		t.Fatalf("install over a foreign server: %v", err)
	}
	if _, err := os.Stat(s.Settings); !os.IsNotExist(err) {
		t.Error("a refused install wrote the settings")
	}
	// Uninstall leaves the foreign server alone.
	if ch, err := PlanUninstall(s); err != nil || len(ch) != 0 {
		t.Errorf("uninstall with a foreign server: %v %+v", err, ch)
	}
}

func TestBadSettingsNameFileAndLine(t *testing.T) {
	dir := t.TempDir()
	s := ProjectScope(dir)
	for _, tc := range []struct{ content, want string }{
		{"{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"Stop\": [,]\n  }\n}\n", "line 4"},
		{"[1, 2]", "want a JSON object"},
		{`{"hooks": []}`, "hooks: want an object"},
		{`{"hooks": {"Stop": {"x": 1}}}`, "hooks.Stop: want an array"},
		{`{"a": 1} {"b": 2}`, "after top-level value"},
		{`{"a": 1, "a": 2}`, `"a" appears twice`},
	} {
		write(t, s.Settings, tc.content)
		_, err := PlanInstall(s, testConfig)
		if err == nil || !strings.Contains(err.Error(), s.Settings) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q naming the file", tc.content, err, tc.want)
		}
		if got := read(t, s.Settings); got != tc.content {
			t.Errorf("a failed install changed the file")
		}
	}
}

func TestUserScopeKeepsClaudeJSON(t *testing.T) {
	home := t.TempDir()
	s := UserScope(home)
	state := `{
  "numStartups": 3,
  "projects": {
    "/x": {
      "allowedTools": []
    }
  },
  "userID": "abc"
}
`
	write(t, s.MCP, state)
	install(t, s, testConfig)
	if strings.Contains(read(t, s.Settings), "enabledMcpjsonServers") {
		t.Error("user scope enables a project server")
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(read(t, s.MCP)), &v); err != nil || v["numStartups"] != 3.0 || v["mcpServers"] == nil {
		t.Errorf("~/.claude.json after install: %v %v", err, v)
	}
	uninstall(t, s)
	if got := read(t, s.MCP); got != state {
		t.Errorf("~/.claude.json after uninstall:\n%s", got)
	}
}

func TestDryRunDiff(t *testing.T) {
	dir := t.TempDir()
	s := ProjectScope(dir)
	write(t, s.Settings, settingsWithOthers)
	ch, err := PlanInstall(s, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	d := ch[0].Diff()
	if !strings.HasPrefix(d, "--- a"+s.Settings+"\n+++ b"+s.Settings+"\n@@ ") {
		t.Errorf("diff header:\n%.200s", d)
	}
	for _, line := range strings.Split(strings.TrimSuffix(d, "\n"), "\n")[2:] {
		if line == "" || !strings.Contains(" +-@", line[:1]) {
			t.Errorf("diff line %q", line)
		}
		// A line goes only to come back with a comma after it.
		if strings.HasPrefix(line, "-") && !strings.Contains(d, "\n+"+line[1:]+",\n") {
			t.Errorf("install removes a line: %q", line)
		}
	}
	if strings.Count(d, Marker) != len(Events) {
		t.Errorf("the diff shows %d managed entries", strings.Count(d, Marker))
	}
	if ch[1].Before != nil || !strings.HasPrefix(ch[1].Diff(), "--- /dev/null\n") {
		t.Errorf(".mcp.json diff:\n%s", ch[1].Diff())
	}
	// Nothing was written.
	if read(t, s.Settings) != settingsWithOthers {
		t.Error("planning wrote the file")
	}
	if _, err := os.Stat(s.MCP); !os.IsNotExist(err) {
		t.Error("planning wrote .mcp.json")
	}
}

// A symlinked settings file (dotfiles kept elsewhere) stays a link through
// install and uninstall: its target gets the change.
func TestApplyKeepsSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "settings.json")
	write(t, target, "{}\n")
	link := filepath.Join(dir, "project", ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, after := range []string{"{\"hooks\":{}}\n", "{}\n"} {
		before, _ := os.ReadFile(link)
		if err := Apply([]Change{{Path: link, Before: before, After: []byte(after)}}); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the settings link after Apply: %v %v", fi, err)
		}
		if b, _ := os.ReadFile(target); string(b) != after {
			t.Fatalf("the link's target: %q, want %q", b, after)
		}
	}
}

// RunHooks is install's hooks object, for a --settings value; Installed
// finds an install's mark in settings files.
func TestRunHooks(t *testing.T) {
	raw, err := RunHooks(Config{Command: "/bin/ctxstore claude-code hook", Timeout: 10})
	if err != nil {
		t.Fatal(err)
	}
	var h map[string][]struct {
		Matcher string `json:"matcher"`
		Hooks   []struct {
			Command string `json:"command"`
			Timeout int    `json:"timeout"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(raw, &h); err != nil || len(h) != len(Events) || h["PostToolUse"][0].Matcher != "*" ||
		h["Stop"][0].Hooks[0].Command != "/bin/ctxstore claude-code hook "+Marker || h["Stop"][0].Hooks[0].Timeout != 10 {
		t.Errorf("RunHooks: %v %s", err, raw)
	}
	if _, err := RunHooks(Config{}); err == nil {
		t.Error("RunHooks with no command")
	}
	dir := t.TempDir()
	plain, marked := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	os.WriteFile(plain, []byte(`{"hooks":{}}`), 0o644)
	os.WriteFile(marked, []byte(`{"hooks":{"Stop":[{"hooks":[{"command":"x `+Marker+`"}]}]}}`), 0o644)
	if Installed(plain, filepath.Join(dir, "none.json")) || !Installed(plain, marked) {
		t.Error("Installed")
	}
}

// TestUserScopeSpillRule: install --user allows Claude Code's Read of the
// spill directory (~/.ctxstore/spill, outside every project) with one
// permission rule beside the user's own, once however often it runs;
// installing without previews takes it out; uninstall removes exactly it
// and restores the file byte for byte. A project's install adds no rule.
func TestUserScopeSpillRule(t *testing.T) {
	home := t.TempDir()
	s := UserScope(home)
	rule := "Read(/" + filepath.ToSlash(home) + "/.ctxstore/spill/**)"
	if got := SpillRule(s.Spill); got != rule {
		t.Fatalf("SpillRule = %q, want %q", got, rule)
	}
	allowed := func() []string {
		t.Helper()
		var v struct {
			Permissions struct{ Allow []string } `json:"permissions"`
		}
		if err := json.Unmarshal([]byte(read(t, s.Settings)), &v); err != nil {
			t.Fatal(err)
		}
		return v.Permissions.Allow
	}
	c := testConfig
	c.AllowSpillRead = true
	write(t, s.Settings, settingsWithOthers)
	install(t, s, c)
	if got := allowed(); !reflect.DeepEqual(got, []string{"Bash(npm run lint)", rule}) {
		t.Errorf("permissions.allow after install: %q", got)
	}
	if !strings.Contains(read(t, s.Settings), `"deny": []`) {
		t.Error("install lost the user's other permissions")
	}
	if ch := install(t, s, c); ch[0].Changed() {
		t.Errorf("installing twice changed the settings:\n%s", ch[0].Diff())
	}
	if got := allowed(); !reflect.DeepEqual(got, []string{"Bash(npm run lint)", rule}) {
		t.Errorf("permissions.allow after a second install: %q", got)
	}
	install(t, s, testConfig) // --no-previews
	if got := allowed(); !reflect.DeepEqual(got, []string{"Bash(npm run lint)"}) {
		t.Errorf("permissions.allow after an install without previews: %q", got)
	}
	install(t, s, c)
	uninstall(t, s)
	if got := read(t, s.Settings); got != settingsWithOthers {
		t.Errorf("settings after uninstall:\n%s", got)
	}

	// Into nothing: the rule is the settings' only permission, and
	// uninstall leaves no file.
	home2 := t.TempDir()
	s2 := UserScope(home2)
	install(t, s2, c)
	var v map[string]any
	json.Unmarshal([]byte(read(t, s2.Settings)), &v)
	if p, _ := v["permissions"].(map[string]any); !reflect.DeepEqual(p, map[string]any{"allow": []any{SpillRule(s2.Spill)}}) {
		t.Errorf("permissions after install into nothing: %v", v["permissions"])
	}
	uninstall(t, s2)
	if _, err := os.Stat(s2.Settings); !os.IsNotExist(err) {
		t.Errorf("settings left after uninstall: %v", err)
	}

	// A project's spill directory is inside it: no rule.
	p := ProjectScope(t.TempDir())
	install(t, p, c)
	if strings.Contains(read(t, p.Settings), "permissions") {
		t.Errorf("a project install wrote a permission:\n%s", read(t, p.Settings))
	}
}
