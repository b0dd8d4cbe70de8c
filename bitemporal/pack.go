package bitemporal

import (
	"bytes"
	"compress/flate"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"modernc.org/sqlite"
)

// Documents are stored compressed (migration 00009). A docs row
// holds a document's JSONB (migration 00006) or, when smaller, a packed
// form behind a two-byte header: packMagic, then the format.
//
//   - packFlate: a raw DEFLATE stream (RFC 1951, compress/flate) of the
//     JSONB.
//   - packSplit, for a document with long top-level strings (a file's
//     content, a tool's output): those members' keys; the document's
//     JSONB with each of their values replaced by null (the skeleton,
//     kept as it is); a DEFLATE stream of the replaced values' JSONB
//     elements, in order. Reading one of the other fields (a projection,
//     a predicate on a field the field index does not hold) reads the
//     skeleton and inflates nothing (ctxs_part).
//   - packDelta (migration 00011): a DEFLATE stream of the JSONB whose
//     dictionary is the JSONB of an earlier version of the same entity,
//     the row docs.base names (never a delta itself, so a read inflates
//     at most two documents).
//
// JSONB's first byte names the root element's type in its low four bits,
// 0-12; 13-15 are reserved, so a packed row can never be read as JSONB:
// SQLite's JSON functions refuse it (malformed JSON) instead of answering
// from it. Unpacking gives back a JSONB whose json() is the canonical text
// the content hash is over, byte for byte (elements are copied as they
// are; only the root object's header is written again).
//
// SQL reads documents through ctxs_doc(doc), which gives the JSONB of any
// form (and a text document, as stores before 00006 held them, as it is),
// or ctxs_part(doc, field) where one top-level field is read; writes store
// ctxs_pack(jsonb(?)). They are registered with the sqlite driver before
// the first connection opens, on every connection of the process. The
// sqlite3 shell does not know them: it can read every table, but not the
// documents' fields or the search_src view.
const (
	packMagic = 0x0d // a reserved JSONB element type: never a JSONB document's first byte
	packFlate = 0x01
	packSplit = 0x02
	packDelta = 0x03
	// packMin is the smallest JSONB worth compressing: below it the
	// header and DEFLATE's own overhead leave little or nothing.
	packMin = 128
	// deltaKeep is the largest share of a document's size packed alone
	// that its delta may take (packAgainst).
	deltaKeep = 0.7
	// splitMin is the payload size from which a top-level string member
	// leaves the skeleton of a packSplit document.
	splitMin = 512
	// deltaMax is the largest document, and the largest stored base, a
	// delta is tried for. DEFLATE looks back 32 KiB, so a delta saves at
	// most that much of a document's start; past deltaMax the saving is
	// a sliver, while the base would be inflated whole on every write (a
	// write's memory would grow with the base, not with the write).
	deltaMax = 1 << 20
)

// The SQL names of the functions.
const (
	unpackFunc = "ctxs_doc"
	partFunc   = "ctxs_part"
	packFunc   = "ctxs_pack"
)

var registerOnce sync.Once
var registerErr error

