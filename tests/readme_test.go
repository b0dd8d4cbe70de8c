package tests

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeCommand is one command of a ```sh block of README.md.
type readmeCommand struct {
	line    int
	text    string   // as written, comment removed
	args    []string // split as sh would (quotes removed)
	section string
	bg      bool // ends with &
}

// readmeCommands returns the commands of README.md's sh blocks.
func readmeCommands(t *testing.T) []readmeCommand {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeCommand
	in, section := false, ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "## "):
			section = strings.TrimPrefix(l, "## ")
		case strings.HasPrefix(l, "```sh"):
			in = true
		case strings.HasPrefix(l, "```"):
			in = false
		case in && strings.TrimSpace(l) != "":
			text := l
			if i := strings.Index(text, "  #"); i >= 0 {
				text = text[:i]
			}
			text = strings.TrimSpace(text)
			c := readmeCommand{line: n, text: text, section: section}
			if strings.HasSuffix(text, "&") {
				c.bg, text = true, strings.TrimSpace(strings.TrimSuffix(text, "&"))
			}
			c.args = shellWords(t, text)
			out = append(out, c)
		}
	}
	return out
}

// shellWords splits a command line as sh does for the README's simple
// commands: white space, single and double quotes, $PWD.
func shellWords(t *testing.T, s string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				t.Fatalf("README: unbalanced quote in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// coveredElsewhere are README commands this test does not run, and the
// test that runs each.
var coveredElsewhere = map[string]string{
	"make test":                          ".ci/run runs it on every submission",
	"cd /path/to/ctxstore && make build": "a person's checkout; this test runs make build's binary (bin/ctxstore)",
	"npm install -g @earendil-works/pi-coding-agent@1.6.0": "tests/pi_test.go installs this Pi version from the npm registry (into the cache, not globally)",
	"cd /path/to/your/project":                             "a person's project; the Pi tests run Pi in a temporary project",
	"export ANTHROPIC_API_KEY=...":                         "a person's key; the Pi tests point Pi at a scripted local Messages endpoint",
	"pi -e /path/to/ctxstore/integrations/pi/index.ts":     "tests/pi_test.go drives the real Pi CLI with this extension",
	"npm install -g openclaw@2026.9.6":                     "tests/openclaw_test.go installs this OpenClaw version (and Node 24) from the npm registry (into the cache, not globally)",
	"openclaw plugins install -l /path/to/ctxstore/integrations/openclaw --force --accept-capabilities": "tests/openclaw_test.go installs the plugin with this command",
	`openclaw agent --local --session-id demo --message "read README.md"`:                               "tests/openclaw_test.go runs openclaw agent --local turns against a scripted model",
	"claude mcp add ctxstore -- /path/to/ctxstore/bin/ctxstore --store /path/to/store.db mcp":           "tests/claudecode_mcp_test.go runs the real Claude Code CLI with ctxstore mcp as an MCP server",
	"ctxstore claude-code install --dry-run":                                                            "integrations/claudecode/hooks tests the diff on real settings files",
	"ctxstore claude-code install":                                                                      "tests/claudecode_live_test.go installs into a project and runs the real Claude Code CLI",
	"ctxstore claude-code uninstall":                                                                    "tests/claudecode_live_test.go uninstalls after the session",
	"ctxstore claude-code run -- --model opus":                                                          "tests/claudecode_proxy_test.go runs the real Claude Code CLI through claude-code run (and through claude-code proxy), offline against a scripted Messages endpoint",
}

// Every command README.md shows is run here, as written but for what a
// test cannot share with a person's machine (a free port instead of 7411
// or 3000, a temporary directory instead of /var/lib), or is listed in
// coveredElsewhere with the test that runs it; a new command in the README
// without either fails this test. The demo's output says what the README
// promises.
func TestReadmeCommands(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeCommands(t)
	if len(cmds) < 20 {
		t.Fatalf("only %d commands found in README.md", len(cmds))
	}
	// The commands run as a person runs them in a checkout, but in a
	// temporary directory: make runs the checkout's Makefile there (make
	// -f), so bin/ and .ctxstore/ land in work, not in the checkout.
	work := t.TempDir()
	bin := filepath.Join(work, "bin", "ctxstore")
	storeDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(storeDir, "doc.json"), []byte(`{"xt/id":"note:plan","type":"note","title":"Plan","tags":["a","c"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(storeDir, "docs.jsonl"), []byte(`{"xt/id":"note:b","type":"note","title":"Backlog","tags":["b"]}`+"\n"+`{"xt/id":"note:c","type":"note","title":"Chores","tags":["d"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := os.Environ()
	var filtered []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CTXSTORE_URL=") {
			filtered = append(filtered, kv)
		}
	}
	env = filtered
	ran := 0
	for _, c := range cmds {
		if why, ok := coveredElsewhere[c.text]; ok {
			t.Logf("README line %d: %s: %s", c.line, c.text, why)
			continue
		}
		args := append([]string(nil), c.args...)
		dir := work
		switch {
		case args[0] == "export":
			k, v, _ := strings.Cut(args[1], "=")
			env = append(env, k+"="+v)
			ran++
			continue
		case args[0] == "unset":
			var kept []string
			for _, kv := range env {
				if !strings.HasPrefix(kv, args[1]+"=") {
					kept = append(kept, kv)
				}
			}
			env = kept
			ran++
			continue
		case args[0] == "make":
			args = append([]string{"make", "-f", filepath.Join(repo, "Makefile")}, args[1:]...)
		case args[0] == "bin/ctxstore":
			args[0] = bin
			if c.section == "Using the store" {
				dir = storeDir
				for i, a := range args {
					if a == "ID" {
						args[i] = "note:plan"
					}
				}
			}
		default:
			t.Fatalf("README line %d: %q is neither run by this test nor listed in coveredElsewhere", c.line, c.text)
		}
		if c.section == "XTDB for production" {
			if runXTDBCommand(t, c, args, env) {
				ran++
			}
			continue
		}
		if c.bg {
			runServeCommand(t, c, args, dir, env)
			ran++
			continue
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("README line %d: %s: %v\n%s", c.line, c.text, err, out)
		}
		check(t, c, string(out))
		ran++
	}
	t.Logf("ran %d of %d README commands", ran, len(cmds))
}

// check asserts what the README says a command shows.
func check(t *testing.T, c readmeCommand, out string) {
	t.Helper()
	want := map[string][]string{
		"make demo": {"What the model saw at call", "What collapsed, and why:", "rebase:stale", "whole history:",
			"calls demo", "Result: this session cost", "http://127.0.0.1:7411/inspect/s/demo"},
		"bin/ctxstore sessions":               {"demo", "ctxstore-demo"},
		"bin/ctxstore session show demo":      {"cache breaks by cause:", "expired", "rebase:stale"},
		"bin/ctxstore calls demo":             {"rebase:stale"},
		"bin/ctxstore call demo 15":           {"call 15 of session demo", "break: rebase:stale", "collapsed"},
		"bin/ctxstore call demo 15 --raw":     {"<<system>>\n"},
		"bin/ctxstore call demo 15 --diff 14": {"call 14 -> 15: "},
		"bin/ctxstore object toolu_demo_05":   {"object toolu_demo_05 (toolcall", "demo call"},
		`bin/ctxstore query --where type=note --where 'tags=["a","b"]' --find title --order title --limit 10`: {"Backlog", "Plan"},
	}[c.text]
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("README line %d: %s: output lacks %q:\n%s", c.line, c.text, w, out)
		}
	}
}

// runServeCommand starts `ctxstore serve` as the README does (in the
// background), on a free port, checks the API and the inspector answer, and
// stops it.
func runServeCommand(t *testing.T, c readmeCommand, args []string, dir string, env []string) {
	t.Helper()
	i := slices.Index(args, "serve")
	if i < 0 {
		t.Fatalf("README line %d: a background command that is not serve: %s", c.line, c.text)
	}
	for j := i + 1; j < len(args); j++ {
		if args[j] == "--root" && j+1 < len(args) {
			args[j+1] = dir // a person's project: the test's directory
		}
	}
	args = append(args, "--addr", "127.0.0.1:0")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env = dir, env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("README line %d: %s: no URL: %v\n%s", c.line, c.text, err, stderr.String())
	}
	url := strings.TrimSpace(line)
	for _, p := range []string{"/v1/health", "/inspect/"} {
		res, err := http.Get(url + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("README line %d: %s: GET %s: %d", c.line, c.text, p, res.StatusCode)
		}
	}
}

