// Package prices is the price table of model calls: per model, what a
// million tokens of input, output, cache reads and 5-minute and 1-hour
// cache writes cost. The table is data (prices.json, embedded) with its
// source and date; a model it does not list is unknown and has no price,
// never another model's.
package prices

import (
	_ "embed"
	"encoding/json"
	"regexp"
	"strings"
	"sync"

	"github.com/ctxstore/ctxstore/objects/conversation"
)

//go:embed prices.json
var tableJSON []byte

// Price is one model's prices, in US dollars per million tokens.
type Price struct {
	Provider     string  `json:"provider"`
	Model        string  `json:"model"`
	Input        float64 `json:"input"`
	Output       float64 `json:"output"`
	CacheRead    float64 `json:"cache_read"`
	CacheWrite5m float64 `json:"cache_write_5m"`
	CacheWrite1h float64 `json:"cache_write_1h"`
}

// Table is a price table with where and when its figures were taken.
type Table struct {
	Source string  `json:"source"`
	AsOf   string  `json:"as_of"`
	Unit   string  `json:"unit"`
	Note   string  `json:"note"`
	Models []Price `json:"models"`
}

var (
	defaultOnce  sync.Once
	defaultTable *Table
)

// Default returns the shipped table (prices.json). It panics if the
// embedded file does not parse, which a test rules out.
func Default() *Table {
	defaultOnce.Do(func() {
		t, err := Parse(tableJSON)
		if err != nil {
			panic("prices: the embedded table does not parse: " + err.Error())
		}
		defaultTable = t
	})
	return defaultTable
}

// Parse reads a table in prices.json's shape.
func Parse(b []byte) (*Table, error) {
	var t Table
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// dated is a model id's date suffix ("-20250514").
var dated = regexp.MustCompile(`-\d{8}$`)

// Lookup returns the price of model: the entry named exactly, else the one
// named without the id's date suffix ("claude-sonnet-4-20250514" is
// "claude-sonnet-4") or a provider prefix ("anthropic/claude-sonnet-4-5").
// ok is false for a model the table does not list: its price is unknown.
func (t *Table) Lookup(model string) (Price, bool) {
	if t == nil {
		return Price{}, false
	}
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, cand := range []string{m, dated.ReplaceAllString(m, "")} {
		for _, p := range t.Models {
			if p.Model == cand {
				return p, true
			}
		}
	}
	return Price{}, false
}

// Cost returns what a call with usage u cost, in dollars: uncached input,
// output, cache reads, and cache writes at the 1-hour price for the part
// recorded as 1-hour writes and the 5-minute price for the rest.
func (p Price) Cost(u conversation.Usage) float64 {
	long := min(max(u.CacheWrite1h, 0), u.CacheWrite)
	return (p.Input*float64(u.Input) + p.Output*float64(u.Output) + p.CacheRead*float64(u.CacheRead) +
		p.CacheWrite5m*float64(u.CacheWrite-long) + p.CacheWrite1h*float64(long)) / 1e6
}

// Cost prices u for model with the table; ok is false when the model is
// unknown (the cost is then 0 and must be shown as unknown).
func (t *Table) Cost(model string, u conversation.Usage) (float64, bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	return p.Cost(u), true
}
