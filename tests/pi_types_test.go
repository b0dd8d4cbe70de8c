package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/ctxstore/ctxstore/server/httpapi"
)

// TestPiScriptedModelTypes type-checks the scripted model the Pi tests load
// with TypeScript (strict) against the declarations of Pi piVersion: Pi
// loads it with jiti, which strips types without checking them. The
// integrations themselves are type-checked by `make typecheck`
// (scripts/typecheck.sh), with their own tsconfig.json files.
func TestPiScriptedModelTypes(t *testing.T) {
	t.Parallel()
	cli := piCLI(t)
	piModules := filepath.Join(filepath.Dir(cli), "..", "..", "..")
	tsc := npmTool(t, "tsc-5.9.3", "typescript@5.9.3", "@types/node@20.19.43")
	cfg := map[string]any{
		"compilerOptions": map[string]any{
			"target": "es2022", "module": "nodenext", "moduleResolution": "nodenext", "strict": true,
			"noEmit": true, "skipLibCheck": true, "types": []string{"node"},
			"typeRoots": []string{filepath.Join(tsc, "node_modules", "@types")},
			"baseUrl":   ".",
			"paths": map[string]any{
				"@earendil-works/*": []string{filepath.Join(piModules, "@earendil-works", "*")},
				"typebox":           []string{filepath.Join(piModules, "typebox")},
			},
		},
		"files": []string{repoPath(t, "tests/testdata/pi/scripted-model.ts"), repoPath(t, "tests/testdata/pi/redact.ts")},
	}
	dir := t.TempDir()
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "tsconfig.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nodeBin(t), filepath.Join(tsc, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("tsc: %v\n%s", err, out)
	}
}

// TestPluginPackages checks what the integrations' package files must
// agree on with the rest of the project: each plugin is type-checked
// against the harness release the end-to-end tests drive (its package.json
// pins piVersion or openclawVersion, and scripts/typecheck.sh installs
// OpenClaw under the Node openclawNode, as the tests do), and the OpenClaw
// manifest's contracts.tools, which OpenClaw reads before it loads the
// plugin, names exactly the tools the plugin registers from GET /v1/tools
// (every tool but the one whose role is read).
func TestPluginPackages(t *testing.T) {
	dev := func(dir string) map[string]string {
		var p struct {
			DevDependencies map[string]string `json:"devDependencies"`
		}
		b, err := os.ReadFile(repoPath(t, filepath.Join(dir, "package.json")))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("%s/package.json: %v", dir, err)
		}
		return p.DevDependencies
	}
	if v := dev("integrations/pi")["@earendil-works/pi-coding-agent"]; v != piVersion {
		t.Errorf("integrations/pi/package.json pins Pi %q, the tests drive %s", v, piVersion)
	}
	if v := dev("integrations/openclaw")["openclaw"]; v != openclawVersion {
		t.Errorf("integrations/openclaw/package.json pins OpenClaw %q, the tests drive %s", v, openclawVersion)
	}
	script, err := os.ReadFile(repoPath(t, "scripts/typecheck.sh"))
	if err != nil {
		t.Fatal(err)
	}
	node := ""
	if m := regexp.MustCompile(`(?m)^openclaw_node=(\S+)$`).FindSubmatch(script); m != nil {
		node = string(m[1])
	}
	if node != openclawNode {
		t.Errorf("scripts/typecheck.sh installs OpenClaw under Node %q, the tests under %s", node, openclawNode)
	}

	var manifest struct {
		Contracts struct {
			Tools []string `json:"tools"`
		} `json:"contracts"`
	}
	b, err := os.ReadFile(repoPath(t, "integrations/openclaw/openclaw.plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatal(err)
	}
	var registered []string
	for _, d := range httpapi.ToolDefinitions() {
		if d.Role != "read" {
			registered = append(registered, d.Name)
		}
	}
	got := slices.Sorted(slices.Values(manifest.Contracts.Tools))
	if slices.Sort(registered); !slices.Equal(got, registered) {
		t.Errorf("openclaw.plugin.json's contracts.tools are %v; the plugin registers %v", got, registered)
	}
}
