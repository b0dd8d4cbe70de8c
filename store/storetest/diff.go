package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// DiffConfig configures Differential. Zero fields take defaults.
type DiffConfig struct {
	// Seed seeds the generated transactions and reads; 0 picks one from
	// the clock. The seed is logged so a failing run can be repeated.
	Seed int64
	// Txs is how many transactions to generate (default 40).
	Txs int
	// Entities is how many entities they touch (default 5).
	Entities int
	// BasisPoints is how many random (valid time, tx) bases to read every
	// entity at, besides the fixed reads (default 30).
	BasisPoints int
	// Log, if set, receives progress and the minimized repro.
	Log io.Writer
}

func (c DiffConfig) withDefaults() DiffConfig {
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano()
	}
	if c.Txs <= 0 {
		c.Txs = 40
	}
	if c.Entities <= 0 {
		c.Entities = 5
	}
	if c.BasisPoints <= 0 {
		c.BasisPoints = 30
	}
	return c
}

// Differential generates random transactions, applies them to two stores
// and compares what the stores answer: TxCommitted of every transaction,
// every entity's full history in both orders with and without corrections
// (with documents), Entity and EntityTx at many (valid time, tx) bases,
// bounded histories, queries, and the tx log (whole and in pages, with
// which documents were evicted).
//
// The transactions mix puts and deletes with and without valid ranges,
// matches that hold and that fail, evicts and later re-puts, several ops
// per transaction, back-dated writes and writes at the same valid time, all
// at explicit valid times from a small set of millisecond instants (tx
// times differ between stores by nature, so only a match reads at the
// default valid time). Answers are compared with tx ids mapped to
// submission order, tx times left out, and content hashes reduced to which
// rows share one.
//
// fresh returns two stores to compare (new ones, or new clients of shared
// servers: every run names its entities under a new random prefix and
// scopes its queries to them); Differential closes them when done. On the
// first divergence it minimizes the transactions by rerunning reduced
// programs on fresh stores, then fails t with a Go-like repro of the
// minimized transactions and the differing read.
func Differential(t *testing.T, fresh func(t *testing.T) (store.Store, store.Store), cfg DiffConfig) {
	t.Helper()
	if err := diff(t, fresh, cfg); err != nil {
		t.Fatal(err)
	}
}

// divergence is the first read (or submission) the stores answered
// differently.
type divergence struct {
	what string
	a, b string
}

// divergenceError is the error diff returns when the stores disagree.
type divergenceError struct {
	seed      int64
	txs, ops  int // of the generated program
	prog      []gTx
	first     *divergence // in the generated program
	minimized *divergence // in prog
	runs      int
}

func (e *divergenceError) Error() string { return reproText(e) }

// diff runs the differential test and returns nil, a *divergenceError, or
// the error that stopped it.
func diff(t *testing.T, fresh func(t *testing.T) (store.Store, store.Store), cfg DiffConfig) error {
	cfg = cfg.withDefaults()
	t.Logf("differential: seed %d (%d txs, %d entities, %d basis points)", cfg.Seed, cfg.Txs, cfg.Entities, cfg.BasisPoints)
	logf(cfg.Log, "differential: seed %d\n", cfg.Seed)
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed))
	prog, err := generate(r, cfg)
	if err != nil {
		return err
	}
	specs := plan(r, cfg)
	d, reads, err := runProgram(t, fresh, prog, specs)
	if err != nil {
		return err
	}
	if d == nil {
		logf(cfg.Log, "differential: seed %d: %d txs, %d reads, no divergence\n", cfg.Seed, len(prog), reads)
		return nil
	}
	logf(cfg.Log, "differential: seed %d: divergence at %s; minimizing\n", cfg.Seed, d.what)
	de := &divergenceError{seed: cfg.Seed, txs: len(prog), ops: countOps(prog), first: d}
	de.prog, de.minimized, de.runs = minimize(t, fresh, prog, specs, d, cfg.Log)
	logf(cfg.Log, "%s\n", de.Error())
	return de
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

func countOps(prog []gTx) int {
	n := 0
	for _, tx := range prog {
		n += len(tx.ops)
	}
	return n
}

// runProgram applies prog to two fresh stores, then makes every read of
// specs on both, and returns the first divergence and the number of reads.
func runProgram(t *testing.T, fresh func(t *testing.T) (store.Store, store.Store), prog []gTx, specs []readSpec) (*divergence, int, error) {
	a, b := fresh(t)
	defer a.Close()
	defer b.Close()
	x := &execution{ctx: context.Background(), pfx: randomPrefix("df"), prog: prog, stores: [2]store.Store{a, b}}
	if d, err := x.apply(); d != nil || err != nil {
		return d, 0, err
	}
	// The reads are independent once the program is applied: they run on
	// readWorkers goroutines (a remote store's reads are latency-bound),
	// and are compared in spec order, so the divergence reported is the
	// first one, as in a sequential run.
	type result struct {
		out     [2]string
		applies bool
		err     error
	}
	res := make([]result, len(specs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range readWorkers {
		wg.Go(func() {
			for k := range next {
				r := result{applies: true}
				for i := range 2 {
					o, ok, err := x.read(i, specs[k])
					if err != nil {
						r.err = fmt.Errorf("store %c: %s: %w", 'a'+i, x.describe(specs[k]), err)
						break
					}
					r.applies = r.applies && ok
					r.out[i] = o
				}
				res[k] = r
			}
		})
	}
	for k := range specs {
		next <- k
	}
	close(next)
	wg.Wait()
	reads := 0
	for k, r := range res {
		if r.err != nil {
			return nil, reads, r.err
		}
		if !r.applies {
			continue
		}
		reads++
		if r.out[0] != r.out[1] {
			return &divergence{what: x.describe(specs[k]), a: r.out[0], b: r.out[1]}, reads, nil
		}
	}
	return nil, reads, nil
}

// readWorkers is how many reads of a differential run at once.
const readWorkers = 8

// apply submits every tx to both stores with SubmitWait and compares the
// outcomes (committed or aborted) and that each store's tx ids increase.
func (x *execution) apply() (*divergence, error) {
	for k, tx := range x.prog {
		var outcome [2]string
		for i, s := range x.stores {
			rec, err := store.SubmitWait(x.ctx, s, tx.storeOps(x.pfx))
			switch {
			case err == nil:
				outcome[i] = "committed"
			case errors.Is(err, store.ErrConflict):
				outcome[i] = "aborted"
			case errors.Is(err, store.ErrInvalid):
				outcome[i] = "invalid"
			default:
				return nil, fmt.Errorf("store %c: tx#%d: %w", 'a'+i, k, err)
			}
			if outcome[i] != "invalid" {
				if n := len(x.recs[i]); n > 0 && rec.ID <= x.recs[i][n-1].ID {
					outcome[i] = fmt.Sprintf("%s with tx id %d after %d", outcome[i], rec.ID, x.recs[i][n-1].ID)
				}
			}
			x.recs[i] = append(x.recs[i], rec)
		}
		if outcome[0] != outcome[1] {
			return &divergence{what: fmt.Sprintf("SubmitWait(tx#%d)", k), a: outcome[0], b: outcome[1]}, nil
		}
		if outcome[0] == "invalid" {
			return nil, fmt.Errorf("storetest: both stores reject generated tx#%d as invalid", k)
		}
	}
	return nil, nil
}
