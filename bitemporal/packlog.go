package bitemporal

import (
	"bytes"
	"database/sql/driver"
	"errors"
	"fmt"

	"modernc.org/sqlite"
)

// The tx log's ops compressed (issue 18, migration 00010): a txs row's ops
// are the JSON text of its logged ops (always starting with '[') or, when
// smaller, logFlate followed by a DEFLATE stream of that text, stored as a
// BLOB. The entity ids and hashes each op names are most of a row, and a
// transaction names one session's entities: its ids share long prefixes.
//
// A packed row never holds a match's document inline (rows are packed
// only when none does; today's writes log every document by hash): an
// evict's scrub of inline documents (scrubMatches) reads only text rows.
const (
	logFlate = 0x01
	// logMin is the smallest ops text worth compressing.
	logMin = 64
)

// The SQL names of the migration's functions.
const (
	packLogFunc   = "ctxs_pack_log"
	unpackLogFunc = "ctxs_log"
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

// unpackLog returns the ops text of a stored txs row.
func unpackLog(b []byte) ([]byte, error) {
	switch {
	case len(b) > 0 && b[0] == '[':
		return b, nil
	case len(b) > 1 && b[0] == logFlate:
		out, err := inflate(b[1:], 3*len(b), nil)
		if err != nil {
			return nil, fmt.Errorf("stored ops are corrupt: %w", err)
		}
		return out, nil
	}
	return nil, errors.New("stored ops are corrupt or of a newer format")
}

// registerLogFuncs registers the migration's functions: ctxs_pack_log(ops)
// gives the stored form of a text row, ctxs_log(ops) the text of any.
func registerLogFuncs() error {
	return errors.Join(
		sqlite.RegisterDeterministicScalarFunction(packLogFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			if s, ok := args[0].(string); ok {
				return packLog([]byte(s)), nil
			}
			return args[0], nil
		}),
		sqlite.RegisterDeterministicScalarFunction(unpackLogFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			b, ok := args[0].([]byte)
			if !ok {
				return args[0], nil
			}
			out, err := unpackLog(b)
			if err != nil {
				return nil, err
			}
			return string(out), nil
		}),
	)
}
