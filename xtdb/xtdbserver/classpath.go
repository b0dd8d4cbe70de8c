package xtdbserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ctxstore/ctxstore/internal/filelock"
)

// Version is the XTDB version this package runs.
const Version = "1.24.5"

//go:embed jvm
var jvmFS embed.FS

// aotNamespaces are compiled ahead of time by EnsureClasspath (with everything they
// load); it halves the node's start time. Namespaces not covered load from source.
var aotNamespaces = []string{
	"ctxstore.xtdb-http", "xtdb.node", "xtdb.rocksdb", "xtdb.mem-kv",
	"xtdb.kv.index-store", "xtdb.kv.tx-log", "xtdb.kv.document-store", "xtdb.query",
	"xtdb.tx", "xtdb.cache", "xtdb.tx.event", "xtdb.document-store", "xtdb.tx.subscribe",
	"xtdb.jdbc", "xtdb.jdbc.psql", "ctxstore.xtdb-docs", "ctxstore.xtdb-txlog", "ctxstore.xtdb-fixes",
}

// DefaultCacheDir is the cache directory used when none is given:
// $CTXSTORE_CACHE/xtdb-1.24.5 if CTXSTORE_CACHE is set, else
// os.UserCacheDir()/ctxstore/xtdb-1.24.5.
func DefaultCacheDir() (string, error) {
	if d := os.Getenv("CTXSTORE_CACHE"); d != "" {
		return filepath.Join(d, "xtdb-"+Version), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("xtdbserver: no cache directory: %w", err)
	}
	return filepath.Join(d, "ctxstore", "xtdb-"+Version), nil
}

// EnsureClasspath prepares everything needed to run XTDB in cacheDir ("" means
// DefaultCacheDir) and returns the java classpath (os.PathListSeparator-separated).
//
// On first use it writes the embedded pom.xml and settings.xml, runs
// `mvn -q -B -Dstyle.color=never -s settings.xml dependency:build-classpath -Dmdep.outputFile=cp.txt`
// (jars go to the user's Maven repository, ~/.m2), then extracts ctxstore's
// HTTP front (jvm/clj) and AOT-compiles it with the XTDB
// namespaces into cacheDir/jvm-<hash>. Later calls reuse cp.txt when every jar on it
// still exists, and the jvm-<hash> directory when it is complete. An exclusive lock
// on cacheDir/.lock serialises concurrent callers, across processes too.
//
// progress, if not nil, receives a line per slow step and the tools' output.
// Errors name the step that failed and end with the tail of the tool's output.
func EnsureClasspath(ctx context.Context, cacheDir string, progress io.Writer) (string, error) {
	if cacheDir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return "", err
		}
		cacheDir = d
	}
	cacheDir, err := filepath.Abs(cacheDir)
	if err != nil {
		return "", fmt.Errorf("xtdbserver: cache dir: %w", err)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("xtdbserver: cache dir: %w", err)
	}
	if progress == nil {
		progress = io.Discard
	}
	unlock, err := filelock.Lock(ctx, filepath.Join(cacheDir, ".lock"))
	if err != nil {
		return "", fmt.Errorf("xtdbserver: locking %s: %w", cacheDir, err)
	}
	defer unlock()

	mvnCP, err := ensureMaven(ctx, cacheDir, progress)
	if err != nil {
		return "", err
	}
	dir, err := ensureJVM(ctx, cacheDir, mvnCP, progress)
	if err != nil {
		return "", err
	}
	return joinPath(filepath.Join(dir, "aot"), filepath.Join(dir, "clj"), mvnCP), nil
}

// ensureMaven returns the Maven classpath from cacheDir/cp.txt, resolving it first
// when cp.txt is missing, stale (pom changed) or names a jar that no longer exists.
func ensureMaven(ctx context.Context, cacheDir string, progress io.Writer) (string, error) {
	cpFile := filepath.Join(cacheDir, "cp.txt")
	for _, name := range []string{"pom.xml", "settings.xml"} {
		changed, err := writeIfChanged(filepath.Join(cacheDir, name), mustRead("jvm/"+name))
		if err != nil {
			return "", fmt.Errorf("xtdbserver: writing %s: %w", name, err)
		}
		if changed {
			_ = os.Remove(cpFile)
		}
	}
	if cp, ok := readClasspathFile(cpFile); ok {
		return cp, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("xtdbserver: Maven (mvn) is needed to fetch the XTDB jars: %w", err)
	}
	fmt.Fprintf(progress, "xtdbserver: resolving XTDB %s jars with Maven into %s (first run only)\n", Version, cacheDir)
	out := newTail(8 << 10)
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-Dstyle.color=never", "-s", "settings.xml",
		"dependency:build-classpath", "-Dmdep.outputFile=cp.txt")
	cmd.Dir = cacheDir
	cmd.Stdout = io.MultiWriter(out, progress)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("xtdbserver: mvn dependency:build-classpath in %s failed: %v\n%s", cacheDir, err, out)
	}
	cp, ok := readClasspathFile(cpFile)
	if !ok {
		return "", fmt.Errorf("xtdbserver: mvn succeeded but %s is missing or names missing jars\n%s", cpFile, out)
	}
	return cp, nil
}

