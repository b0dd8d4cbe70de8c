package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ctxstore/ctxstore/bitemporal/postgres"
	"github.com/ctxstore/ctxstore/store"
)

// The benchmarks compare the store with PostgreSQL doing the equivalent
// work through the same driver: "schema" inserts the same rows into the
// store's own tables and indexes (its migrations made them) with plain
// INSERTs and none of the bitemporal logic; "raw" keeps one plain table of
// versions (eid, vt, tx_id, tx_time, doc) with the store's primary key.
// Each reports the ratio store/baseline of the same run ("x-schema",
// "x-raw"). See docs/benchmarks.md.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func benchDoc(i, v int) store.Doc {
	return store.Doc{"xt/id": "e" + strconv.Itoa(i), "type": "toolcall", "tool": "read",
		"status": "ok", "n": json.Number(strconv.Itoa(v)), "content": strings.Repeat("x", 200)}
}

func putOps(docs []store.Doc, vt time.Time) []store.Op {
	ops := make([]store.Op, len(docs))
	for i, d := range docs {
		ops[i] = store.PutAt(d, vt)
	}
	return ops
}

// baseline is a connection to a schema of the benchmark's server.
type baseline struct{ db *sqlx.DB }

func openBaseline(b *testing.B, u string) *baseline {
	db, err := sqlx.Open("pgx", u)
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS versions (eid bytea NOT NULL, vt bigint NOT NULL, tx_id bigint NOT NULL,
		tx_time bigint NOT NULL, doc text, PRIMARY KEY (eid, vt, tx_id))`); err != nil {
		b.Fatal(err)
	}
	return &baseline{db: db}
}

// writeRaw inserts docs as versions at vt in one transaction.
func (r *baseline) writeRaw(b *testing.B, tx int64, docs []store.Doc, vt int64) {
	t, err := r.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range docs {
		c, _ := store.Canonical(d)
		if _, err := t.Exec("INSERT INTO versions VALUES ($1, $2, $3, $4, $5)", []byte(d["xt/id"].(string)), vt, tx, time.Now().UnixMilli(), string(c)); err != nil {
			b.Fatal(err)
		}
	}
	if err := t.Commit(); err != nil {
		b.Fatal(err)
	}
}

// writeSchema inserts docs into the store's tables as a put would leave
// them (a docs row, its search unit, a point, the txs row), in one
// transaction, without reading anything first.
func (r *baseline) writeSchema(b *testing.B, tx int64, docs []store.Doc, vt int64) {
	t, err := r.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range docs {
		c, _ := store.Canonical(d)
		sum := sha256.Sum256(c)
		id := []byte(d["xt/id"].(string))
		var docID int64
		if err := t.QueryRow("INSERT INTO docs (hash, ent, body, doc) VALUES ($1, $2, $3, $4::jsonb) RETURNING id", sum[:], id, string(c), string(c)).Scan(&docID); err != nil {
			b.Fatal(err)
		}
		if _, err := t.Exec(`INSERT INTO search_units (doc, ent, kind, session, part, title, body, tsv)
			VALUES ($1, $2, 'toolcall', NULL, -1, 'read', $3, setweight(to_tsvector('simple', 'read'), 'A') || setweight(to_tsvector('simple', $3), 'D'))`,
			docID, id, d["content"]); err != nil {
			b.Fatal(err)
		}
		if _, err := t.Exec("INSERT INTO points (ent, vt, tx_id, tx_time, doc) VALUES ($1, $2, $3, $4, $5)", id, vt, tx, time.Now().UnixMilli(), docID); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := t.Exec("INSERT INTO txs (tx_id, tx_time, committed, ops) VALUES ($1, $2, true, '[]')", tx, time.Now().UnixMilli()); err != nil {
		b.Fatal(err)
	}
	if err := t.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPutBatch1000 measures transactions of 1,000 puts of new
// versions (one per entity) against the same rows inserted into the same
// tables, and into the plain table.
func BenchmarkPutBatch1000(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b, nil)
	schemaURL := newSchema(b)
	openURL(b, schemaURL, nil).Close() // the store's tables, empty
	rs, r := openBaseline(b, schemaURL), openBaseline(b, newSchema(b))
	var storeDur, rawDur, schemaDur time.Duration
	for round := 0; round < b.N; round++ {
		ds := make([]store.Doc, 1000)
		for i := range ds {
			ds[i] = benchDoc(i, round)
		}
		vt := t0.Add(time.Duration(round) * time.Second)
		start := time.Now()
		if _, err := s.Submit(ctx, putOps(ds, vt)); err != nil {
			b.Fatal(err)
		}
		storeDur += time.Since(start)
		start = time.Now()
		rs.writeSchema(b, int64(round), ds, vt.UnixMilli())
		schemaDur += time.Since(start)
		start = time.Now()
		r.writeRaw(b, int64(round), ds, vt.UnixMilli())
		rawDur += time.Since(start)
	}
	n := float64(b.N * 1000)
	b.ReportMetric(float64(storeDur.Nanoseconds())/n, "ns/put")
	b.ReportMetric(float64(schemaDur.Nanoseconds())/n, "schema-ns/put")
	b.ReportMetric(float64(rawDur.Nanoseconds())/n, "raw-ns/put")
	b.ReportMetric(float64(storeDur)/float64(schemaDur), "x-schema")
	b.ReportMetric(float64(storeDur)/float64(rawDur), "x-raw")
}

// BenchmarkAsOfRead measures Entity at a (valid time, tx) basis in a store
// of 20,000 versions over 2,000 entities (CTXSTORE_BENCH_VERSIONS scales
// it) against a raw indexed point lookup of the same rows in the plain
// table, decoded the same way.
func BenchmarkAsOfRead(b *testing.B) {
	ctx := context.Background()
	versions := 20_000
	if v := os.Getenv("CTXSTORE_BENCH_VERSIONS"); v != "" {
		versions, _ = strconv.Atoi(v)
	}
	entities := versions / 10
	s := openTemp(b, nil)
	r := openBaseline(b, newSchema(b))
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
			r.writeRaw(b, tx.ID, ds, vt.UnixMilli())
		}
	}
	if _, err := r.db.Exec("ANALYZE"); err != nil {
		b.Fatal(err)
	}
	txID := int64(versions/1000 - 1)
	lookup, err := r.db.Preparex("SELECT doc FROM versions WHERE eid = $1 AND vt <= $2 AND tx_id <= $3 ORDER BY vt DESC, tx_id DESC LIMIT 1")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var storeDur, rawDur time.Duration
	for i := 0; i < b.N; i++ {
		e := (i * 7919) % entities
		vt := t0.Add(time.Duration(i%rounds)*time.Hour + time.Minute)
		id := "e" + strconv.Itoa(e)
		start := time.Now()
		doc, err := s.Entity(ctx, id, store.AtTx(txID, vt))
		if err != nil || doc == nil {
			b.Fatal(err)
		}
		storeDur += time.Since(start)
		start = time.Now()
		var raw string
		if err := lookup.QueryRow([]byte(id), vt.UnixMilli(), txID).Scan(&raw); err != nil {
			b.Fatal(err)
		}
		if _, err := store.DecodeDoc([]byte(raw)); err != nil {
			b.Fatal(err)
		}
		rawDur += time.Since(start)
	}
	b.ReportMetric(float64(storeDur.Nanoseconds())/float64(b.N), "ns/read")
	b.ReportMetric(float64(rawDur.Nanoseconds())/float64(b.N), "raw-ns/read")
	b.ReportMetric(float64(storeDur)/float64(rawDur), "x-raw")
}

var _ = postgres.Backend
