package bitemporal

import (
	"bytes"
	"database/sql/driver"
	"errors"
	"fmt"

	"modernc.org/sqlite"
)

// The tx log's ops compressed (migration 00010): a txs row's ops
// are the JSON text of its logged ops (always starting with '[') or, when
// smaller, logFlate followed by a DEFLATE stream of that text, stored as a
// BLOB. The entity ids and hashes each op names are most of a row, and a
// transaction names one session's entities: its ids share long prefixes.
//
// A packed row never holds a match's document inline (rows are packed
// only when none does; today's writes log every document by hash): an
// evict's scrub of inline documents (scrubMatches) reads only text rows.
//
// Since migration 00017 a row may be logDelta followed by a DEFLATE stream
// whose dictionary is the ops text of the row txs.base names: a row stored
// logFlate, never a delta or text itself, so a read inflates at most two
// rows and an evict's scrub never rewrites a base. A transaction's ops
// repeat the ids and hashes of the one before (a match names the hash the
// last put wrote); compressed alone, those are most of a row.
const (
	logFlate = 0x01
	logDelta = 0x02
	// logMin is the smallest ops text worth compressing.
	logMin = 64
)

// logBase is the row the next tx's ops are compressed against: the latest
// row stored logFlate, once its transaction committed (a base a rollback
// removed would leave a delta nothing can read).
type logBase struct {
	txID int64
	text []byte
}

// packLogAgainst returns the stored form of a tx's ops given their form
// alone (packLog): a logDelta against base when that is under deltaKeep of
// the form alone, else the form alone. isBase says whether the row can be
// the next base (stored logFlate).
func packLogAgainst(ops []byte, alone any, base *logBase) (stored any, delta bool, isBase bool) {
	packed, ok := alone.([]byte)
	if !ok {
		return alone, false, false // text: too small, or holding a document
	}
	if base != nil {
		d := deflateDict(base.text, ops)
		if float64(1+len(d)) < deltaKeep*float64(len(packed)) {
			return append([]byte{logDelta}, d...), true, false
		}
	}
	return packed, false, true
}

// The SQL names of the migration's functions.
const (
	packLogFunc   = "ctxs_pack_log"
	unpackLogFunc = "ctxs_log"
	// unpackLogBaseFunc is ctxs_log given the base row's stored ops too.
	unpackLogBaseFunc = "ctxs_log_base"
)

// packLog returns the stored form of a tx's ops text: packed if that is
// smaller and no op holds a document inline, else the text itself.
func packLog(ops []byte) any {
	if len(ops) < logMin || ops[0] != '[' || bytes.Contains(ops, []byte(`"doc":`)) {
		return string(ops)
	}
	var buf bytes.Buffer
	buf.Grow(len(ops) / 2)
	buf.WriteByte(logFlate)
	deflate(&buf, ops)
	if buf.Len() >= len(ops) {
		return string(ops)
	}
	return buf.Bytes()
}

// unpackLog returns the ops text of a stored txs row; base is the stored
// ops of the row its txs.base names (nil for a row with none).
func unpackLog(b, base []byte) ([]byte, error) {
	switch {
	case len(b) > 0 && b[0] == '[':
		return b, nil
	case len(b) > 1 && b[0] == logFlate:
		out, err := inflate(b[1:], 3*len(b), nil)
		if err != nil {
			return nil, fmt.Errorf("stored ops are corrupt: %w", err)
		}
		return out, nil
	case len(b) > 1 && b[0] == logDelta:
		if len(base) < 2 || base[0] != logFlate {
			return nil, errors.New("stored ops are a delta without their base row")
		}
		dict, err := unpackLog(base, nil)
		if err != nil {
			return nil, fmt.Errorf("the base row: %w", err)
		}
		out, err := inflate(b[1:], 4*len(b), dict)
		if err != nil {
			return nil, fmt.Errorf("stored ops are corrupt: %w", err)
		}
		return out, nil
	}
	return nil, errors.New("stored ops are corrupt or of a newer format")
}

// registerLogFuncs registers the migrations' functions: ctxs_pack_log(ops)
// gives the stored form of a text row, ctxs_log(ops) the text of any row
// but a delta, ctxs_log_base(ops, base) of any (base: the stored ops of the
// row txs.base names, or NULL).
func registerLogFuncs() error {
	return errors.Join(
		sqlite.RegisterDeterministicScalarFunction(packLogFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			if s, ok := args[0].(string); ok {
				return packLog([]byte(s)), nil
			}
			return args[0], nil
		}),
		sqlite.RegisterDeterministicScalarFunction(unpackLogFunc, 1, unpackLogSQL),
		sqlite.RegisterDeterministicScalarFunction(unpackLogBaseFunc, 2, unpackLogSQL),
	)
}

// unpackLogSQL is ctxs_log(ops) and ctxs_log_base(ops, base).
func unpackLogSQL(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	b, ok := args[0].([]byte)
	if !ok {
		return args[0], nil
	}
	var base []byte
	if len(args) > 1 {
		base, _ = args[1].([]byte)
	}
	out, err := unpackLog(b, base)
	if err != nil {
		return nil, err
	}
	return string(out), nil
}
