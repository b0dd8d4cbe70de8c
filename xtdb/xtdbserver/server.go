package xtdbserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultJVMArgs are the JVM flags used when Options.JVMArgs is nil: a small heap
// and C1-only JIT, which start the node about twice as fast as the defaults.
var DefaultJVMArgs = []string{"-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}

// Options configure Start. The zero value starts an in-memory node on a free port.
type Options struct {
	// Port is the HTTP port, bound on 127.0.0.1 only. 0 picks a free port.
	Port int
	// DataDir "" keeps everything in memory. Otherwise tx-log, document-store and
	// index-store are RocksDB stores in DataDir/{tx-log,documents,indexes}, so a
	// later Start on the same DataDir sees the same data.
	DataDir string
	// Postgres, when set, makes a cluster node: the tx log and the document
	// store are tables in that PostgreSQL database (shared by every node of
	// the cluster) and the index is local RocksDB in DataDir/indexes (a
	// temporary directory when DataDir is ""). See docs/xtdb-cluster.md.
	Postgres *Postgres
	// ConfigFile, when set, is an XTDB node config (EDN) used as it is;
	// DataDir and Postgres are then ignored.
	ConfigFile string
	// CacheDir is passed to EnsureClasspath ("" = DefaultCacheDir).
	CacheDir string
	// Java is the java executable; "" means "java" from PATH.
	Java string
	// JVMArgs are extra JVM flags; nil means DefaultJVMArgs.
	JVMArgs []string
	// Log receives the server's stdout and stderr (and EnsureClasspath's progress);
	// nil discards them. The last 16 KiB are kept for error messages either way.
	Log io.Writer
	// StartTimeout bounds the wait for /_xtdb/status to answer 200 once the JVM
	// runs; 0 means 120s.
	StartTimeout time.Duration
}

// Server is a running XTDB node with its HTTP API, started by Start.
type Server struct {
	url     string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done is closed
	tmpDir  string
	tail    *tailBuffer

	stopOnce sync.Once
	stopErr  error
}

// URL returns the base URL, e.g. "http://127.0.0.1:41234" (no trailing slash);
// the API is under URL()+"/_xtdb/".
func (s *Server) URL() string { return s.url }

// Start runs EnsureClasspath, writes an EDN node config into a temp dir and starts
//
//	java <JVMArgs> --add-opens java.base/java.util.concurrent=ALL-UNNAMED -cp <cp> clojure.main -m ctxstore.xtdb-http <config> <port>
//
// with MALLOC_ARENA_MAX=2, in its own process group. It returns once
// GET /_xtdb/status answers 200, and fails early, with the tail of the server's
// output, if the process exits first. ctx bounds only the start: the server runs
// until Stop. The caller must call Stop (in tests: t.Cleanup(func() { s.Stop() })).
// With Port 0, a start that loses the race for the chosen port is retried on
// another port.
func Start(ctx context.Context, opts Options) (*Server, error) {
	cp, err := EnsureClasspath(ctx, opts.CacheDir, opts.Log)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		port := opts.Port
		if port == 0 {
			if port, err = freePort(); err != nil {
				return nil, err
			}
		} else if !portFree(port) {
			return nil, fmt.Errorf("xtdbserver: port %d on 127.0.0.1 is already in use", port)
		}
		s, err := startOnce(ctx, opts, cp, port)
		if err != nil && opts.Port == 0 && attempt < 3 && errors.Is(err, errAddrInUse) {
			continue
		}
		return s, err
	}
}

var errAddrInUse = errors.New("address already in use")

