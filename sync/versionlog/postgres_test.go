package versionlog_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal/postgres"
	"github.com/ctxstore/ctxstore/bitemporal/postgres/pgtest"
)

// openPostgres opens a new PostgreSQL store in a schema of its own on pg,
// with a deterministic clock.
func openPostgres(t testing.TB, pg *pgtest.Server) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), pg.Schema(t), postgres.Options{Clock: stepClock(base)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// body is a log without its first line (the header, which names the
// source) and its last (the trailer, whose checksum covers the header).
func body(t testing.TB, log []byte) []byte {
	t.Helper()
	lines := bytes.SplitAfter(log, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) < 3 {
		t.Fatalf("a log of %d lines has no transactions", len(lines))
	}
	return bytes.Join(lines[1:len(lines)-1], nil)
}

// TestPostgresRoundTrip: a SQLite history (with evicts and aborted
// transactions) imported into PostgreSQL and into another SQLite store
// exports with byte-identical bodies from both (same tx ids, times,
// documents, evicted ops); the PostgreSQL export imported into a third,
// SQLite, store exports the same body again; and every history agrees
// with the source at every mapped tx, tx times included.
func TestPostgresRoundTrip(t *testing.T) {
	pg := pgtest.ForTest(t)
	src := openSQLite(t, "src.db")
	ids := scenarioIDs("pgrt-", 6)
	populate(t, src, ids, 31, 150)
	log1 := exportBytes(t, src, -1)

	p := openPostgres(t, pg)
	mp, sum := importMapped(t, p, log1)
	if srcTxs := committed(t, src, -1); len(mp) != len(srcTxs) || sum.KeptTxTimes != int64(len(srcTxs)) {
		t.Fatalf("PostgreSQL applied %d of %d source txs, %d with their tx time", len(mp), len(srcTxs), sum.KeptTxTimes)
	}
	sameHistories(t, src, p, ids, mp, true)
	sq := openSQLite(t, "sq.db")
	ms, _ := importMapped(t, sq, log1)
	for s, d := range mp {
		if ms[s] != d {
			t.Fatalf("source tx %d became tx %d on PostgreSQL and %d on SQLite", s, d, ms[s])
		}
	}

	fromPG, fromSQ := exportBytes(t, p, -1), exportBytes(t, sq, -1)
	if !bytes.Equal(body(t, fromPG), body(t, fromSQ)) {
		t.Fatalf("the exports of one history differ between PostgreSQL and SQLite:\npostgres:\n%s\nsqlite:\n%s", body(t, fromPG), body(t, fromSQ))
	}
	if again := exportBytes(t, p, -1); !bytes.Equal(fromPG, again) {
		t.Fatal("two exports of the PostgreSQL store differ")
	}
	if !bytes.Contains(fromPG, []byte(`"op":"evict"`)) || !bytes.Contains(log1, []byte(`"evicted":true`)) {
		t.Fatal("the scenario evicted nothing: the comparison is weaker than meant")
	}

	back := openSQLite(t, "back.db")
	mb, _ := importMapped(t, back, fromPG)
	if !bytes.Equal(body(t, exportBytes(t, back, -1)), body(t, fromPG)) {
		t.Fatal("PostgreSQL -> SQLite: the SQLite export differs from the PostgreSQL one")
	}
	m := map[int64]int64{}
	for s, d := range mp {
		m[s] = mb[d]
	}
	sameHistories(t, src, back, ids, m, true)
}

// TestPostgresXTDBRoundTrip: a history moved SQLite -> XTDB, then out of
// XTDB into PostgreSQL and into SQLite, exports with byte-identical bodies
// from both and keeps every history (tx times are XTDB's own, kept by the
// imports); and a history moved SQLite -> PostgreSQL -> XTDB keeps every
// history too.
func TestPostgresXTDBRoundTrip(t *testing.T) {
	x := openXTDB(t)
	pg := pgtest.ForTest(t)

	src := openSQLite(t, "src.db")
	ids := scenarioIDs(uniquePrefix("pgx"), 5)
	populate(t, src, ids, 47, 80)
	mx, _ := importMapped(t, x, exportBytes(t, src, -1))
	logX := exportBytes(t, x, minValue(mx)-1)
	p := openPostgres(t, pg)
	mp, _ := importMapped(t, p, logX)
	sq := openSQLite(t, "sq.db")
	importMapped(t, sq, logX)
	if fromPG, fromSQ := exportBytes(t, p, -1), exportBytes(t, sq, -1); !bytes.Equal(body(t, fromPG), body(t, fromSQ)) {
		t.Fatalf("XTDB's log imported into PostgreSQL and into SQLite exports differently:\npostgres:\n%s\nsqlite:\n%s", body(t, fromPG), body(t, fromSQ))
	}
	m := map[int64]int64{}
	for s, xt := range mx {
		m[s] = mp[xt]
	}
	sameHistories(t, src, p, ids, m, false)

	src2 := openSQLite(t, "src2.db")
	ids2 := scenarioIDs(uniquePrefix("pgx2"), 5)
	populate(t, src2, ids2, 48, 80)
	p2 := openPostgres(t, pg)
	m1, _ := importMapped(t, p2, exportBytes(t, src2, -1))
	m2, _ := importMapped(t, x, exportBytes(t, p2, -1))
	m = map[int64]int64{}
	for s, d := range m1 {
		m[s] = m2[d]
	}
	sameHistories(t, src2, x, ids2, m, false)
}