// readClasspathFile reports the classpath in file and whether it is usable: not
// empty, and every entry exists.
func readClasspathFile(file string) (string, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", false
	}
	cp := strings.TrimSpace(string(b))
	if cp == "" {
		return "", false
	}
	for _, p := range filepath.SplitList(cp) {
		if _, err := os.Stat(p); err != nil {
			return "", false
		}
	}
	return cp, true
}

// ensureJVM returns cacheDir/jvm-<hash of the embedded files>, building it when
// needed: clj/ (ctxstore's HTTP front), aot/ (compiled Clojure).
// A directory is complete when it holds the "ok" stamp; building happens in a
// ".tmp" sibling that is renamed at the end.
func ensureJVM(ctx context.Context, cacheDir, mvnCP string, progress io.Writer) (string, error) {
	dir := filepath.Join(cacheDir, "jvm-"+embeddedHash())
	if _, err := os.Stat(filepath.Join(dir, "ok")); err == nil {
		return dir, nil
	}
	fmt.Fprintf(progress, "xtdbserver: compiling the XTDB node and its HTTP front into %s (first run only)\n", dir)
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", fmt.Errorf("xtdbserver: %w", err)
	}
	if err := extract(tmp); err != nil {
		return "", fmt.Errorf("xtdbserver: extracting the HTTP front: %w", err)
	}
	java, err := findJDKTool("java")
	if err != nil {
		return "", err
	}
	aot := filepath.Join(tmp, "aot")
	if err := os.MkdirAll(aot, 0o755); err != nil {
		return "", fmt.Errorf("xtdbserver: %w", err)
	}
	expr := "(binding [*compile-path* (System/getProperty \"xtdbserver.aot\")] (doseq [n '[" +
		strings.Join(aotNamespaces, " ") + "]] (compile n)))"
	cp := joinPath(aot, filepath.Join(tmp, "clj"), mvnCP)
	if err := runTool(ctx, tmp, progress, java, "-Dxtdbserver.aot="+aot, "-cp", cp, "clojure.main", "-e", expr); err != nil {
		return "", fmt.Errorf("xtdbserver: AOT compilation of the XTDB namespaces failed: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "ok"), nil, 0o644); err != nil {
		return "", fmt.Errorf("xtdbserver: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("xtdbserver: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("xtdbserver: %w", err)
	}
	return dir, nil
}

// runTool runs a command in dir; its error carries the tail of the output.
func runTool(ctx context.Context, dir string, progress io.Writer, name string, args ...string) error {
	out := newTail(8 << 10)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Stdout = io.MultiWriter(out, progress)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v\n%s", filepath.Base(name), err, out)
	}
	return nil
}

// findJDKTool finds a JDK executable in PATH, else in $JAVA_HOME/bin.
func findJDKTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("xtdbserver: %s not found in PATH or $JAVA_HOME/bin (a JDK is needed)", name)
}

// extract writes the embedded jvm/clj tree (ctxstore's HTTP front) under dst.
func extract(dst string) error {
	return fs.WalkDir(jvmFS, "jvm", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, "jvm/")
		if !strings.HasPrefix(rel, "clj/") || d.IsDir() {
			return nil
		}
		target := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, mustRead(p), 0o644)
	})
}

// embeddedHash identifies the embedded jvm tree (names and contents) and the AOT list.
func embeddedHash() string {
	var names []string
	_ = fs.WalkDir(jvmFS, "jvm", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(mustRead(n)))
		h.Write(mustRead(n))
	}
	fmt.Fprint(h, strings.Join(aotNamespaces, " "))
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func mustRead(name string) []byte {
	b, err := jvmFS.ReadFile(path.Clean(name))
	if err != nil {
		panic("xtdbserver: embedded file missing: " + name)
	}
	return b
}

// writeIfChanged writes data to file unless it already holds exactly data.
func writeIfChanged(file string, data []byte) (bool, error) {
	old, err := os.ReadFile(file)
	if err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, os.WriteFile(file, data, 0o644)
}

func joinPath(parts ...string) string {
	return strings.Join(parts, string(os.PathListSeparator))
}
