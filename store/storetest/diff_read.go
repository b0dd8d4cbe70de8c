package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// readKind names the read a readSpec makes.
type readKind int

const (
	readCommitted readKind = iota
	readHistory
	readEntity
	readEntityTx
	readQuery
	readTxLog // the run's transactions in the tx log, q at a time (0: all)
)

// readSpec is one read of the differential test. Tx references are indexes
// into the generated program (gTx.orig); a run of a reduced program maps
// them to its last kept tx at or before them.
type readSpec struct {
	kind    readKind
	e       int       // entity index (for queries: the entity a template refers to)
	tx      int       // basis tx; -1: latest
	vt      time.Time // basis valid time
	order   store.SortOrder
	corr    bool
	startVT *time.Time
	endVT   *time.Time
	startTx int // -1: none
	endTx   int // -1: none
	q       int // query template
	rng     int // for the range template: an index of diffRanges
	limit   int // history limit; 0: none
}

// execution is one run of a program against two stores.
type execution struct {
	ctx    context.Context
	pfx    string
	prog   []gTx
	stores [2]store.Store
	recs   [2][]store.Tx
}

// pos maps an original tx index to the position of the last kept tx at or
// before it, or -1.
func (x *execution) pos(orig int) int {
	p := -1
	for i, tx := range x.prog {
		if tx.orig <= orig {
			p = i
		}
	}
	return p
}

// txRef renders a tx id of store i as its position in the program.
func (x *execution) txRef(i int, id int64) string {
	for k, r := range x.recs[i] {
		if r.ID == id {
			return fmt.Sprintf("tx#%d", k)
		}
	}
	return "foreign-tx"
}

// strip renders a document canonically without the run's prefix.
func (x *execution) strip(d store.Doc) string {
	if d == nil {
		return "absent"
	}
	c, err := store.Canonical(d)
	if err != nil {
		return "uncanonical document"
	}
	return strings.ReplaceAll(string(c), x.pfx, "")
}

// errText renders an error by its kind; ErrUnavailable and errors of no
// kind are failures of the run, not answers.
func errText(err error) (string, error) {
	switch k := store.KindOf(err); k {
	case store.ErrNotFound, store.ErrInvalid, store.ErrConflict:
		return "error: " + k.Error(), nil
	case store.ErrUnavailable:
		return "", err
	}
	return "", fmt.Errorf("error of no store kind: %w", err)
}

// basis returns the basis of sp for store i; ok is false if the basis tx
// is before every kept tx.
func (x *execution) basis(i int, sp readSpec) (store.Basis, bool) {
	b := store.Basis{ValidTime: sp.vt}
	if sp.tx >= 0 {
		p := x.pos(sp.tx)
		if p < 0 {
			return b, false
		}
		b.TxID = &x.recs[i][p].ID
	}
	return b, true
}

// bound maps an optional tx bound to store i's tx id.
func (x *execution) bound(i, orig int) *int64 {
	if orig < 0 {
		return nil
	}
	if p := x.pos(orig); p >= 0 {
		return &x.recs[i][p].ID
	}
	return nil
}

