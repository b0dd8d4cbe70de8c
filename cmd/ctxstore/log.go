package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/ctxstore/ctxstore/store"
)

type logCmd struct {
	After afterFlag `name:"after" default:"-1" placeholder:"N" help:"Only transactions after tx N (default: -1, from the first)."`
	Limit int       `name:"limit" placeholder:"N" help:"At most N transactions (0: no limit)."`
}

type statusCmd struct{}

// afterFlag is an --after value: a tx id, or -1 for the whole log (the
// default). It takes "--after -1" as written: kong alone reads a value
// that starts with "-" as a short flag and refuses it.
type afterFlag int64

// Decode implements kong.MapperValue.
func (f *afterFlag) Decode(ctx *kong.DecodeContext) error {
	t := ctx.Scan.Pop()
	if t.IsEOL() {
		return usagef("missing value: want a tx id, or -1 for all")
	}
	s := fmt.Sprint(t.Value)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < -1 {
		return usagef("%q: want a tx id, or -1 for all", s)
	}
	*f = afterFlag(n)
	return nil
}

// opJSON is one op of log --json. valid_from, valid_to and doc are left
// out when the op has none. evicted (true, only then present) marks a put
// or match whose document was evicted since, so that a match without doc
// and without evicted is one that expected the entity to be absent.
type opJSON struct {
	Op        store.OpKind `json:"op"`
	ID        string       `json:"id"`
	ValidFrom *string      `json:"valid_from,omitempty"`
	ValidTo   *string      `json:"valid_to,omitempty"`
	Doc       jsonDoc      `json:"doc,omitempty"`
	Evicted   bool         `json:"evicted,omitempty"`
}

// logJSON is one transaction of log --json.
type logJSON struct {
	TxID   int64    `json:"tx_id"`
	TxTime string   `json:"tx_time"`
	Ops    []opJSON `json:"ops"`
}

// Run implements log.
func (c *logCmd) Run(a *app) error {
	if c.Limit < 0 {
		return usagef("--limit %d: must not be negative", c.Limit)
	}
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	txs, err := s.TxLog(a.ctx, int64(c.After), c.Limit)
	if err != nil {
		return err
	}
	if a.cli.JSON {
		out := make([]logJSON, len(txs))
		for i, tx := range txs {
			l := logJSON{TxID: tx.ID, TxTime: timeText(tx.Time), Ops: make([]opJSON, len(tx.Ops))}
			for j, op := range tx.Ops {
				l.Ops[j] = opJSON{Op: op.Kind, ID: op.ID, ValidFrom: optTimeText(op.ValidFrom), ValidTo: optTimeText(op.ValidTo), Doc: jsonDoc(op.Doc), Evicted: op.Evicted}
			}
			out[i] = l
		}
		return a.printJSON(out)
	}
	for _, tx := range txs {
		fmt.Fprintf(a.stdout, "tx %d at %s\n", tx.ID, timeText(tx.Time))
		for _, op := range tx.Ops {
			fmt.Fprintf(a.stdout, "  %s\n", opText(op))
		}
	}
	return nil
}

// opText describes an op on one line.
func opText(op store.Op) string {
	parts := []string{fmt.Sprintf("%-6s %s", op.Kind, op.ID)}
	switch {
	case op.ValidFrom != nil && op.ValidTo != nil:
		parts = append(parts, fmt.Sprintf("valid %s to %s", timeText(*op.ValidFrom), timeText(*op.ValidTo)))
	case op.ValidFrom != nil:
		parts = append(parts, "valid from "+timeText(*op.ValidFrom))
	}
	switch {
	case op.Kind == store.OpPut && op.Doc == nil:
		parts = append(parts, "(document evicted)")
	case op.Kind == store.OpMatch && op.Evicted:
		parts = append(parts, "(expected document evicted)")
	case op.Kind == store.OpMatch && op.Doc == nil:
		parts = append(parts, "(expects absence)")
	}
	return termSafe(strings.Join(parts, "  "), false)
}

// statusJSON is the --json output of status.
type statusJSON struct {
	Backend         string  `json:"backend"`
	Version         string  `json:"version"`
	Location        string  `json:"location"`
	LatestCompleted *txJSON `json:"latest_completed"`
	LatestSubmitted *txJSON `json:"latest_submitted"`
	Detail          any     `json:"detail"`
}

// Run implements status.
func (c *statusCmd) Run(a *app) error {
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Status(a.ctx)
	if err != nil {
		return err
	}
	optTx := func(tx *store.Tx) *txJSON {
		if tx == nil {
			return nil
		}
		t := txOut(*tx)
		return &t
	}
	if a.cli.JSON {
		return a.printJSON(statusJSON{
			Backend: st.Backend, Version: st.Version, Location: st.Location,
			LatestCompleted: optTx(st.LatestCompleted), LatestSubmitted: optTx(st.LatestSubmitted),
			Detail: st.Detail,
		})
	}
	t := newTable(a.stdout, "backend", st.Backend+" (version "+st.Version+")")
	if st.Location != "" {
		t.row("location", st.Location)
	}
	txText := func(tx *store.Tx) string {
		if tx == nil {
			return "none"
		}
		return fmt.Sprintf("tx %d at %s", tx.ID, timeText(tx.Time))
	}
	t.row("latest tx", txText(st.LatestCompleted))
	if st.LatestSubmitted != nil && (st.LatestCompleted == nil || st.LatestSubmitted.ID != st.LatestCompleted.ID) {
		t.row("submitted", txText(st.LatestSubmitted))
	}
	if m, ok := st.Detail.(map[string]int64); ok {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			t.row(k, m[k])
		}
	} else if st.Detail != nil {
		t.row("detail", valueText(st.Detail))
	}
	return t.flush()
}
