package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// diffInstants are the valid times the differential test writes at: a
// small set at millisecond precision, some 1ms apart, so that writes
// collide, restore and continue one another. All are far before the real
// clock, so the tx time (the default valid time of a match) is after all.
var diffInstants = []time.Time{
	inst("2019-01-01T00:00:00.000Z"),
	inst("2019-01-01T00:00:00.001Z"),
	inst("2019-06-15T12:30:00.250Z"),
	inst("2020-01-01T00:00:00.000Z"),
	inst("2020-02-29T23:59:59.999Z"),
	inst("2020-03-01T00:00:00.000Z"),
	inst("2021-01-01T00:00:00.000Z"),
	inst("2021-07-04T10:20:30.040Z"),
}

// diffReadTimes are the valid times the differential test reads at: each
// instant, 1ms before it, and times before and after all of them.
var diffReadTimes = func() []time.Time {
	out := []time.Time{inst("2018-01-01"), endOfTime}
	for _, t := range diffInstants {
		out = append(out, t, t.Add(-time.Millisecond))
	}
	return out
}()

// gOp is one generated op, on entity index e, with valid times as indexes
// of diffInstants (-1: none). A put's (and a match's) document is
// {"xt/id", "run", "v": v, "refs": [ids of refs]}; a match with v == 0
// expects absence.
type gOp struct {
	kind     store.OpKind
	e        int
	v        int
	refs     []int
	from, to int
}

// gTx is one generated transaction; orig is its index in the generated
// program (kept when a reduced program drops others).
type gTx struct {
	orig int
	ops  []gOp
}

func entityName(e int) string           { return "e" + strconv.Itoa(e) }
func entityID(pfx string, e int) string { return pfx + entityName(e) }

func genDoc(pfx string, e, v int, refs []int) store.Doc {
	d := store.Doc{store.IDKey: entityID(pfx, e), "run": pfx, "v": v}
	if len(refs) > 0 {
		arr := make([]any, len(refs))
		for i, r := range refs {
			arr[i] = entityID(pfx, r)
		}
		d["refs"] = arr
	}
	return d
}

func instantPtr(i int) *time.Time {
	if i < 0 {
		return nil
	}
	t := diffInstants[i]
	return &t
}

// op makes the store op, with ids under pfx.
func (o gOp) op(pfx string) store.Op {
	id := entityID(pfx, o.e)
	switch o.kind {
	case store.OpPut:
		return store.Op{Kind: store.OpPut, ID: id, Doc: genDoc(pfx, o.e, o.v, o.refs), ValidFrom: instantPtr(o.from), ValidTo: instantPtr(o.to)}
	case store.OpMatch:
		op := store.Op{Kind: store.OpMatch, ID: id, ValidFrom: instantPtr(o.from)}
		if o.v != 0 {
			op.Doc = genDoc(pfx, o.e, o.v, o.refs)
		}
		return op
	case store.OpEvict:
		return store.Evict(id)
	}
	return store.Op{Kind: o.kind, ID: id, ValidFrom: instantPtr(o.from), ValidTo: instantPtr(o.to)}
}

func (tx gTx) storeOps(pfx string) []store.Op {
	ops := make([]store.Op, len(tx.ops))
	for i, o := range tx.ops {
		ops[i] = o.op(pfx)
	}
	return ops
}

// content returns the v and refs of a generated document (v 0: absent).
func content(d store.Doc, pfx string) (int, []int) {
	if d == nil {
		return 0, nil
	}
	v, _ := d["v"].(int)
	var refs []int
	arr, _ := d["refs"].([]any)
	for _, r := range arr {
		s, _ := r.(string)
		if n, err := strconv.Atoi(strings.TrimPrefix(s, pfx+"e")); err == nil {
			refs = append(refs, n)
		}
	}
	return v, refs
}