// registerFuncs registers ctxs_doc, ctxs_part and ctxs_pack with the sqlite
// driver (once per process; connections opened after it have them).
func registerFuncs() error {
	registerOnce.Do(func() {
		// The arguments are views of SQLite's memory (VolatileArgs): no
		// function keeps them past its call (the cache copies its key), and
		// a result that is a part of one is copied by the driver before the
		// call returns.
		fn := func(nargs int32, f func(args []driver.Value) (driver.Value, error)) *sqlite.FunctionImpl {
			return &sqlite.FunctionImpl{NArgs: nargs, Deterministic: true, VolatileArgs: true,
				Scalar: func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) { return f(args) }}
		}
		// ctxs_doc(doc[, base]), ctxs_part(doc, field[, base]) and
		// ctxs_pack(jsonb[, base]): base is the stored form of the row a
		// packDelta document is compressed against (docs.base), NULL or
		// absent for every other row.
		baseArg := func(args []driver.Value, i int) []byte {
			if len(args) > i {
				b, _ := args[i].([]byte)
				return b
			}
			return nil
		}
		registerErr = errors.Join(
			sqlite.RegisterFunction(unpackFunc, fn(-1, func(args []driver.Value) (driver.Value, error) {
				b, ok := args[0].([]byte)
				if !ok { // NULL (a tombstone's missing row), or text from before 00006
					return args[0], nil
				}
				return unpackCached(b, baseArg(args, 1))
			})),
			sqlite.RegisterFunction(partFunc, fn(-1, func(args []driver.Value) (driver.Value, error) {
				b, ok := args[0].([]byte)
				if !ok {
					return args[0], nil
				}
				field, _ := args[1].(string)
				if skel, ok := skeletonFor(b, field); ok {
					return skel, nil
				}
				return unpackCached(b, baseArg(args, 2))
			})),
			sqlite.RegisterFunction(packFunc, fn(-1, func(args []driver.Value) (driver.Value, error) {
				b, ok := args[0].([]byte)
				if !ok {
					return args[0], nil
				}
				base := baseArg(args, 1)
				out, err := packAgainst(b, base)
				if err == nil && isPacked(out) && len(b) >= splitMin {
					// The statement that packs a document goes on to
					// read it (the search triggers): from the cache, not
					// by inflating what was just deflated.
					remember(out, base, bytes.Clone(b))
				}
				return out, err
			})),
			registerLogFuncs(),
			registerEntFuncs(),
		)
	})
	return registerErr
}

// packLevel is the DEFLATE level of every packed form.
var packLevel = flate.DefaultCompression

var writers = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(io.Discard, packLevel)
	return w
}}

var readers = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

func deflate(buf *bytes.Buffer, b []byte) {
	w := writers.Get().(*flate.Writer)
	w.Reset(buf)
	_, _ = w.Write(b) // a bytes.Buffer does not fail
	_ = w.Close()
	writers.Put(w)
}

func inflate(b []byte, sizeHint int, dict []byte) ([]byte, error) {
	r := readers.Get().(io.ReadCloser)
	defer readers.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(b), dict); err != nil {
		return nil, err
	}
	out := bytes.NewBuffer(make([]byte, 0, sizeHint))
	if _, err := out.ReadFrom(r); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// pack returns the stored form of a document's JSONB: packed if that is
// smaller, else the JSONB itself. A packed blob is returned as it is (so
// packing twice, as a migration run again would, is harmless).
func pack(jsonb []byte) []byte {
	if len(jsonb) < packMin || isPacked(jsonb) {
		return jsonb
	}
	var buf bytes.Buffer
	if split(&buf, jsonb) && buf.Len() < len(jsonb) {
		return buf.Bytes()
	}
	buf.Reset()
	buf.Grow(len(jsonb) / 2)
	buf.WriteByte(packMagic)
	buf.WriteByte(packFlate)
	deflate(&buf, jsonb)
	if buf.Len() >= len(jsonb) {
		return jsonb
	}
	return buf.Bytes()
}

// packAgainst is pack, or, when base (the stored form of a row that is not
// a delta itself: an earlier version of the same entity, or the latest row
// stored whole of the same document type) is given and it saves enough,
// the packDelta form: a DEFLATE stream of jsonb whose dictionary is base's
// JSONB. A document packed as packSplit stays so (its fields read without
// inflating). Successive versions of a session head or chunk share most
// of their text, and so do a session's context commits or toolcalls with
// each other: compressed against one that came before, they take a
// fraction of their size.
//
// The delta is kept only when it is under deltaKeep of the document
// packed alone. A base that saves less than that has drifted from what is
// written now; the document is stored whole and becomes the base the next
// ones are compressed against (Store.keys, keyDocSQL), so the base follows
// the documents instead of staying the first one forever.
func packAgainst(jsonb, base []byte) ([]byte, error) {
	out := pack(jsonb)
	if base == nil || len(jsonb) < packMin || len(jsonb) > deltaMax || len(base) > deltaMax || isPacked(jsonb) || (isPacked(out) && out[1] == packSplit) ||
		(isPacked(base) && base[1] == packDelta) {
		return out, nil
	}
	dict, err := unpackCached(base, nil)
	if err != nil {
		return nil, err
	}
	if d := deflateDict(dict, jsonb); float64(2+len(d)) < deltaKeep*float64(len(out)) {
		return append([]byte{packMagic, packDelta}, d...), nil
	}
	return out, nil
}

