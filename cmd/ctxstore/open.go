package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/bitemporal/postgres"
	"github.com/ctxstore/ctxstore/store"
)

// defaultStorePath is where the store lives when neither --store nor
// CTXSTORE_URL names one, relative to the working directory.
const defaultStorePath = ".ctxstore/store.db"

// backend names the kind of store a URL selects.
type backend int

const (
	backendSQLite backend = iota
	backendXTDB
	backendPostgres
)

// location is a parsed store URL.
type location struct {
	backend backend
	// path is the SQLite file (absolute), or ":memory:".
	path string
	// url is the XTDB server's base URL, or the PostgreSQL database's URL.
	url string
	// isDefault is set when no store was named, so the default directory
	// may be created.
	isDefault bool
}

// storeForms lists the accepted store URL forms, for error messages.
const storeForms = "want sqlite:PATH, file:PATH, a path ending in .db, :memory: http(s)://HOST:PORT or postgres://USER@HOST:PORT/DB"

// parseLocation parses a --store URL; "" selects the default store.
func parseLocation(raw string) (location, error) {
	if raw == "" {
		p, err := filepath.Abs(defaultStorePath)
		if err != nil {
			return location{}, err
		}
		return location{backend: backendSQLite, path: p, isDefault: true}, nil
	}
	bad := func(why string) (location, error) {
		return location{}, usagef("store %q: %s (%s)", raw, why, storeForms)
	}
	lower := strings.ToLower(raw)
	switch {
	case raw == ":memory:":
		return location{backend: backendSQLite, path: ":memory:"}, nil
	case strings.HasPrefix(lower, "http://"), strings.HasPrefix(lower, "https://"):
		u, err := url.Parse(raw)
		if err != nil {
			return bad(err.Error())
		}
		if u.Host == "" {
			return bad("the URL has no host")
		}
		return location{backend: backendXTDB, url: strings.TrimRight(raw, "/")}, nil
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		u, err := url.Parse(raw)
		if err != nil {
			return bad(err.Error())
		}
		if u.Host == "" && u.Query().Get("host") == "" {
			return bad("the URL has no host")
		}
		return location{backend: backendPostgres, url: raw}, nil
	case strings.HasPrefix(lower, "sqlite:"), strings.HasPrefix(lower, "file:"):
		rest := raw[strings.IndexByte(raw, ':')+1:]
		if strings.HasPrefix(rest, "//") { // sqlite:///abs/path.db, file://localhost/abs/path.db
			u, err := url.Parse(raw)
			if err != nil {
				return bad(err.Error())
			}
			if u.Host != "" && u.Host != "localhost" {
				return bad("a file URL cannot name a remote host")
			}
			rest = u.Path
		}
		if i := strings.IndexByte(rest, '?'); i >= 0 {
			return bad("query parameters are not supported")
		}
		if rest == ":memory:" {
			return location{backend: backendSQLite, path: ":memory:"}, nil
		}
		if rest == "" {
			return bad("the path is empty")
		}
		return sqliteLocation(rest)
	case strings.Contains(raw, "://"):
		return bad("unknown scheme")
	case strings.HasSuffix(lower, ".db"):
		return sqliteLocation(raw)
	}
	return bad("not a store URL; use sqlite:PATH for a file whose name does not end in .db")
}

func sqliteLocation(path string) (location, error) {
	p, err := filepath.Abs(path)
	if err != nil {
		return location{}, err
	}
	return location{backend: backendSQLite, path: p}, nil
}

// open opens the store named by the global flags. A command that only
// reads passes write=false: it then refuses to create a store that does
// not exist yet. It also resolves the command's shortened ids
// (resolveRefs), once.
func (a *app) open(write bool) (store.Store, error) {
	st, err := a.openStore(write)
	if err != nil {
		return nil, err
	}
	if err := a.resolveRefs(st); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// openStore opens the store --store names.
func (a *app) openStore(write bool) (store.Store, error) {
	loc, err := parseLocation(a.cli.Store)
	if err != nil {
		return nil, err
	}
	switch loc.backend {
	case backendXTDB:
		return openXTDB(a.ctx, loc.url, a.cli.XTDBTimeout)
	case backendSQLite:
		return openSQLite(a.ctx, loc, write, a.cli.Durable)
	case backendPostgres:
		return openPostgres(a.ctx, loc.url, write)
	}
	return nil, fmt.Errorf("store %q: unknown backend", a.cli.Store)
}

// openPostgres opens the PostgreSQL store at url (docs/postgres.md). A
// command that writes creates its tables in a database that has none yet;
// one that only reads refuses such a database.
func openPostgres(ctx context.Context, url string, write bool) (store.Store, error) {
	return postgres.Open(ctx, url, postgres.Options{MustExist: !write})
}

// openSQLite opens the SQLite store at loc; durable sets synchronous=FULL.
func openSQLite(ctx context.Context, loc location, write, durable bool) (store.Store, error) {
	if loc.path != ":memory:" {
		dir := filepath.Dir(loc.path)
		_, err := os.Stat(loc.path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !write:
			return nil, fmt.Errorf("no store at %s: nothing has been written yet (name another with --store URL or CTXSTORE_URL)", loc.path)
		case errors.Is(err, fs.ErrNotExist) && loc.isDefault:
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("creating the store directory: %w", err)
			}
		case errors.Is(err, fs.ErrNotExist):
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return nil, fmt.Errorf("cannot create store %s: directory %s does not exist", loc.path, dir)
			}
		case err != nil:
			return nil, fmt.Errorf("store %s: %w", loc.path, err)
		}
	}
	return bitemporal.Open(ctx, loc.path, bitemporal.Options{Durable: durable})
}
