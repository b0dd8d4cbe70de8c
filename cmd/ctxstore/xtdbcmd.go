package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ctxstore/ctxstore/xtdb/xtdbserver"
)

// xtdbCmd groups the commands that run an XTDB server.
type xtdbCmd struct {
	Serve xtdbServeCmd `cmd:"" help:"Run an XTDB 1.24.5 node (from Maven Central, on this machine's JDK) until interrupted."`
	Fetch xtdbFetchCmd `cmd:"" help:"Resolve and cache the XTDB jars (Maven) and compile the HTTP front, without starting a node."`
}

type xtdbServeCmd struct {
	Port     int    `default:"3000" help:"Port on 127.0.0.1 (0: a free one)."`
	DataDir  string `name:"data-dir" placeholder:"DIR" help:"Keep the data in RocksDB under DIR (tx-log, documents, indexes). Empty: in memory, lost on exit."`
	CacheDir string `name:"cache-dir" placeholder:"DIR" help:"Where the classpath and compiled front are cached. Default: $CTXSTORE_CACHE or the user cache dir."`
	Heap     string `default:"1g" help:"JVM maximum heap (-Xmx)."`
	// Cluster mode: tx log and documents in PostgreSQL, index local.
	Postgres   string        `name:"postgres" env:"CTXSTORE_XTDB_POSTGRES" placeholder:"URL" help:"Cluster mode: keep the tx log and documents in this PostgreSQL database (postgresql://USER@HOST:PORT/DB; the password from PGPASSWORD), shared by every node; the index stays in RocksDB under --data-dir (docs/xtdb-cluster.md)."`
	PoolSize   int           `name:"pool-size" help:"Cluster mode: at most this many PostgreSQL connections (0: 10)."`
	LogPoll    time.Duration `name:"log-poll" default:"100ms" help:"Cluster mode: how long the node waits before reading the log again when it found nothing new (XTDB's JDBC default); a node sees transactions, its own too, up to this late. Lower it where cores are idle (docs/xtdb-cluster.md)."`
	ConfigFile string        `name:"config" type:"existingfile" placeholder:"FILE" help:"An XTDB node config (EDN) to use as it is, instead of --data-dir and --postgres."`
}

// postgresFlag parses --postgres.
func postgresFlag(raw string, pool int) (*xtdbserver.Postgres, error) {
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgresql" && u.Scheme != "postgres") || u.Host == "" {
		return nil, fmt.Errorf("--postgres %q: want postgresql://USER@HOST:PORT/DB", raw)
	}
	pg := &xtdbserver.Postgres{Host: u.Hostname(), DBName: strings.TrimPrefix(u.Path, "/"), PoolSize: pool}
	if p := u.Port(); p != "" {
		if pg.Port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("--postgres %q: port %q is not a number", raw, p)
		}
	}
	if u.User != nil {
		pg.User = u.User.Username()
		pg.Password, _ = u.User.Password()
	}
	if pg.Password == "" {
		pg.Password = os.Getenv("PGPASSWORD")
	}
	return pg, nil
}

// Run starts the node, prints its URL on stdout and waits for SIGINT or
// SIGTERM, then stops it cleanly.
func (c *xtdbServeCmd) Run(a *app) error {
	args := append([]string{"-Xmx" + c.Heap}, xtdbserver.DefaultJVMArgs[1:]...)
	pg, err := postgresFlag(c.Postgres, c.PoolSize)
	if err != nil {
		return err
	}
	if pg != nil {
		pg.Poll = c.LogPoll
	}
	if pg != nil && c.DataDir == "" {
		fmt.Fprintln(a.stderr, "ctxstore: no --data-dir: this node's index is temporary and is rebuilt from the log at every start")
	}
	srv, err := xtdbserver.Start(a.ctx, xtdbserver.Options{Port: c.Port, DataDir: c.DataDir, Postgres: pg, ConfigFile: c.ConfigFile,
		CacheDir: c.CacheDir, JVMArgs: args, Log: a.stderr})
	if err != nil {
		return err
	}
	if a.cli.JSON {
		json.NewEncoder(a.stdout).Encode(map[string]string{"url": srv.URL(), "data_dir": c.DataDir})
	} else {
		fmt.Fprintln(a.stdout, srv.URL())
	}
	fmt.Fprintf(a.stderr, "ctxstore: XTDB %s ready at %s; use --store %s; Ctrl-C stops it\n", xtdbserver.Version, srv.URL(), srv.URL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case <-sig:
	case <-a.ctx.Done():
	}
	fmt.Fprintln(a.stderr, "ctxstore: stopping XTDB")
	return srv.Stop()
}

type xtdbFetchCmd struct {
	CacheDir string `name:"cache-dir" placeholder:"DIR" help:"Cache directory (see xtdb serve)."`
}

// Run resolves the classpath, printing progress on stderr and the cache's
// classpath length on stdout.
func (c *xtdbFetchCmd) Run(a *app) error {
	cp, err := xtdbserver.EnsureClasspath(a.ctx, c.CacheDir, a.stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "XTDB %s ready (%d classpath entries)\n", xtdbserver.Version, len(filepath.SplitList(cp)))
	return nil
}
