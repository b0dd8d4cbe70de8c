// Package inspect is the read model for seeing what a model saw:
// the sessions of a store, each session's calls with their sizes, cached
// share, cost and cache-break attribution, a call's exact context labelled
// block by block, the difference between two calls, and an object's
// history on both time axes with the calls that showed each version.
//
// Everything is computed from what the store holds: the session objects
// and the context commits ("call records") the assembler writes, so it
// works alike for live sessions and for replays. It never writes. The
// command line (cmd/ctxstore) and the web inspector (server/inspector)
// both use it; docs/inspector.md describes what it shows.
package inspect

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/objects/prices"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// Prices is the cost model: every price is in units of a base input token,
// as in the rebase cost model (context/assemble) and replay
// (eval/replay): a token written to the prefix cache costs Write, a token
// read from it Read. InputPerMTok converts to dollars.
type Prices struct {
	// InputPerMTok is the price of a million base input tokens in dollars
	// (default 3.00, Claude Sonnet's list price).
	InputPerMTok float64 `json:"input_per_mtok"`
	// Write and Read are the multipliers of a cache write and a cache read
	// (default 1.25 and 0.1).
	Write float64 `json:"write"`
	Read  float64 `json:"read"`
}

// DefaultModel is the model whose prices price served calls when no
// other price is given: its entry in the price table (objects/prices)
// gives $3.00 per million base input tokens, writes at 1.25x, reads at
// 0.1x.
const DefaultModel = "claude-sonnet-4-5"

// DefaultPrices returns DefaultModel's prices from the price table, as
// multiples of its input price.
func DefaultPrices() Prices {
	p, ok := prices.Default().Lookup(DefaultModel)
	if !ok || p.Input <= 0 {
		panic("inspect: the price table has no " + DefaultModel) // the shipped table has it (tested)
	}
	return Prices{InputPerMTok: p.Input, Write: p.CacheWrite5m / p.Input, Read: p.CacheRead / p.Input}
}

// Dollars converts base-input-token units to dollars.
func (p Prices) Dollars(units float64) float64 { return units * p.InputPerMTok / 1e6 }

// Options configure an Inspector. Zero values mean the defaults.
type Options struct {
	Prices Prices
	// TTL is the prompt cache's lifetime (default 5 minutes): a call after
	// a longer gap reads nothing from the cache.
	TTL time.Duration
	// Allowed, when set, says which sessions may be read (a token's grant);
	// any other session is reported as not found, and lists leave it out.
	Allowed func(sessionID string) bool
	// Formats decode recorded sessions' commits (harness/formats.Commits):
	// without them a recorded session shows no calls, tokens or cost.
	Formats *commits.Registry
	// PriceTable prices recorded calls per model (default
	// prices.Default()).
	PriceTable *prices.Table
}

// Inspector reads sessions and calls from a store. It remembers the
// ends of the long commit chains it has probed (chain.go), which a page
// reads several times: make one per request or command, as the web
// inspector and the command line do, so that it sees new commits.
type Inspector struct {
	st store.Store
	o  Options

	mu     sync.Mutex
	depths map[string]int64 // session -> its deepest commit's depth
}

// New returns an Inspector over st.
func New(st store.Store, o Options) *Inspector {
	d := DefaultPrices()
	if o.Prices.InputPerMTok <= 0 {
		o.Prices.InputPerMTok = d.InputPerMTok
	}
	if o.Prices.Write <= 0 {
		o.Prices.Write = d.Write
	}
	if o.Prices.Read <= 0 {
		o.Prices.Read = d.Read
	}
	if o.PriceTable == nil {
		o.PriceTable = prices.Default()
	}
	if o.TTL <= 0 {
		o.TTL = assemble.DefaultPolicy().CacheTTL
	}
	return &Inspector{st: st, o: o}
}

// Prices returns the cost model in use.
func (in *Inspector) Prices() Prices { return in.o.Prices }

// TTL returns the cache lifetime in use.
func (in *Inspector) TTL() time.Duration { return in.o.TTL }

// ErrNotFound is wrapped by errors about a session, call or object that
// does not exist (or that Options.Allowed hides).
var ErrNotFound = store.ErrNotFound

// ErrInvalid is wrapped by errors about bad arguments (a call number out
// of range, a page size below 1).
var ErrInvalid = errors.New("invalid argument")

func (in *Inspector) allowed(sid string) bool { return in.o.Allowed == nil || in.o.Allowed(sid) }

// check refuses a session the grant hides, as if it did not exist.
func (in *Inspector) check(sid string) error {
	if !in.allowed(sid) {
		return fmt.Errorf("session %s: %w", sid, ErrNotFound)
	}
	return nil
}