// read makes sp on store i and renders the answer so that equal answers
// from the two stores render the same: tx ids as program positions, no tx
// times, content hashes only as groups of rows sharing one. ok is false
// if the read does not apply to this program.
func (x *execution) read(i int, sp readSpec) (out string, ok bool, err error) {
	s := x.stores[i]
	if sp.kind == readTxLog {
		out, err := x.txLog(i, sp.q)
		return out, true, err
	}
	if sp.kind == readCommitted {
		p := x.pos(sp.tx)
		if p < 0 || x.prog[p].orig != sp.tx {
			return "", false, nil
		}
		c, err := s.TxCommitted(x.ctx, x.recs[i][p].ID)
		if err != nil {
			out, err := errText(err)
			return out, true, err
		}
		return fmt.Sprint(c), true, nil
	}
	b, ok := x.basis(i, sp)
	if !ok {
		return "", false, nil
	}
	id := entityID(x.pfx, sp.e)
	switch sp.kind {
	case readEntity:
		d, err := s.Entity(x.ctx, id, b)
		if err != nil {
			out, err := errText(err)
			return out, true, err
		}
		return x.strip(d), true, nil
	case readEntityTx:
		et, err := s.EntityTx(x.ctx, id, b)
		if err != nil {
			out, err := errText(err)
			return out, true, err
		}
		return fmt.Sprintf("vt=%s %s deleted=%v", store.FormatTime(et.ValidTime), x.txRef(i, et.TxID), et.Deleted), true, nil
	case readHistory:
		rows, err := s.History(x.ctx, id, store.HistoryOptions{Order: sp.order, WithCorrections: sp.corr, WithDocs: true,
			StartValidTime: sp.startVT, EndValidTime: sp.endVT, StartTxID: x.bound(i, sp.startTx), EndTxID: x.bound(i, sp.endTx), Basis: b, Limit: sp.limit})
		if err != nil {
			out, err := errText(err)
			return out, true, err
		}
		var sb strings.Builder
		groups := map[string]int{}
		for k, r := range rows {
			fmt.Fprintf(&sb, "\n\t\t%s %s ", store.FormatTime(r.ValidTime), x.txRef(i, r.TxID))
			if r.Deleted {
				sb.WriteString("deleted")
				continue
			}
			g, seen := groups[r.ContentHash]
			if !seen {
				g = k
				groups[r.ContentHash] = k
			}
			fmt.Fprintf(&sb, "%s hash-of-row-%d", x.strip(r.Doc), g)
		}
		if len(rows) == 0 {
			sb.WriteString(" no rows")
		}
		return sb.String(), true, nil
	case readQuery:
		docs, err := s.Query(x.ctx, x.query(sp, b))
		if err != nil {
			out, err := errText(err)
			return out, true, err
		}
		parts := make([]string, len(docs))
		for k, d := range docs {
			parts[k] = x.strip(d)
		}
		return "[" + strings.Join(parts, " ") + "]", true, nil
	}
	return "", false, errors.New("unknown read")
}

// queryTemplates is how many query shapes the differential test uses.
const queryTemplates = 7

// rangeTemplate is the template comparing v with a bound of diffRanges.
const rangeTemplate = 6

// diffRange is one comparison of the range template.
type diffRange struct {
	op    store.PredOp
	bound any
}

// diffRanges are the comparisons the range template draws from: every
// order operator against whole and fractional bounds (as Go and JSON
// numbers) below, between, at and above the whole values written (1-3),
// which compare by value whatever types a backend keeps numbers in.
var diffRanges = func() []diffRange {
	bounds := []any{0.5, 1, 1.5, json.Number("2.0"), json.Number("2.5"), 3, 3.25, json.Number("-1.5")}
	var out []diffRange
	for _, op := range []store.PredOp{store.Lt, store.Lte, store.Gt, store.Gte} {
		for _, b := range bounds {
			out = append(out, diffRange{op, b})
		}
	}
	return out
}()

// query builds query template sp.q, scoped to the run.
func (x *execution) query(sp readSpec, b store.Basis) store.Query {
	q := store.Query{Where: []store.Pred{store.Where("run", x.pfx)}, Basis: b}
	ref := entityID(x.pfx, sp.e)
	switch sp.q % queryTemplates {
	case 0:
		q.OrderBy = []store.Order{{Field: "v"}}
	case 1:
		q.Where = append(q.Where, store.Pred{Field: "v", Op: store.Gte, Value: 2})
		q.Find = []string{"v"}
	case 2:
		q.Where = append(q.Where, store.Where("refs", ref))
	case 3:
		q.Where = append(q.Where, store.Pred{Field: "refs", Op: store.RefBy, Value: ref})
	case 4:
		q.Where = append(q.Where, store.Pred{Field: "v", Op: store.In, Values: []any{1, 3}})
		q.OrderBy = []store.Order{{Field: "v", Desc: true}}
		q.Limit = 2
	case 5:
		q.Where = append(q.Where, store.Pred{Field: "refs", Op: store.Exists})
		q.Find = []string{"refs"}
	case rangeTemplate:
		r := diffRanges[sp.rng%len(diffRanges)]
		q.Where = append(q.Where, store.Pred{Field: "v", Op: r.op, Value: r.bound})
	}
	return q
}