// deflateDict returns a DEFLATE stream of b whose preset dictionary is
// dict. A preset dictionary is history in DEFLATE's window: compressing
// the dictionary, flushing (which ends on a byte boundary) and then b
// gives, after the flush, a stream a reader given the dictionary decodes.
// So a pooled writer serves (flate.NewWriterDict allocates a compressor,
// about 1 MB, per call).
func deflateDict(dict, b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(dict)/2 + len(b)/2)
	w := writers.Get().(*flate.Writer)
	w.Reset(&buf)
	_, _ = w.Write(dict)
	_ = w.Flush()
	mark := buf.Len()
	_, _ = w.Write(b)
	_ = w.Close()
	writers.Put(w)
	return buf.Bytes()[mark:]
}

// split writes the packSplit form of jsonb to buf, if jsonb is an object
// with long string members (whose keys are plain text, so that a field
// name compares with the key's bytes).
func split(buf *bytes.Buffer, jsonb []byte) bool {
	members, ok := objectMembers(jsonb)
	if !ok {
		return false
	}
	var keys [][]byte
	var skel, long []byte
	for _, m := range members {
		if isText(m.val.typ) && m.val.size >= splitMin && (m.key.typ == jText || m.key.typ == jTextRaw) {
			keys = append(keys, m.key.payload(jsonb))
			skel = append(skel, m.key.bytes(jsonb)...)
			skel = append(skel, jNull)
			long = append(long, m.val.bytes(jsonb)...)
			continue
		}
		skel = append(skel, jsonb[m.key.start:m.val.end()]...)
	}
	// Only when the long strings are the bulk of the document: the
	// skeleton is kept uncompressed.
	if len(keys) == 0 || 4*len(skel) > len(jsonb) {
		return false
	}
	buf.WriteByte(packMagic)
	buf.WriteByte(packSplit)
	buf.Write(binary.AppendUvarint(nil, uint64(len(keys))))
	for _, k := range keys {
		buf.Write(binary.AppendUvarint(nil, uint64(len(k))))
		buf.Write(k)
	}
	root := appendHeader(nil, jObject, len(skel))
	buf.Write(binary.AppendUvarint(nil, uint64(len(root)+len(skel))))
	buf.Write(root)
	buf.Write(skel)
	deflate(buf, long)
	return true
}

func isPacked(b []byte) bool { return len(b) >= 2 && b[0] == packMagic }

// splitForm is a packSplit blob taken apart.
type splitForm struct {
	keys     [][]byte
	skeleton []byte
	long     []byte // the DEFLATE stream
}

func parseSplit(b []byte) (splitForm, error) {
	var f splitForm
	rest := b[2:]
	next := func() (int, bool) {
		v, n := binary.Uvarint(rest)
		if n <= 0 || v > uint64(len(rest)) {
			return 0, false
		}
		rest = rest[n:]
		return int(v), true
	}
	nkeys, ok := next()
	if !ok {
		return f, errCorrupt
	}
	for range nkeys {
		n, ok := next()
		if !ok || n > len(rest) {
			return f, errCorrupt
		}
		f.keys, rest = append(f.keys, rest[:n]), rest[n:]
	}
	n, ok := next()
	if !ok || n > len(rest) {
		return f, errCorrupt
	}
	f.skeleton, f.long = rest[:n], rest[n:]
	return f, nil
}