func startOnce(ctx context.Context, opts Options, cp string, port int) (*Server, error) {
	tmpDir, err := os.MkdirTemp("", "xtdbserver-")
	if err != nil {
		return nil, fmt.Errorf("xtdbserver: %w", err)
	}
	config := filepath.Join(tmpDir, "xtdb.edn")
	if opts.ConfigFile != "" {
		if config, err = filepath.Abs(opts.ConfigFile); err != nil {
			os.RemoveAll(tmpDir)
			return nil, fmt.Errorf("xtdbserver: config file: %w", err)
		}
	} else {
		dataDir := opts.DataDir
		if dataDir == "" && opts.Postgres != nil {
			dataDir = filepath.Join(tmpDir, "data")
		}
		if err := os.WriteFile(config, []byte(nodeConfig(dataDir, opts.Postgres)), 0o600); err != nil {
			os.RemoveAll(tmpDir)
			return nil, fmt.Errorf("xtdbserver: writing config: %w", err)
		}
	}
	java := opts.Java
	if java == "" {
		java = "java"
	}
	jvmArgs := opts.JVMArgs
	if jvmArgs == nil {
		jvmArgs = DefaultJVMArgs
	}
	args := append(append([]string{}, jvmArgs...),
		"--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED",
		// TCP_NODELAY: without it every answer waits ~40ms for a delayed ACK.
		"-Dsun.net.httpserver.nodelay=true",
		// A temp dir per node: RocksDB extracts its JNI library into
		// java.io.tmpdir under a fixed name, so nodes starting at once
		// (a cluster, parallel test binaries) overwrote one another's
		// mapped copy and died of SIGBUS.
		"-Djava.io.tmpdir="+tmpDir,
		"-cp", cp, "clojure.main", "-m", "ctxstore.xtdb-http", config, strconv.Itoa(port))
	s := &Server{
		url:    "http://127.0.0.1:" + strconv.Itoa(port),
		done:   make(chan struct{}),
		tmpDir: tmpDir,
		tail:   newTail(16 << 10),
	}
	var out io.Writer = s.tail
	if opts.Log != nil {
		out = io.MultiWriter(s.tail, opts.Log)
	}
	s.cmd = exec.Command(java, args...)
	s.cmd.Dir = tmpDir
	s.cmd.Env = append(os.Environ(), "MALLOC_ARENA_MAX=2")
	s.cmd.Stdout, s.cmd.Stderr = out, out
	setProcAttr(s.cmd)
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(tmpDir)
		return nil, fmt.Errorf("xtdbserver: starting %s: %w", java, err)
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.done) }()

	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 120 * time.Second
	}
	if err := s.awaitReady(ctx, timeout); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// awaitReady polls /_xtdb/status until it answers 200, the process exits, ctx ends
// or timeout passes.
func (s *Server) awaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if StatusOK(ctx, s.url, 2*time.Second) == nil {
			return nil
		}
		select {
		case <-s.done:
			err := fmt.Errorf("xtdbserver: XTDB exited before it was ready (%v); output tail:\n%s", s.waitErr, s.tail)
			if strings.Contains(s.tail.String(), "Address already in use") {
				err = fmt.Errorf("%w: %w", errAddrInUse, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("xtdbserver: start cancelled: %w", ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("xtdbserver: %s/_xtdb/status not ready after %v; output tail:\n%s", s.url, timeout, s.tail)
		case <-tick.C:
		}
	}
}

// Stop sends SIGTERM to the server's process group, waits up to 15s, then kills
// the group, and removes the temp config dir. It is safe to call more than once
// and returns nil once the process is gone (an exit caused by the signal is not an
// error).
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		defer os.RemoveAll(s.tmpDir)
		select {
		case <-s.done:
			return
		default:
		}
		_ = terminate(s.cmd)
		select {
		case <-s.done:
			return
		case <-time.After(15 * time.Second):
		}
		_ = kill(s.cmd)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.stopErr = fmt.Errorf("xtdbserver: JVM pid %d did not exit after SIGKILL", s.cmd.Process.Pid)
		}
	})
	return s.stopErr
}

// Kill ends the node at once with SIGKILL (kill -9 of its process group),
// as a crash would: nothing is flushed or closed. Tests use it to check
// that nothing acknowledged is lost. Stop is still safe to call after it.
func (s *Server) Kill() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := kill(s.cmd); err != nil {
		return err
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("xtdbserver: JVM pid %d did not exit after SIGKILL", s.cmd.Process.Pid)
	}
}

