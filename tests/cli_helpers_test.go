package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// ctxstoreBin is the CLI binary TestMain builds once for the package.
var ctxstoreBin string

func TestMain(m *testing.M) {
	// The crash test re-executes this binary as a writer process.
	if path := os.Getenv(crashHelperEnv); path != "" {
		os.Exit(crashHelper(path))
	}
	// The session end-to-end test re-executes it as an agent process.
	if url := os.Getenv(sessionAgentEnv); url != "" {
		os.Exit(sessionAgent(url))
	}
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ctxstore-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctxstoreBin = filepath.Join(dir, "ctxstore")
	build := exec.Command("go", "build", "-o", ctxstoreBin, "./cmd/ctxstore")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building ctxstore: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	if openclawInstalled.home != "" {
		os.RemoveAll(openclawInstalled.home)
	}
	if err := xtdbtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the XTDB server:", err)
	}
	return code
}

// result is what one CLI run produced.
type result struct {
	code           int
	stdout, stderr string
}

// cli runs the binary in a temporary working directory.
type cli struct {
	t   *testing.T
	dir string // working directory
	env []string
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CTXSTORE_URL=") {
			env = append(env, kv)
		}
	}
	return &cli{t: t, dir: t.TempDir(), env: env}
}

// path returns a path in the working directory.
func (c *cli) path(name string) string { return filepath.Join(c.dir, name) }

// write creates a file in the working directory and returns its path.
func (c *cli) write(name, content string) string {
	c.t.Helper()
	p := c.path(name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// run runs ctxstore with args and stdin.
func (c *cli) run(stdin string, args ...string) result {
	c.t.Helper()
	cmd := exec.Command(ctxstoreBin, args...)
	cmd.Dir = c.dir
	cmd.Env = c.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			c.t.Fatalf("running ctxstore %q: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// ok runs ctxstore and fails the test unless it exits 0.
func (c *cli) ok(stdin string, args ...string) string {
	c.t.Helper()
	r := c.run(stdin, args...)
	if r.code != 0 {
		c.t.Fatalf("ctxstore %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	if r.stderr != "" {
		c.t.Errorf("ctxstore %s: unexpected stderr: %s", strings.Join(args, " "), r.stderr)
	}
	return r.stdout
}

// fail runs ctxstore, expects exit code and stderr holding every one of
// want, and returns the result.
func (c *cli) fail(code int, stdin string, args []string, want ...string) result {
	c.t.Helper()
	r := c.run(stdin, args...)
	if r.code != code {
		c.t.Errorf("ctxstore %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	if !strings.HasPrefix(r.stderr, "ctxstore: ") {
		c.t.Errorf("ctxstore %s: stderr %q does not start with \"ctxstore: \"", strings.Join(args, " "), r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			c.t.Errorf("ctxstore %s: stderr %q lacks %q", strings.Join(args, " "), r.stderr, w)
		}
	}
	return r
}

// jsonOut runs ctxstore with --json and decodes its stdout into v.
func (c *cli) jsonOut(v any, stdin string, args ...string) {
	c.t.Helper()
	out := c.ok(stdin, append([]string{"--json"}, args...)...)
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		c.t.Errorf("ctxstore --json %s: output is not one line: %q", strings.Join(args, " "), out)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	reflect.ValueOf(v).Elem().SetZero() // decode afresh, not into old maps
	if err := dec.Decode(v); err != nil {
		c.t.Fatalf("ctxstore --json %s: decoding %q: %v", strings.Join(args, " "), out, err)
	}
}
