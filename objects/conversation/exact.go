package conversation

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/ctxstore/ctxstore/objects/jsonnum"
)

// ExactArgs returns m with every JSON number that a store cannot hold
// exactly replaced by its literal, as a string: integers beyond ±2^53,
// whole numbers up to 1e21 however written, literals with more precision
// than a 64-bit float, and non-finite values. A harness's tool arguments
// are recorded as given and never refused wholesale for one field (issue
// 20): a model that emits 18446744073709551616 as an argument must not
// break the session. m itself is not changed; when nothing needs
// replacing, m is returned.
func (tc ToolCall) ExactArgs() map[string]any {
	out, changed := exact(tc.Args)
	if !changed {
		return tc.Args
	}
	m, _ := out.(map[string]any)
	return m
}

// Exact returns m with the arguments of its tool calls made exact
// (ExactArgs); m is returned unchanged when nothing needs replacing.
func (m Message) Exact() Message {
	var calls []ToolCall
	for i, tc := range m.ToolCalls {
		out, changed := exact(tc.Args)
		if !changed {
			continue
		}
		if calls == nil {
			calls = append([]ToolCall(nil), m.ToolCalls...)
		}
		calls[i].Args, _ = out.(map[string]any)
	}
	if calls != nil {
		m.ToolCalls = calls
	}
	return m
}

// exact walks v; changed reports whether anything was replaced (then out
// is a copy).
func exact(v any) (out any, changed bool) {
	switch x := v.(type) {
	case map[string]any:
		var cp map[string]any
		for k, e := range x {
			if o, c := exact(e); c {
				if cp == nil {
					cp = make(map[string]any, len(x))
					for k2, e2 := range x {
						cp[k2] = e2
					}
				}
				cp[k] = o
			}
		}
		if cp != nil {
			return cp, true
		}
		return x, false
	case []any:
		var cp []any
		for i, e := range x {
			if o, c := exact(e); c {
				if cp == nil {
					cp = append([]any(nil), x...)
				}
				cp[i] = o
			}
		}
		if cp != nil {
			return cp, true
		}
		return x, false
	case json.Number:
		if !Storable(string(x)) {
			return string(x), true
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64), true
		}
		if a := math.Abs(x); a > 1<<53 && a < 1e21 && a == math.Trunc(a) {
			return strconv.FormatFloat(x, 'f', -1, 64), true
		}
	}
	return v, false
}

// Storable reports whether the JSON number literal s is held exactly by
// every store: the store's one number rule (objects/jsonnum, which
// store.CheckNumber applies too): finite, an integer within ±2^53 (or at
// least 1e21, where canonical JSON writes an exponent), and no more precise
// than a 64-bit float.
func Storable(s string) bool { return jsonnum.Check(s) == nil }
