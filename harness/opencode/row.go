package opencode

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/ctxstore/ctxstore/harness"
)

// Version is the opencode version whose database the package reads and
// writes (checked against the real CLI, opencode-ai on npm).
const Version = "1.18.33"

// The tables a session's rows come from, in the order a file of rows
// holds them.
const (
	TableSession = "session"
	TableMessage = "message"
	TablePart    = "part"
)

// Row is one line of an opencode-v1 artifact: a row of opencode's
// database, every column as SQLite gave it (text, integer, real, null;
// a blob as base64 under {"blob": ...}). Op "update" marks a later
// version of a row already written (a session's title and totals, a
// message opencode changed after it was complete): restoring the rows
// takes each row's last version, and the conversation is read from the
// first.
type Row struct {
	Table string         `json:"table"`
	Op    string         `json:"op,omitempty"`
	Row   map[string]any `json:"row"`
}

// ID is the row's id column.
func (r *Row) ID() string { s, _ := r.Row["id"].(string); return s }

func (r *Row) str(col string) string { s, _ := r.Row[col].(string); return s }

func (r *Row) num(col string) int64 {
	switch v := r.Row[col].(type) {
	case float64:
		return int64(v)
	case int64:
		return v
	case json.Number:
		n, _ := v.Int64()
		return n
	}
	return 0
}

// data decodes the row's data column (message and part rows).
func (r *Row) data() (map[string]any, error) {
	s, ok := r.Row["data"].(string)
	if !ok {
		return nil, errors.New("no data column")
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("data does not decode: %v", err)
	}
	if m == nil {
		return nil, errors.New("data is not an object")
	}
	return m, nil
}

// line is the row as one JSON line.
func (r *Row) line() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// readRows reads an artifact's lines; lines that do not decode are
// returned as problems (line number and message).
func readRows(b []byte, each func(n int, r *Row), bad func(n int, msg string, raw []byte)) {
	n := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		var l []byte
		if i < 0 {
			l, b = b, nil
		} else {
			l, b = b[:i], b[i+1:]
		}
		n++
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var r Row
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.UseNumber()
		if err := dec.Decode(&r); err != nil || r.Table == "" || r.Row == nil {
			msg := "not a row"
			if err != nil {
				msg = err.Error()
			}
			bad(n, msg, l)
			continue
		}
		each(n, &r)
	}
}

// DBPath is where opencode keeps its database: $XDG_DATA_HOME/opencode,
// or ~/.local/share/opencode, then opencode.db (seen with 1.18.33).
func DBPath() (string, error) {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home folder for opencode's data: %w", err)
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "opencode", "opencode.db"), nil
}