// txLog reads the tx log of store i from before the run's first tx, page
// txs at a time (0: all at once), and renders the run's transactions:
// position, ops with entity names, valid times, documents without the
// run's prefix and whether they were evicted.
func (x *execution) txLog(i, page int) (string, error) {
	recs := x.recs[i]
	if len(recs) == 0 {
		return "no txs", nil
	}
	var log []store.LoggedTx
	for after := recs[0].ID - 1; ; {
		got, err := x.stores[i].TxLog(x.ctx, after, page)
		if err != nil {
			return "", err
		}
		log = append(log, got...)
		if page <= 0 || len(got) < page || got[len(got)-1].ID >= recs[len(recs)-1].ID {
			break
		}
		after = got[len(got)-1].ID
	}
	var sb strings.Builder
	for _, l := range log {
		ref := x.txRef(i, l.ID)
		if ref == "foreign-tx" {
			continue
		}
		sb.WriteString(ref + ":")
		for _, op := range l.Ops {
			fmt.Fprintf(&sb, " %s %s", op.Kind, strings.TrimPrefix(op.ID, x.pfx))
			for _, t := range []*time.Time{op.ValidFrom, op.ValidTo} {
				if t != nil {
					sb.WriteString(" " + store.FormatTime(*t))
				}
			}
			switch {
			case op.Evicted:
				sb.WriteString(" evicted")
			case op.Doc != nil:
				sb.WriteString(" " + x.strip(op.Doc))
			}
			sb.WriteString(";")
		}
		sb.WriteString("\n")
	}
	return sb.String(), nil
}

// describe renders sp as a call, with tx positions of this program.
func (x *execution) describe(sp readSpec) string {
	e := fmt.Sprintf("%q", entityName(sp.e))
	if sp.kind == readCommitted {
		return fmt.Sprintf("TxCommitted(tx#%d)", x.pos(sp.tx))
	}
	if sp.kind == readTxLog {
		return fmt.Sprintf("TxLog(the run's txs, %d a page)", sp.q)
	}
	basis := "vt=" + store.FormatTime(sp.vt)
	if sp.tx >= 0 {
		basis += fmt.Sprintf(" tx=tx#%d", x.pos(sp.tx))
	}
	switch sp.kind {
	case readEntity:
		return fmt.Sprintf("Entity(%s, {%s})", e, basis)
	case readEntityTx:
		return fmt.Sprintf("EntityTx(%s, {%s})", e, basis)
	case readQuery:
		return fmt.Sprintf("Query(%s, {%s})", queryText(sp), basis)
	}
	opts := []string{string(sp.order)}
	if sp.corr {
		opts = append(opts, "with corrections")
	}
	if sp.startVT != nil {
		opts = append(opts, "start vt "+store.FormatTime(*sp.startVT))
	}
	if sp.endVT != nil {
		opts = append(opts, "end vt "+store.FormatTime(*sp.endVT))
	}
	if sp.startTx >= 0 && x.pos(sp.startTx) >= 0 {
		opts = append(opts, fmt.Sprintf("start tx#%d", x.pos(sp.startTx)))
	}
	if sp.endTx >= 0 && x.pos(sp.endTx) >= 0 {
		opts = append(opts, fmt.Sprintf("end tx#%d", x.pos(sp.endTx)))
	}
	if sp.limit > 0 {
		opts = append(opts, fmt.Sprintf("limit %d", sp.limit))
	}
	return fmt.Sprintf("History(%s, %s, basis {%s})", e, strings.Join(opts, ", "), basis)
}

// queryText describes query template sp.q.
func queryText(sp readSpec) string {
	ref := fmt.Sprintf("%q", entityName(sp.e))
	if sp.q%queryTemplates == rangeTemplate {
		r := diffRanges[sp.rng%len(diffRanges)]
		return fmt.Sprintf("where run, v %s %v", r.op, r.bound)
	}
	return [queryTemplates - 1]string{
		"where run; order by v",
		"where run, v >= 2; find v",
		"where run, refs = " + ref,
		"where run, refs ref_by " + ref,
		"where run, v in [1 3]; order by v desc; limit 2",
		"where run, refs exists; find refs",
	}[sp.q%queryTemplates]
}