// StatusOK checks that GET base/_xtdb/status answers 200.
func StatusOK(ctx context.Context, base string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/_xtdb/status", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/_xtdb/status: %s", base, resp.Status)
	}
	return nil
}

// Postgres names the PostgreSQL database that holds a cluster's tx log and
// document store (XTDB's xtdb-jdbc module with its PostgreSQL dialect).
type Postgres struct {
	Host     string // default 127.0.0.1
	Port     int    // default 5432
	DBName   string // default "xtdb"
	User     string
	Password string
	// PoolSize bounds the node's connections (0: HikariCP's default, 10).
	PoolSize int
	// Poll is how long the node waits before reading the log again when it
	// found nothing new (0: 100ms, XTDB's own JDBC log's wait). A node sees
	// any transaction, its own included, up to this late.
	Poll time.Duration
}

// nodeConfig renders the node's EDN config: in memory without dataDir,
// RocksDB stores under dataDir, or with pg the tx log and documents in
// PostgreSQL and the index in dataDir/indexes.
func nodeConfig(dataDir string, pg *Postgres) string {
	var b strings.Builder
	b.WriteString("{")
	if dataDir != "" {
		abs, err := filepath.Abs(dataDir)
		if err == nil {
			dataDir = abs
		}
	}
	if pg != nil {
		host, port, db := pg.Host, pg.Port, pg.DBName
		if host == "" {
			host = "127.0.0.1"
		}
		if port == 0 {
			port = 5432
		}
		if db == "" {
			db = "xtdb"
		}
		fmt.Fprintf(&b, "\n :xtdb.jdbc/connection-pool {:dialect {:xtdb/module xtdb.jdbc.psql/->dialect}"+
			"\n                             :db-spec {:host %s :port %d :dbname %s",
			ednString(host), port, ednString(db))
		if pg.User != "" {
			fmt.Fprintf(&b, " :user %s", ednString(pg.User))
		}
		if pg.Password != "" {
			fmt.Fprintf(&b, " :password %s", ednString(pg.Password))
		}
		b.WriteString("}")
		if pg.PoolSize > 0 {
			fmt.Fprintf(&b, "\n                             :pool-opts {:maximumPoolSize %d}", pg.PoolSize)
		}
		b.WriteString("}")
		poll := pg.Poll.Milliseconds()
		if poll <= 0 {
			poll = 100
		}
		fmt.Fprintf(&b, "\n :xtdb/tx-log {:xtdb/module ctxstore.xtdb-txlog/->tx-log :connection-pool :xtdb.jdbc/connection-pool :poll-ms %d}", poll)
		b.WriteString("\n :xtdb/document-store {:xtdb/module ctxstore.xtdb-docs/->document-store :connection-pool :xtdb.jdbc/connection-pool}")
		if dataDir != "" {
			fmt.Fprintf(&b, "\n :xtdb/index-store {:kv-store {:xtdb/module xtdb.rocksdb/->kv-store :db-dir %s}}",
				ednString(filepath.Join(dataDir, "indexes")))
		}
	} else if dataDir != "" {
		for _, s := range [][2]string{{"tx-log", "tx-log"}, {"document-store", "documents"}, {"index-store", "indexes"}} {
			fmt.Fprintf(&b, "\n :xtdb/%s {:kv-store {:xtdb/module xtdb.rocksdb/->kv-store :db-dir %s}}",
				s[0], ednString(filepath.Join(dataDir, s[1])))
		}
	}
	// Full-text search: XTDB's Lucene module with ctxstore's indexer
	// (jvm/clj/ctxstore/xtdb_search.clj), on disk beside the indexes when
	// the node is, in memory otherwise.
	b.WriteString("\n :xtdb.lucene/lucene-store {:indexer {:xtdb/module ctxstore.xtdb-search/->indexer}")
	if dataDir != "" {
		fmt.Fprintf(&b, " :db-dir %s", ednString(filepath.Join(dataDir, "lucene")))
	}
	b.WriteString("}")
	b.WriteString("}\n")
	return b.String()
}

// ednString quotes s as an EDN string literal.
func ednString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("xtdbserver: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