// generate makes cfg.Txs random transactions. It keeps its own Model to
// know the current documents, so that it can write matches that hold.
func generate(r *rand.Rand, cfg DiffConfig) ([]gTx, error) {
	const pfx = "gen-"
	ctx := context.Background()
	m := NewModel(nil)
	current := func(e, at int) (int, []int) {
		b := store.Basis{}
		if at >= 0 {
			b.ValidTime = diffInstants[at]
		}
		d, _ := m.Entity(ctx, entityID(pfx, e), b)
		return content(d, pfx)
	}
	vt := func() int { return r.IntN(len(diffInstants)) }
	refs := func() []int {
		if r.IntN(100) >= 30 {
			return nil
		}
		out := []int{r.IntN(cfg.Entities)}
		if r.IntN(2) == 0 {
			out = append(out, r.IntN(cfg.Entities))
		}
		return out
	}
	var prog []gTx
	for i := range cfg.Txs {
		n := 1
		if r.IntN(100) < 40 {
			n += 1 + r.IntN(3)
		}
		touched, evicted := map[int]bool{}, map[int]bool{}
		var ops []gOp
		for tries := 0; len(ops) < n && tries < 20; tries++ {
			e := r.IntN(cfg.Entities)
			if evicted[e] {
				continue // evict then re-put in one tx is a known XTDB bug (#1337)
			}
			op := gOp{e: e, from: -1, to: -1}
			p := r.IntN(100)
			if p >= 64 && p < 88 && touched[e] {
				p = 0 // a match sees the tx so far: keep matches to untouched entities
			}
			switch {
			case p < 28:
				op.kind, op.v, op.refs, op.from = store.OpPut, 1+r.IntN(3), refs(), vt()
			case p < 42:
				op.kind, op.v, op.refs, op.from, op.to = store.OpPut, 1+r.IntN(3), refs(), vt(), vt()
			case p < 54:
				op.kind, op.from = store.OpDelete, vt()
			case p < 64:
				op.kind, op.from, op.to = store.OpDelete, vt(), vt()
			case p < 88:
				op.kind = store.OpMatch
				if r.IntN(2) == 0 {
					op.from = vt()
				}
				op.v, op.refs = current(e, op.from)
				if p >= 76 { // a match that fails
					switch {
					case op.v == 0:
						op.v = 1 + r.IntN(3)
					case r.IntN(3) == 0:
						op.v, op.refs = 0, nil
					default:
						op.v = op.v%3 + 1
					}
				}
			case p < 92:
				op.kind = store.OpEvict
				evicted[e] = true
			default: // put the document that is already there
				op.kind, op.from = store.OpPut, vt()
				if op.v, op.refs = current(e, op.from); op.v == 0 {
					op.v = 1
				}
			}
			if op.to >= 0 && op.to < op.from {
				op.from, op.to = op.to, op.from
			}
			touched[e] = true
			ops = append(ops, op)
		}
		if len(ops) == 0 {
			ops = append(ops, gOp{kind: store.OpPut, e: 0, v: 1, from: vt(), to: -1})
		}
		tx := gTx{orig: i, ops: ops}
		if _, err := m.Submit(ctx, tx.storeOps(pfx)); err != nil {
			return nil, fmt.Errorf("storetest: generated tx %d is invalid: %w", i, err)
		}
		prog = append(prog, tx)
	}
	return prog, nil
}

// plan makes the reads of a run: TxCommitted of every tx; the full history
// of every entity, in both orders, with and without corrections; Entity
// and EntityTx of every entity at every read time at the latest tx; every
// query template at the latest tx (the range template with every
// comparison of diffRanges); the tx log of the run, whole and in pages;
// and at BasisPoints random (valid time,
// tx) bases, Entity and EntityTx of every entity, a bounded history and a
// query.
func plan(r *rand.Rand, cfg DiffConfig) []readSpec {
	var specs []readSpec
	for k := range cfg.Txs {
		specs = append(specs, readSpec{kind: readCommitted, tx: k})
	}
	for e := range cfg.Entities {
		for _, order := range []store.SortOrder{store.Asc, store.Desc} {
			for _, corr := range []bool{false, true} {
				specs = append(specs, readSpec{kind: readHistory, e: e, tx: -1, vt: endOfTime, order: order, corr: corr, startTx: -1, endTx: -1})
			}
		}
		// One limited history per entity, the order, corrections and
		// limit (1 to 3) cycling with the entity.
		order := []store.SortOrder{store.Asc, store.Desc}[e%2]
		specs = append(specs, readSpec{kind: readHistory, e: e, tx: -1, vt: endOfTime, order: order, corr: e/2%2 == 1, startTx: -1, endTx: -1, limit: 1 + e%3})
		for _, vt := range diffReadTimes {
			specs = append(specs, readSpec{kind: readEntity, e: e, tx: -1, vt: vt}, readSpec{kind: readEntityTx, e: e, tx: -1, vt: vt})
		}
	}
	for q := range queryTemplates {
		specs = append(specs, readSpec{kind: readQuery, e: r.IntN(cfg.Entities), tx: -1, vt: diffReadTimes[r.IntN(len(diffReadTimes))], q: q})
	}
	for k := range diffRanges {
		specs = append(specs, readSpec{kind: readQuery, tx: -1, vt: diffReadTimes[r.IntN(len(diffReadTimes))], q: rangeTemplate, rng: k})
	}
	readTime := func() time.Time { return diffReadTimes[r.IntN(len(diffReadTimes))] }
	optTime := func() *time.Time {
		if r.IntN(3) > 0 {
			return nil
		}
		t := readTime()
		return &t
	}
	optTx := func() int {
		if r.IntN(3) > 0 {
			return -1
		}
		return r.IntN(cfg.Txs)
	}
	// The tx log, whole and in pages (an evict after a page's end is
	// found differently from one within it).
	for _, page := range []int{0, 1, 7} {
		specs = append(specs, readSpec{kind: readTxLog, q: page})
	}
	// Limits of the bounded histories come from their own stream, so that
	// a seed draws the same transactions and reads as before limits were.
	lr := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6c696d6974))
	for range cfg.BasisPoints {
		tx, vt := r.IntN(cfg.Txs), readTime()
		for e := range cfg.Entities {
			specs = append(specs, readSpec{kind: readEntity, e: e, tx: tx, vt: vt}, readSpec{kind: readEntityTx, e: e, tx: tx, vt: vt})
		}
		h := readSpec{kind: readHistory, e: r.IntN(cfg.Entities), tx: tx, vt: vt, order: store.Asc, corr: r.IntN(2) == 0,
			startVT: optTime(), endVT: optTime(), startTx: optTx(), endTx: optTx()}
		if r.IntN(2) == 0 {
			h.order = store.Desc
		}
		if lr.IntN(2) == 0 {
			h.limit = 1 + lr.IntN(3)
		}
		specs = append(specs, h, readSpec{kind: readQuery, e: r.IntN(cfg.Entities), tx: tx, vt: vt, q: r.IntN(queryTemplates), rng: r.IntN(len(diffRanges))})
	}
	return specs
}