var errCorrupt = errors.New("stored document is corrupt")

// skeletonFor returns the skeleton of a packSplit blob if field is not one
// of its long members (the skeleton then holds field's value, or lacks it
// as the document does).
func skeletonFor(b []byte, field string) ([]byte, bool) {
	if !isPacked(b) || b[1] != packSplit {
		return nil, false
	}
	f, err := parseSplit(b)
	if err != nil {
		return nil, false // unpack reports it
	}
	for _, k := range f.keys {
		if string(k) == field {
			return nil, false
		}
	}
	return f.skeleton, true
}

// unpack returns the JSONB of a stored document (b itself unless packed);
// base is the stored form of the row a packDelta document names.
func unpack(b, base []byte) ([]byte, error) {
	if !isPacked(b) {
		return b, nil
	}
	var out []byte
	var err error
	switch b[1] {
	case packFlate:
		out, err = inflate(b[2:], 3*len(b), nil)
	case packSplit:
		out, err = unsplit(b)
	case packDelta:
		if base == nil || (isPacked(base) && base[1] == packDelta) {
			return nil, fmt.Errorf("%s: %w: a delta without its base", unpackFunc, errCorrupt)
		}
		var dict []byte
		if dict, err = unpackCached(base, nil); err == nil {
			out, err = inflate(b[2:], 3*len(b)+len(dict), dict)
		}
	default:
		return nil, fmt.Errorf("%s: stored document is corrupt or of a newer format (%#x)", unpackFunc, b[1])
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", unpackFunc, errCorrupt, err)
	}
	return out, nil
}

// unsplit puts a packSplit document's long members back into its
// skeleton.
func unsplit(b []byte) ([]byte, error) {
	f, err := parseSplit(b)
	if err != nil {
		return nil, err
	}
	long, err := inflate(f.long, 4*len(f.long), nil)
	if err != nil {
		return nil, err
	}
	members, ok := objectMembers(f.skeleton)
	if !ok {
		return nil, errors.New("skeleton is not a JSONB object")
	}
	body := make([]byte, 0, len(f.skeleton)+len(long)) // the skeleton's nulls give way to the values
	k := 0
	for _, m := range members {
		if k < len(f.keys) && m.val.typ == jNull && bytes.Equal(m.key.payload(f.skeleton), f.keys[k]) {
			e, ok := element(long, 0)
			if !ok || !isText(e.typ) {
				return nil, errors.New("long values are cut short")
			}
			body = append(body, m.key.bytes(f.skeleton)...)
			body = append(body, e.bytes(long)...)
			long = long[e.end():]
			k++
			continue
		}
		body = append(body, f.skeleton[m.key.start:m.val.end()]...)
	}
	if k != len(f.keys) || len(long) != 0 {
		return nil, errors.New("long values do not match the skeleton")
	}
	return append(appendHeader(make([]byte, 0, 9+len(body)), jObject, len(body)), body...), nil
}

// unpackCache keeps the last documents unpacked: one SQL statement reads
// several fields of one document (the search triggers about fifteen, a
// query its predicates, order and projection), each through ctxs_doc.
var unpackCache struct {
	sync.Mutex
	keys  [8][]byte // the packed form
	bases [8][]byte // and its base (nil for none)
	vals  [8][]byte
	next  int
}

func unpackCached(b, base []byte) ([]byte, error) {
	if !isPacked(b) {
		return b, nil
	}
	if b[1] != packDelta {
		base = nil // not part of the document
	}
	c := &unpackCache
	c.Lock()
	for i, k := range c.keys {
		// Compared in place: a key is copied once, when it is stored,
		// not on every lookup (a trigger reads one document ~15 times).
		if c.vals[i] != nil && bytes.Equal(k, b) && bytes.Equal(c.bases[i], base) {
			v := c.vals[i]
			c.Unlock()
			return v, nil
		}
	}
	c.Unlock()
	v, err := unpack(b, base)
	if err != nil {
		return nil, err
	}
	remember(b, base, v)
	return v, nil
}

