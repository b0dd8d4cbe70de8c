package xtdbtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/xtdb/xtdbserver"
)

// Postgres is a PostgreSQL server run by the tests as a plain process in a
// temporary directory, on a loopback port, with trust authentication: no
// system service is used or changed. Debian's package provides the
// binaries (scripts/ensure-postgres.sh installs it when missing). As root,
// the server runs as the "postgres" user (PostgreSQL refuses root).
type Postgres struct {
	Port int
	Dir  string
	DB   string
	bin  string
	as   *user.User // nil: this user
	// killed: Kill ended the server; Stop only removes its directory.
	killed bool
}

// EnsurePostgres runs scripts/ensure-postgres.sh and returns the directory
// of PostgreSQL's server binaries.
func EnsurePostgres(ctx context.Context) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "ensure-postgres.sh")
	cmd := exec.CommandContext(ctx, "bash", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("xtdbtest: %s: %v\n%s", script, err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// StartPostgres initialises a cluster in a new temporary directory and
// starts it on a free loopback port with a database "xtdb". Stop it with
// Stop (which also removes the directory).
func StartPostgres(ctx context.Context) (*Postgres, error) {
	bin, err := EnsurePostgres(ctx)
	if err != nil {
		return nil, err
	}
	p := &Postgres{bin: bin, DB: "xtdb"}
	if os.Geteuid() == 0 {
		if p.as, err = user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("xtdbtest: PostgreSQL cannot run as root and there is no postgres user: %w", err)
		}
	}
	if p.Dir, err = os.MkdirTemp("", "xtdbtest-pg-"); err != nil {
		return nil, err
	}
	if p.as != nil {
		uid, _ := strconv.Atoi(p.as.Uid)
		gid, _ := strconv.Atoi(p.as.Gid)
		if err := os.Chown(p.Dir, uid, gid); err != nil {
			os.RemoveAll(p.Dir)
			return nil, err
		}
	}
	if p.Port, err = freePort(); err != nil {
		os.RemoveAll(p.Dir)
		return nil, err
	}
	if err := p.run(ctx, "initdb", "-D", p.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(p.Dir)
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		os.RemoveAll(p.Dir)
		return nil, err
	}
	if err := p.run(ctx, "createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres", p.DB); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Postgres) data() string { return filepath.Join(p.Dir, "data") }

// Start starts the (stopped) server and waits until it accepts connections.
func (p *Postgres) Start(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", p.Port, p.Dir)
	return p.run(ctx, "pg_ctl", "-D", p.data(), "-l", filepath.Join(p.Dir, "log"), "-w", "-t", "60", "-o", opts, "start")
}

// Restart stops the server (fast: open connections are cut) and starts it
// again on the same port and data.
func (p *Postgres) Restart(ctx context.Context) error {
	if err := p.run(ctx, "pg_ctl", "-D", p.data(), "-w", "-m", "fast", "stop"); err != nil {
		return err
	}
	return p.Start(ctx)
}

// Stop stops the server and removes its directory.
func (p *Postgres) Stop() error {
	if p.killed {
		return os.RemoveAll(p.Dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := p.run(ctx, "pg_ctl", "-D", p.data(), "-w", "-m", "fast", "stop")
	if err == nil {
		os.RemoveAll(p.Dir)
	}
	return err
}

// StartReplica makes a streaming replica of the (running) server p: a base
// backup of p in a new temporary directory (pg_basebackup -R, so the copy
// starts as a standby that streams p's WAL), started on a free loopback
// port. Making the replica synchronous is p's setting
// (synchronous_standby_names). Stop it with Stop.
func (p *Postgres) StartReplica(ctx context.Context) (*Postgres, error) {
	r := &Postgres{bin: p.bin, DB: p.DB, as: p.as}
	var err error
	if r.Dir, err = os.MkdirTemp("", "xtdbtest-pg-replica-"); err != nil {
		return nil, err
	}
	if r.as != nil {
		uid, _ := strconv.Atoi(r.as.Uid)
		gid, _ := strconv.Atoi(r.as.Gid)
		if err := os.Chown(r.Dir, uid, gid); err != nil {
			os.RemoveAll(r.Dir)
			return nil, err
		}
	}
	if r.Port, err = freePort(); err != nil {
		os.RemoveAll(r.Dir)
		return nil, err
	}
	if err := r.run(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres",
		"-D", r.data(), "-R", "-X", "stream", "--no-sync", "-c", "fast"); err != nil {
		os.RemoveAll(r.Dir)
		return nil, err
	}
	if err := r.Start(ctx); err != nil {
		os.RemoveAll(r.Dir)
		return nil, err
	}
	return r, nil
}

// Kill ends the server as a crash of its machine would: SIGKILL to the
// postmaster and every process it started, no shutdown of any kind. Stop
// then only removes the directory.
func (p *Postgres) Kill() error {
	data, err := os.ReadFile(filepath.Join(p.data(), "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("xtdbtest: the server's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]))
	if err != nil {
		return fmt.Errorf("xtdbtest: the server's pid: %w", err)
	}
	pids := []int{pid}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		if f := strings.Fields(string(rest)); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			pids = append(pids, child)
		}
	}
	for _, q := range pids {
		if proc, err := os.FindProcess(q); err == nil {
			_ = proc.Kill()
		}
	}
	p.killed = true
	// Wait until the postmaster is gone (it is not this process's child).
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err != nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("xtdbtest: the server (pid %d) outlived SIGKILL", pid)
}

// Promote ends recovery on a replica: it becomes a primary that accepts
// writes (pg_ctl promote, waiting until it does).
func (p *Postgres) Promote(ctx context.Context) error {
	return p.run(ctx, "pg_ctl", "-D", p.data(), "-w", "-t", "60", "promote")
}

// Options are the node options that use this server's database.
func (p *Postgres) Options() *xtdbserver.Postgres {
	return &xtdbserver.Postgres{Host: "127.0.0.1", Port: p.Port, DBName: p.DB, User: "postgres"}
}

// URL is the --postgres flag of ctxstore xtdb serve for this server.
func (p *Postgres) URL() string {
	return fmt.Sprintf("postgresql://postgres@127.0.0.1:%d/%s", p.Port, p.DB)
}

// run runs one of PostgreSQL's programs, as the postgres user when root.
func (p *Postgres) run(ctx context.Context, prog string, args ...string) error {
	path := filepath.Join(p.bin, prog)
	var cmd *exec.Cmd
	if p.as != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", p.as.Username, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = p.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(p.Dir, "log"))
		if len(log) > 4096 {
			log = log[len(log)-4096:]
		}
		return fmt.Errorf("xtdbtest: %s %s: %v\n%s\n%s", prog, strings.Join(args, " "), err, out, log)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
