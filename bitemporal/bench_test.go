package bitemporal_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
)

// The benchmarks compare the store with raw SQLite doing the equivalent
// work on the same connection settings: a plain table of versions
// (eid, vt, tx, tx_time, doc) with the same primary key, written and read
// with prepared statements. Each reports the ratio store/raw of the same
// run as "x-raw", plus absolute figures. See docs/benchmarks.md.

const benchDSN = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"

func benchDoc(i, v int) store.Doc {
	return store.Doc{"xt/id": "e" + strconv.Itoa(i), "type": "toolcall", "tool": "read",
		"status": "ok", "n": json.Number(strconv.Itoa(v)), "content": strings.Repeat("x", 200)}
}

// raw is the baseline: one table, same key, same pragmas.
type raw struct {
	db     *sql.DB
	insert *sql.Stmt
	lookup *sql.Stmt
	hist   *sql.Stmt
}

func openRaw(b testing.TB) *raw { return openRawAt(b, filepath.Join(b.TempDir(), "raw.db")) }

func openRawAt(b testing.TB, path string) *raw {
	db, err := sql.Open("sqlite", "file:"+path+benchDSN)
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS versions (eid TEXT NOT NULL, vt INTEGER NOT NULL, tx_id INTEGER NOT NULL,
		tx_time INTEGER NOT NULL, doc TEXT, PRIMARY KEY (eid, vt, tx_id)) WITHOUT ROWID`); err != nil {
		b.Fatal(err)
	}
	r := &raw{db: db}
	prep := func(q string) *sql.Stmt {
		s, err := db.Prepare(q)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	r.insert = prep("INSERT INTO versions VALUES (?, ?, ?, ?, ?)")
	r.lookup = prep("SELECT doc FROM versions WHERE eid = ? AND vt <= ? AND tx_id <= ? ORDER BY vt DESC, tx_id DESC LIMIT 1")
	r.hist = prep("SELECT vt, tx_id, tx_time, doc FROM versions WHERE eid = ? ORDER BY vt, tx_id")
	return r
}

// writeBatch inserts n versions starting at entity/version counter k in
// one transaction.
func (r *raw) writeBatch(b testing.TB, tx int64, docs []store.Doc, vt int64) {
	t, err := r.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	ins := t.Stmt(r.insert)
	for _, d := range docs {
		c, _ := store.Canonical(d)
		if _, err := ins.Exec(d["xt/id"], vt, tx, time.Now().UnixMilli(), string(c)); err != nil {
			b.Fatal(err)
		}
	}
	if err := t.Commit(); err != nil {
		b.Fatal(err)
	}
}

// rawSchema is the second baseline: the store's own tables and indexes
// (created by opening a store), written with plain prepared INSERTs of the
// same rows, and none of the bitemporal logic.
type rawSchema struct {
	db                      *sql.DB
	ent, doc, fields, point *sql.Stmt
}

func openRawSchema(b *testing.B) *rawSchema {
	path := filepath.Join(b.TempDir(), "schema.db")
	s, err := bitemporal.Open(context.Background(), path, bitemporal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path+benchDSN)
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	r := &rawSchema{db: db}
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{
		{&r.ent, "INSERT INTO ents (eid, h) SELECT ?1, ctxs_idhash(?1) WHERE NOT EXISTS (SELECT 1 FROM ents WHERE h = ctxs_idhash(?1) AND eid = ?1)"},
		{&r.doc, "INSERT INTO docs (hash, ent, doc) VALUES (?1, (SELECT id FROM ents WHERE h = ctxs_idhash(?2) AND eid = ?2), ?3)"},
		{&r.fields, "INSERT INTO fields (doc, field, kind, value) VALUES (?, ?, ?, ?)"},
		{&r.point, "INSERT INTO points (ent, vt, tx_id, tx_time, doc) VALUES ((SELECT id FROM ents WHERE h = ctxs_idhash(?1) AND eid = ?1), ?2, ?3, ?4, ?5)"},
	} {
		if *p.dst, err = db.Prepare(p.q); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

func (r *rawSchema) writeBatch(b *testing.B, tx int64, docs []store.Doc, vt int64) {
	t, err := r.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	ent, doc, fields, point := t.Stmt(r.ent), t.Stmt(r.doc), t.Stmt(r.fields), t.Stmt(r.point)
	for _, d := range docs {
		if _, err := ent.Exec(d["xt/id"]); err != nil {
			b.Fatal(err)
		}
		c, _ := store.Canonical(d)
		sum := sha256.Sum256(c)
		h := hex.EncodeToString(sum[:])
		res, err := doc.Exec(h, d["xt/id"], string(c))
		if err != nil {
			b.Fatal(err)
		}
		id, _ := res.LastInsertId()
		for k, v := range d {
			if s, ok := v.(string); ok {
				if _, err := fields.Exec(id, k, "s", s); err != nil {
					b.Fatal(err)
				}
			} else if n, ok := v.(json.Number); ok {
				f, _ := n.Float64()
				if _, err := fields.Exec(id, k, "n", f); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := point.Exec(d["xt/id"], vt, tx, time.Now().UnixMilli(), id); err != nil {
			b.Fatal(err)
		}
	}
	if err := t.Commit(); err != nil {
		b.Fatal(err)
	}
}

func openBench(b *testing.B) *bitemporal.Store {
	s, err := bitemporal.Open(context.Background(), filepath.Join(b.TempDir(), "store.db"), bitemporal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func putOps(docs []store.Doc, vt time.Time) []store.Op {
	ops := make([]store.Op, len(docs))
	for i, d := range docs {
		ops[i] = store.PutAt(d, vt)
	}
	return ops
}

// BenchmarkPutBatch1000 measures transactions of 1,000 puts of new
// versions (one per entity) against raw batched inserts.
func BenchmarkPutBatch1000(b *testing.B) {
	ctx := context.Background()
	s, r, rs := openBench(b), openRaw(b), openRawSchema(b)
	docs := func(round int) []store.Doc {
		out := make([]store.Doc, 1000)
		for i := range out {
			out[i] = benchDoc(i, round)
		}
		return out
	}
	var storeDur, rawDur, schemaDur time.Duration
	for round := 0; round < b.N; round++ {
		ds := docs(round)
		vt := t0.Add(time.Duration(round) * time.Second)
		start := time.Now()
		if _, err := s.Submit(ctx, putOps(ds, vt)); err != nil {
			b.Fatal(err)
		}
		storeDur += time.Since(start)
		start = time.Now()
		r.writeBatch(b, int64(round), ds, vt.UnixMilli())
		rawDur += time.Since(start)
		start = time.Now()
		rs.writeBatch(b, int64(round), ds, vt.UnixMilli())
		schemaDur += time.Since(start)
	}
	n := float64(b.N * 1000)
	b.ReportMetric(float64(storeDur.Nanoseconds())/n, "ns/put")
	b.ReportMetric(float64(rawDur.Nanoseconds())/n, "raw-ns/put")
	b.ReportMetric(float64(schemaDur.Nanoseconds())/n, "schema-ns/put")
	b.ReportMetric(float64(storeDur)/float64(rawDur), "x-raw")
	b.ReportMetric(float64(storeDur)/float64(schemaDur), "x-schema")
}

// BenchmarkPutSingle measures one-put transactions against raw one-row
// transactions.
func BenchmarkPutSingle(b *testing.B) {
	ctx := context.Background()
	s, r, rs := openBench(b), openRaw(b), openRawSchema(b)
	var storeDur, rawDur, schemaDur time.Duration
	for i := 0; i < b.N; i++ {
		d := benchDoc(i%1000, i)
		vt := t0.Add(time.Duration(i) * time.Millisecond)
		start := time.Now()
		if _, err := s.Submit(ctx, []store.Op{store.PutAt(d, vt)}); err != nil {
			b.Fatal(err)
		}
		storeDur += time.Since(start)
		start = time.Now()
		r.writeBatch(b, int64(i), []store.Doc{d}, vt.UnixMilli())
		rawDur += time.Since(start)
		start = time.Now()
		rs.writeBatch(b, int64(i), []store.Doc{d}, vt.UnixMilli())
		schemaDur += time.Since(start)
	}
	b.ReportMetric(float64(storeDur.Nanoseconds())/float64(b.N), "ns/tx")
	b.ReportMetric(float64(rawDur.Nanoseconds())/float64(b.N), "raw-ns/tx")
	b.ReportMetric(float64(schemaDur.Nanoseconds())/float64(b.N), "schema-ns/tx")
	b.ReportMetric(float64(storeDur)/float64(rawDur), "x-raw")
	b.ReportMetric(float64(storeDur)/float64(schemaDur), "x-schema")
}

// benchVersions is the as-of read benchmark's size: 1,000,000 versions over
// 100,000 entities (10 each); CTXSTORE_BENCH_VERSIONS scales it down.
func benchVersions() (versions, entities int) {
	versions, entities = 1_000_000, 100_000
	if v := os.Getenv("CTXSTORE_BENCH_VERSIONS"); v != "" {
		n, _ := strconv.Atoi(v)
		versions, entities = n, n/10
	}
	return versions, entities
}

// BenchmarkAsOfRead measures Entity at a random (valid time, tx) basis in a
// store of 1,000,000 versions over 100,000 entities, against a raw indexed
// point lookup of the same rows, in two states of the operating system's
// page cache, each b.N reads:
//
//   - hot: both database files were read through once just before, as on a
//     machine whose memory holds them;
//   - cold: both files were dropped from the page cache just before
//     (POSIX_FADV_DONTNEED, Linux only), so reads go to the disk until the
//     pages they need are cached again.
//
// Without either, the figure depends on what the machine kept cached while
// the files were written (the VMs this is measured on page out file pages
// untouched for 30 s; see docs/benchmarks.md).
func BenchmarkAsOfRead(b *testing.B) {
	ctx := context.Background()
	versions, entities := benchVersions()
	dir := b.TempDir()
	s, err := bitemporal.Open(ctx, filepath.Join(dir, "store.db"), bitemporal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	r := openRawAt(b, filepath.Join(dir, "raw.db"))
	rounds := versions / entities
	for round := 0; round < rounds; round++ {
		vt := t0.Add(time.Duration(round) * time.Hour)
		for lo := 0; lo < entities; lo += 1000 {
			ds := make([]store.Doc, 0, 1000)
			for i := lo; i < lo+1000 && i < entities; i++ {
				ds = append(ds, benchDoc(i, round))
			}
			tx, err := s.Submit(ctx, putOps(ds, vt))
			if err != nil {
				b.Fatal(err)
			}
			r.writeBatch(b, tx.ID, ds, vt.UnixMilli())
		}
	}
	files := []string{"store.db", "store.db-wal", "raw.db", "raw.db-wal"}
	b.ResetTimer()
	for phase, name := range []string{"hot", "cold"} {
		b.StopTimer()
		for _, f := range files {
			path := filepath.Join(dir, f)
			if name == "hot" {
				if err := readThrough(path); err != nil {
					b.Fatal(err)
				}
			} else if err := dropFileCache(path); err != nil {
				b.Logf("cold phase skipped: %v", err)
				return
			}
		}
		b.StartTimer()
		var storeDur, rawDur time.Duration
		for i := 0; i < b.N; i++ {
			// Each phase reads other entities than the one before.
			e := (i*7919 + phase*entities/2) % entities
			round := i % rounds
			vt := t0.Add(time.Duration(round)*time.Hour + time.Minute)
			txID := int64(versions/1000 - 1)
			start := time.Now()
			doc, err := s.Entity(ctx, "e"+strconv.Itoa(e), store.AtTx(txID, vt))
			if err != nil || doc == nil {
				b.Fatal(err)
			}
			storeDur += time.Since(start)
			start = time.Now()
			var raw string
			if err := r.lookup.QueryRow("e"+strconv.Itoa(e), vt.UnixMilli(), txID).Scan(&raw); err != nil {
				b.Fatal(err)
			}
			if _, err := store.DecodeDoc([]byte(raw)); err != nil {
				b.Fatal(err)
			}
			rawDur += time.Since(start)
		}
		sfx := "-" + name
		b.ReportMetric(float64(storeDur.Nanoseconds())/float64(b.N), "ns/read"+sfx)
		b.ReportMetric(float64(rawDur.Nanoseconds())/float64(b.N), "raw-ns/read"+sfx)
		b.ReportMetric(float64(storeDur)/float64(rawDur), "x-raw"+sfx)
	}
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-MiB")
}

// readThrough reads the file at path to the end (if it exists), so that
// the page cache holds it.
func readThrough(path string) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

// BenchmarkHistory1000 reads the whole history (with documents) of an
// entity with 1,000 versions.
func BenchmarkHistory1000(b *testing.B) {
	ctx := context.Background()
	s, r := openBench(b), openRaw(b)
	for v := 0; v < 1000; v++ {
		vt := t0.Add(time.Duration(v) * time.Minute)
		d := benchDoc(0, v)
		tx, err := s.Submit(ctx, []store.Op{store.PutAt(d, vt)})
		if err != nil {
			b.Fatal(err)
		}
		r.writeBatch(b, tx.ID, []store.Doc{d}, vt.UnixMilli())
	}
	b.ResetTimer()
	var storeDur, rawDur time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		h, err := s.History(ctx, "e0", store.HistoryOptions{Order: store.Asc, WithDocs: true, Basis: store.Basis{ValidTime: t0.AddDate(10, 0, 0)}})
		if err != nil || len(h) != 1000 {
			b.Fatalf("history: %d rows, %v", len(h), err)
		}
		storeDur += time.Since(start)
		start = time.Now()
		rows, err := r.hist.Query("e0")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var vt, tx, tt int64
			var doc string
			if err := rows.Scan(&vt, &tx, &tt, &doc); err != nil {
				b.Fatal(err)
			}
			if _, err := store.DecodeDoc([]byte(doc)); err != nil {
				b.Fatal(err)
			}
			n++
		}
		rows.Close()
		if n != 1000 {
			b.Fatalf("raw history: %d rows", n)
		}
		rawDur += time.Since(start)
	}
	b.ReportMetric(float64(storeDur.Nanoseconds())/float64(b.N), "ns/history")
	b.ReportMetric(float64(rawDur.Nanoseconds())/float64(b.N), "raw-ns/history")
	b.ReportMetric(float64(storeDur)/float64(rawDur), "x-raw")
}

// peakRSS is the process's peak resident set size in bytes (Linux), 0 if
// unknown.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