// remember caches v as the unpacked form of packed form b (with base,
// for a packDelta form).
func remember(b, base, v []byte) {
	if !isPacked(b) || b[1] != packDelta {
		base = nil
	}
	c := &unpackCache
	c.Lock()
	c.keys[c.next], c.bases[c.next], c.vals[c.next] = bytes.Clone(b), bytes.Clone(base), v
	c.next = (c.next + 1) % len(c.keys)
	c.Unlock()
}

// JSONB (https://sqlite.org/jsonb.html): each element is a header, whose
// first byte holds the type in its low four bits and in its high four the
// payload size (0-11) or how many big-endian bytes after it hold the size
// (12: 1, 13: 2, 14: 4, 15: 8), then the payload. An object's payload is
// its keys and values, alternating.
const (
	jNull    = 0x0
	jText    = 0x7
	jTextJ   = 0x8
	jText5   = 0x9
	jTextRaw = 0xa
	jObject  = 0xc
)

func isText(typ byte) bool { return typ >= jText && typ <= jTextRaw }

// elem is one JSONB element of a buffer: its header starts at start, its
// payload at start+hdr and is size bytes long.
type elem struct {
	start, hdr, size int
	typ              byte
}

func (e elem) end() int                { return e.start + e.hdr + e.size }
func (e elem) bytes(b []byte) []byte   { return b[e.start:e.end()] }
func (e elem) payload(b []byte) []byte { return b[e.start+e.hdr : e.end()] }
func (e elem) within(b []byte) bool    { return e.end() <= len(b) && e.end() >= e.start }

type member struct{ key, val elem }

// element reads the element at b[i:].
func element(b []byte, i int) (elem, bool) {
	if i >= len(b) {
		return elem{}, false
	}
	e := elem{start: i, typ: b[i] & 0x0f}
	sz := int(b[i] >> 4)
	if sz <= 11 {
		e.hdr, e.size = 1, sz
		return e, e.within(b)
	}
	n := 1 << (sz - 12) // 1, 2, 4 or 8 bytes of size
	if i+1+n > len(b) {
		return elem{}, false
	}
	var v uint64
	for _, c := range b[i+1 : i+1+n] {
		v = v<<8 | uint64(c)
	}
	if v > uint64(len(b)) {
		return elem{}, false
	}
	e.hdr, e.size = 1+n, int(v)
	return e, e.within(b)
}

// objectMembers lists the members of a JSONB object that is the whole of
// b; ok is false for anything else.
func objectMembers(b []byte) ([]member, bool) {
	root, ok := element(b, 0)
	if !ok || root.typ != jObject || root.end() != len(b) {
		return nil, false
	}
	var out []member
	for i := root.hdr; i < len(b); {
		k, ok := element(b, i)
		if !ok || !isText(k.typ) {
			return nil, false
		}
		v, ok := element(b, k.end())
		if !ok {
			return nil, false
		}
		out = append(out, member{k, v})
		i = v.end()
	}
	return out, true
}

// appendHeader appends the smallest header of an element of type typ with
// a payload of size bytes.
func appendHeader(dst []byte, typ byte, size int) []byte {
	switch {
	case size <= 11:
		return append(dst, byte(size)<<4|typ)
	case size <= 0xff:
		return append(dst, 12<<4|typ, byte(size))
	case size <= 0xffff:
		return binary.BigEndian.AppendUint16(append(dst, 13<<4|typ), uint16(size))
	case size <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(dst, 14<<4|typ), uint32(size))
	}
	return binary.BigEndian.AppendUint64(append(dst, 15<<4|typ), uint64(size))
}