// openRO opens the database read-only: opencode may be writing to it
// (its WAL is read as it stands; nothing is written, not even a
// checkpoint).
func openRO(path string) (*sql.DB, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&_pragma=busy_timeout(5000)&_pragma=query_only(1)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// LooksDB: an SQLite file with opencode's session, message and part
// tables.
func looksDB(path string, head []byte) bool {
	if !bytes.HasPrefix(head, []byte("SQLite format 3\x00")) {
		return false
	}
	db, err := openRO(path)
	if err != nil {
		return false
	}
	defer db.Close()
	n := 0
	err = db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN ('session','message','part')`).Scan(&n)
	return err == nil && n == 3
}

// queryRows reads a query's rows as Rows of table.
func queryRows(db *sql.DB, table, query string, args ...any) ([]*Row, error) {
	rs, err := db.Query(query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, err
	}
	var out []*Row
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("reading %s: %w", table, err)
		}
		r := &Row{Table: table, Row: map[string]any{}}
		for i, c := range cols {
			switch v := vals[i].(type) {
			case []byte:
				r.Row[c] = map[string]any{"blob": v}
			default:
				r.Row[c] = v
			}
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// readDB reads every session of the database, each with its rows in the
// order opencode resumes them: the session row, then each message
// (ordered by creation time and id) followed by its parts (by id). A
// message still being written (an assistant message without a completion
// time, or one that ended with an error, is complete) stops the session's
// rows there: a later import takes it once complete.
func readDB(path string) ([]harness.DBSession, error) {
	db, err := openRO(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s read-only: %w", path, err)
	}
	defer db.Close()
	sessions, err := queryRows(db, TableSession, `SELECT * FROM session ORDER BY time_created, id`)
	if err != nil {
		return nil, err
	}
	var out []harness.DBSession
	for _, s := range sessions {
		ds, err := readSession(db, s)
		if err != nil {
			return nil, err
		}
		out = append(out, ds)
	}
	return out, nil
}

func readSession(db *sql.DB, s *Row) (harness.DBSession, error) {
	id := s.ID()
	ds := harness.DBSession{ID: id, Cwd: s.str("directory"), Version: s.str("version"), Parent: s.str("parent_id")}
	if m := s.str("model"); m != "" {
		var x struct {
			ID string `json:"id"`
		}
		if json.Unmarshal([]byte(m), &x) == nil {
			ds.Model = x.ID
		}
	}
	msgs, err := queryRows(db, TableMessage, `SELECT * FROM message WHERE session_id = ? ORDER BY time_created, id`, id)
	if err != nil {
		return ds, err
	}
	parts, err := queryRows(db, TablePart, `SELECT * FROM part WHERE session_id = ? ORDER BY message_id, id`, id)
	if err != nil {
		return ds, err
	}
	byMsg := map[string][]*Row{}
	known := map[string]bool{}
	for _, m := range msgs {
		known[m.ID()] = true
	}
	for _, p := range parts {
		mid := p.str("message_id")
		byMsg[mid] = append(byMsg[mid], p)
	}
	add := func(r *Row, group string, at time.Time) error {
		l, err := r.line()
		if err != nil {
			return fmt.Errorf("%s %s: %w", r.Table, r.ID(), err)
		}
		u := *r
		u.Op = "update"
		ul, err := u.line()
		if err != nil {
			return fmt.Errorf("%s %s: %w", r.Table, r.ID(), err)
		}
		ds.Rows = append(ds.Rows, harness.DBRow{Key: r.Table + ":" + r.ID(), Line: l, Update: ul, Time: at, Group: group})
		return nil
	}
	created := func(r *Row) time.Time { return time.UnixMilli(r.num("time_created")).UTC() }
	if err := add(s, TableSession+":"+id, created(s)); err != nil {
		return ds, err
	}
	for _, m := range msgs {
		group := TableMessage + ":" + m.ID()
		d, err := m.data()
		if err != nil {
			ds.Problems = append(ds.Problems, harness.RowProblem{Table: TableMessage, ID: m.ID(), Msg: err.Error() + "; kept as read"})
		}
		if d != nil && d["role"] == "assistant" && !complete(d) {
			break // still being written
		}
		if err := add(m, group, created(m)); err != nil {
			return ds, err
		}
		at := len(ds.Rows) - 1 // the message's row (ds.Rows grows below)
		if d != nil {
			ds.Rows[at].Model, _ = d["modelID"].(string)
			ds.Rows[at].Compaction = d["summary"] == true && d["role"] == "assistant"
		}
		human := d != nil && d["role"] == "user"
		for _, p := range byMsg[m.ID()] {
			pd, err := p.data()
			if err != nil {
				ds.Problems = append(ds.Problems, harness.RowProblem{Table: TablePart, ID: p.ID(), Msg: err.Error() + "; kept as read"})
			}
			if err := add(p, group, created(p)); err != nil {
				return ds, err
			}
			countPart(&ds.Rows[len(ds.Rows)-1], d, pd)
			if sub := spawned(pd); sub != "" {
				ds.Rows[len(ds.Rows)-1].Spawns = []string{sub}
			}
			row := &ds.Rows[at]
			if pd != nil && human && pd["type"] == "text" && pd["synthetic"] != true && row.Summary == "" {
				row.Summary, _ = pd["text"].(string)
				row.Human = true
			}
			if pd != nil && row.Compaction && pd["type"] == "text" {
				row.Summary, _ = pd["text"].(string)
			}
		}
	}
	// Parts whose message is not in the table (damage): kept, at the end.
	var orphans []string
	for mid := range byMsg {
		if !known[mid] {
			orphans = append(orphans, mid)
		}
	}
	sort.Strings(orphans)
	for _, mid := range orphans {
		for _, p := range byMsg[mid] {
			ds.Problems = append(ds.Problems, harness.RowProblem{Table: TablePart, ID: p.ID(), Msg: fmt.Sprintf("its message %s is not in the message table; kept as read", mid)})
			if err := add(p, TableMessage+":"+mid, created(p)); err != nil {
				return ds, err
			}
		}
	}
	return ds, nil
}

// complete reports whether an assistant message is done: opencode sets
// time.completed when the response ends, and an error when it fails.
func complete(d map[string]any) bool {
	if d["error"] != nil {
		return true
	}
	t, _ := d["time"].(map[string]any)
	return t != nil && t["completed"] != nil
}

// countPart says what a part row holds, for the import's counts.
func countPart(r *harness.DBRow, msg, d map[string]any) {
	if msg == nil || d == nil {
		return
	}
	switch d["type"] {
	case "text":
		switch {
		case msg["role"] == "assistant":
			r.Responses++
		case d["synthetic"] == true:
			r.Injected++
		}
	case "tool":
		r.ToolCalls++
		if st, _ := d["state"].(map[string]any); st["status"] == "completed" || st["status"] == "error" {
			r.ToolResults++
		}
	}
}

// spawned is the session a task call started (its sub-agent's): opencode
// names it in the tool state's metadata.sessionId (seen with 1.18.33,
// once the call has started).
func spawned(d map[string]any) string {
	if d == nil || d["type"] != "tool" || d["tool"] != "task" {
		return ""
	}
	st, _ := d["state"].(map[string]any)
	md, _ := st["metadata"].(map[string]any)
	id, _ := md["sessionId"].(string)
	return id
}
