package opencode

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrExists is Place's answer when the database already holds the
// session (force replaces it).
var ErrExists = errors.New("opencode: the database already holds that session")

// Place writes rows into opencode's database at path, in one
// transaction: each row's last version (an "update" line replaces the
// row before it), only the columns the table has. The database must
// exist (opencode makes it, with its schema, when it first runs); ctxstore
// does not create opencode's schema. A session row naming the project
// "global" (a folder outside a git repository, what Encode writes) gets
// that project's row when the database has none. With force, the
// session's rows already there are deleted first; otherwise a session
// that is there is refused with ErrExists. opencode may be running: the
// write waits for its locks (busy timeout) like any writer of the file.
func Place(ctx context.Context, path string, content []byte, force bool) (session string, err error) {
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("opencode's database %s: %w (run opencode once to make it)", path, err)
	}
	type key struct{ table, id string }
	var order []key
	last := map[key]*Row{}
	var bad error
	readRows(content, func(n int, r *Row) {
		k := key{r.Table, r.ID()}
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = r
		if r.Table == TableSession && session == "" {
			session = r.ID()
		}
	}, func(n int, msg string, _ []byte) {
		if bad == nil {
			bad = fmt.Errorf("opencode rows: line %d: %s", n, msg)
		}
	})
	if bad != nil {
		return "", bad
	}
	if session == "" {
		return "", errors.New("opencode rows: no session row")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "_pragma=busy_timeout(10000)&_txlock=immediate"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return "", err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("opencode's database: %w", err)
	}
	defer tx.Rollback()
	cols := map[string]map[string]bool{}
	for _, t := range []string{TableSession, TableMessage, TablePart, "project"} {
		cols[t] = map[string]bool{}
		rs, err := tx.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, t)
		if err != nil {
			return "", fmt.Errorf("opencode's database: %w", err)
		}
		for rs.Next() {
			var n string
			if err := rs.Scan(&n); err != nil {
				rs.Close()
				return "", err
			}
			cols[t][n] = true
		}
		rs.Close()
		if len(cols[t]) == 0 {
			return "", fmt.Errorf("%s has no %s table: not an opencode database (run opencode once to make it)", path, t)
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM session WHERE id = ?`, session).Scan(&n); err != nil {
		return "", err
	}
	if n > 0 {
		if !force {
			return "", fmt.Errorf("%w: %s", ErrExists, session)
		}
		for _, q := range []string{`DELETE FROM part WHERE session_id = ?`, `DELETE FROM message WHERE session_id = ?`, `DELETE FROM session WHERE id = ?`} {
			if _, err := tx.ExecContext(ctx, q, session); err != nil {
				return "", err
			}
		}
	}
	model, err := lastModel(ctx, tx)
	if err != nil {
		return "", err
	}
	for _, k := range order {
		r := last[k]
		if model != nil && r.Table == TableMessage {
			useModel(r, model)
		}
		if r.Table == TableSession {
			if p, _ := r.Row["project_id"].(string); p == "global" {
				now := time.Now().UnixMilli()
				if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES ('global', '/', ?, ?, '[]')`, now, now); err != nil {
					return "", fmt.Errorf("opencode's global project: %w", err)
				}
			}
		}
		if cols[r.Table] == nil {
			continue // a table Place does not write
		}
		var names, marks []string
		var args []any
		for _, c := range sortedKeys(r.Row) {
			if !cols[r.Table][c] {
				continue
			}
			names = append(names, `"`+c+`"`)
			marks = append(marks, "?")
			args = append(args, sqlValue(r.Row[c]))
		}
		q := fmt.Sprintf(`INSERT INTO %s (%s) VALUES (%s)`, r.Table, strings.Join(names, ", "), strings.Join(marks, ", "))
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return "", fmt.Errorf("opencode's database: %s %s: %w", r.Table, r.ID(), err)
		}
	}
	if err := tx.Commit(); err != nil {
		return "", fmt.Errorf("opencode's database: %w", err)
	}
	return session, nil
}

// lastModel is the model of the newest user message in the database that
// ctxstore did not write: the model opencode last ran.
func lastModel(ctx context.Context, tx *sql.Tx) (map[string]any, error) {
	var data string
	err := tx.QueryRowContext(ctx, `SELECT data FROM message WHERE json_extract(data, '$.role') = 'user'
		AND coalesce(json_extract(data, '$.model.providerID'), '') NOT IN ('', ?) ORDER BY time_created DESC, id DESC LIMIT 1`, Provider).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opencode's database: %w", err)
	}
	var d struct {
		Model map[string]any `json:"model"`
	}
	if json.Unmarshal([]byte(data), &d) != nil {
		return nil, nil
	}
	return d.Model, nil
}

// useModel gives a user message Encode wrote (provider "ctxstore") the
// model opencode last ran: opencode continues a session with the model
// of its last user message, and fails on one it does not know (seen with
// 1.18.33).
func useModel(r *Row, model map[string]any) {
	d, err := r.data()
	if err != nil || d["role"] != "user" {
		return
	}
	if m, _ := d["model"].(map[string]any); m == nil || m["providerID"] != Provider {
		return
	}
	d["model"] = model
	if s, err := marshal(d); err == nil {
		r.Row["data"] = s
	}
}

// sqlValue is a row value as SQLite takes it: whole numbers as integers,
// a {"blob": base64} object as bytes.
func sqlValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		if s, ok := x["blob"].(string); ok {
			if b, err := base64.StdEncoding.DecodeString(s); err == nil {
				return b
			}
		}
		raw, _ := json.Marshal(x)
		return string(raw)
	}
	return v
}
