package bitemporal

import (
	"database/sql/driver"
	"hash/fnv"

	"modernc.org/sqlite"
)

// Entity ids are interned (migration 00014): the table ents
// holds each id once, and points, docs and search units name it by
// ents.id. An id was 40-90 bytes (session ids are in most of them) in every
// point, docs row and its index, and search unit.
//
// ents is found by id through an index on h, a 32-bit hash of the id
// (ctxs_idhash), not on the id itself: the index holds a few bytes per
// entity instead of a second copy of its id. Hashes may collide; a lookup
// compares the id as well, so a collision costs one more row read, never a
// wrong answer. An id gets its row before anything names it (insertEntSQL,
// which looks it up the same way), so it has exactly one.
const idHashFunc = "ctxs_idhash"

// entSQL is the ents.id of the entity id bound to the parameter it holds,
// NULL for an id the store does not hold.
const entSQL = "(SELECT e.id FROM (SELECT ? AS v) x JOIN ents e ON e.h = " + idHashFunc + "(x.v) AND e.eid = x.v)"

// insertEntSQL gives entity ? its ents row, if it has none: a put or a
// delete runs it before writing the entity's document and points.
const insertEntSQL = "INSERT INTO ents (eid, h) SELECT x.v, " + idHashFunc + "(x.v) FROM (SELECT ? AS v) x " +
	"WHERE NOT EXISTS (SELECT 1 FROM ents e WHERE e.h = " + idHashFunc + "(x.v) AND e.eid = x.v)"

// idHash is ctxs_idhash: FNV-1a of the id's bytes, as a signed 32-bit
// integer (SQLite stores it in 4 bytes).
func idHash(id string) int64 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int64(int32(h.Sum32()))
}

func registerEntFuncs() error {
	return sqlite.RegisterDeterministicScalarFunction(idHashFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case string:
			return idHash(v), nil
		case []byte:
			return idHash(string(v)), nil
		}
		return nil, nil
	})
}
