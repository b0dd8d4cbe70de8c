package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPiExtensionTypes type-checks the Pi extension and the scripted model
// with TypeScript (strict) against the declarations of Pi piVersion: Pi loads
// them with jiti, which strips types without checking them.
func TestPiExtensionTypes(t *testing.T) {
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
		"files": []string{repoPath(t, "integrations/pi/index.ts"), repoPath(t, "tests/testdata/pi/scripted-model.ts")},
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

// TestOpenClawPluginTypes type-checks the OpenClaw plugin with TypeScript
// (strict): OpenClaw loads it with jiti, which strips types without
// checking them. The plugin imports nothing of OpenClaw's (its API object is
// typed loosely), so Node's declarations suffice.
func TestOpenClawPluginTypes(t *testing.T) {
	t.Parallel()
	tsc := npmTool(t, "tsc-5.9.3", "typescript@5.9.3", "@types/node@20.19.43")
	cfg := map[string]any{
		"compilerOptions": map[string]any{
			"target": "es2022", "module": "nodenext", "moduleResolution": "nodenext", "strict": true,
			"noEmit": true, "skipLibCheck": true, "types": []string{"node"},
			"typeRoots": []string{filepath.Join(tsc, "node_modules", "@types")},
		},
		"files": []string{repoPath(t, "integrations/openclaw/index.ts")},
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
