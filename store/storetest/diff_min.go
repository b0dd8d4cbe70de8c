package storetest

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/store"
)

// maxMinimizeRuns caps the reruns minimization makes.
const maxMinimizeRuns = 400

// minimize shrinks prog while it still makes the stores diverge: first by
// dropping transactions (delta debugging: halves, quarters, ... single
// ones), then single ops, then document references, until nothing more
// can go or the run budget is spent. Every try runs on fresh stores.
func minimize(t *testing.T, fresh func(t *testing.T) (store.Store, store.Store), prog []gTx, specs []readSpec,
	d *divergence, log io.Writer) ([]gTx, *divergence, int) {
	runs := 0
	fails := func(cand []gTx) *divergence {
		if len(cand) == 0 || runs >= maxMinimizeRuns {
			return nil
		}
		runs++
		got, _, err := runProgram(t, fresh, cand, specs)
		if err != nil {
			logf(log, "differential: minimizing: a try failed: %v\n", err)
			return nil
		}
		return got
	}
	cur, curD := prog, d
	for changed := true; changed && runs < maxMinimizeRuns; {
		changed = false
		// Drop chunks of transactions.
		for n := 2; len(cur) >= 2; {
			chunk := (len(cur) + n - 1) / n
			reduced := false
			for i := 0; i < len(cur); i += chunk {
				cand := slices.Concat(cur[:i], cur[min(i+chunk, len(cur)):])
				if nd := fails(cand); nd != nil {
					cur, curD, reduced, changed = cand, nd, true, true
					n = max(n-1, 2)
					break
				}
			}
			if !reduced {
				if n >= len(cur) || runs >= maxMinimizeRuns {
					break
				}
				n = min(2*n, len(cur))
			}
		}
		// Drop single ops.
		for i := 0; i < len(cur); i++ {
			for j := 0; j < len(cur[i].ops) && len(cur[i].ops) > 1; j++ {
				cand := slices.Clone(cur)
				cand[i].ops = slices.Delete(slices.Clone(cur[i].ops), j, j+1)
				if nd := fails(cand); nd != nil {
					cur, curD, changed = cand, nd, true
					j--
				}
			}
		}
		// Drop document references.
		for i := range cur {
			for j := range cur[i].ops {
				if len(cur[i].ops[j].refs) == 0 {
					continue
				}
				cand := slices.Clone(cur)
				cand[i].ops = slices.Clone(cur[i].ops)
				cand[i].ops[j].refs = nil
				if nd := fails(cand); nd != nil {
					cur, curD, changed = cand, nd, true
				}
			}
		}
		logf(log, "differential: minimizing: %d txs, %d ops after %d runs\n", len(cur), countOps(cur), runs)
	}
	return cur, curD, runs
}

// reproText renders a divergence as a Go-like repro of the minimized
// transactions and the read the stores answered differently.
func reproText(e *divergenceError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "differential divergence (seed %d); the first: %s\n", e.seed, e.first.what)
	fmt.Fprintf(&b, "minimized from %d txs / %d ops to %d txs / %d ops in %d runs:\n\n", e.txs, e.ops, len(e.prog), countOps(e.prog), e.runs)
	b.WriteString(reproProgram(e.prog))
	fmt.Fprintf(&b, "\n// %s\n// a: %s\n// b: %s\n", e.minimized.what, indent(e.minimized.a), indent(e.minimized.b))
	b.WriteString("// where doc(id, v, refs...) is {\"xt/id\": id, \"run\": <run prefix>, \"v\": v, \"refs\": [refs...]}" +
		" and ids carry the run prefix;\n// rows show valid time, tx, document and which rows share a content hash.\n")
	return b.String()
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n// ") }

// reproProgram renders prog as Go, one transaction per line.
func reproProgram(prog []gTx) string {
	var b strings.Builder
	b.WriteString("txs := [][]store.Op{\n")
	for k, tx := range prog {
		parts := make([]string, len(tx.ops))
		for i, o := range tx.ops {
			parts[i] = reproOp(o)
		}
		fmt.Fprintf(&b, "\t{%s}, // tx#%d\n", strings.Join(parts, ", "), k)
	}
	b.WriteString("}\n")
	return b.String()
}

func reproOp(o gOp) string {
	at := func(i int) string { return fmt.Sprintf("at(%q)", store.FormatTime(diffInstants[i])) }
	doc := func() string {
		if o.v == 0 {
			return "nil"
		}
		s := fmt.Sprintf("doc(%q, %d", entityName(o.e), o.v)
		for _, r := range o.refs {
			s += fmt.Sprintf(", %q", entityName(r))
		}
		return s + ")"
	}
	id := fmt.Sprintf("%q", entityName(o.e))
	switch {
	case o.kind == store.OpEvict:
		return "store.Evict(" + id + ")"
	case o.kind == store.OpMatch && o.from < 0:
		return "store.Match(" + id + ", " + doc() + ")"
	case o.kind == store.OpMatch:
		return fmt.Sprintf("store.Op{Kind: store.OpMatch, ID: %s, Doc: %s, ValidFrom: ptr(%s)}", id, doc(), at(o.from))
	case o.kind == store.OpPut && o.to < 0:
		return fmt.Sprintf("store.PutAt(%s, %s)", doc(), at(o.from))
	case o.kind == store.OpPut:
		return fmt.Sprintf("store.PutRange(%s, %s, %s)", doc(), at(o.from), at(o.to))
	case o.to < 0:
		return fmt.Sprintf("store.DeleteRange(%s, %s, nil)", id, at(o.from))
	}
	return fmt.Sprintf("store.DeleteRange(%s, %s, ptr(%s))", id, at(o.from), at(o.to))
}