// runXTDBCommand runs the README's XTDB commands (a JVM: skipped with
// -short, like every XTDB test) with a temporary data directory and a free
// port: the server started in the background, then status against it.
func runXTDBCommand(t *testing.T, c readmeCommand, args []string, env []string) bool {
	t.Helper()
	if testing.Short() {
		t.Logf("README line %d: %s: skipped with -short (starts a JVM)", c.line, c.text)
		return false
	}
	if xtdbReadme.url == "" {
		if len(args) < 3 || args[1] != "xtdb" || args[2] != "serve" {
			t.Fatalf("README line %d: expected xtdb serve first: %s", c.line, c.text)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		for i := range args {
			switch {
			case args[i] == "/var/lib/ctxstore/xtdb":
				args[i] = t.TempDir()
			case args[i] == "3000":
				args[i] = port
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = env
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 30 * time.Second
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cancel()
			cmd.Wait()
		})
		xtdbReadme.url = "http://127.0.0.1:" + port
		deadline := time.Now().Add(5 * time.Minute)
		for {
			res, err := http.Get(xtdbReadme.url + "/_xtdb/status")
			if err == nil {
				res.Body.Close()
				if res.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("README line %d: %s: no XTDB node after 5 minutes:\n%s", c.line, c.text, out.String())
			}
			time.Sleep(time.Second)
		}
		return true
	}
	for i := range args {
		if args[i] == "http://127.0.0.1:3000" {
			args[i] = xtdbReadme.url
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "xtdb") {
		t.Fatalf("README line %d: %s: %v\n%s", c.line, c.text, err, out)
	}
	return true
}

var xtdbReadme struct{ url string }
