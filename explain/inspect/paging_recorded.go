package inspect

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// recordedPaging is Paging for a recorded session (no call records of
// ctxstore's own): the outputs ctxstore's Claude Code hook let in as a
// preview are the toolcall objects of the session's chat that carry a
// "preview" member (the hook keeps each whole there), and their
// "activations" are the model's whole Reads of their spill files, each a
// fault by a read of the spill file. A fault's call is the last recorded
// call of the session's main thread at or before the Read's hook ran (0
// when none is known, such as a sub-agent's Read).
func (in *Inspector) recordedPaging(ctx context.Context, sid string, notFound error) (*Paging, error) {
	if _, err := in.chain(ctx, sid, notFound); err != nil {
		return nil, err
	}
	docs, err := in.st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", string(objects.KindToolcall)),
		store.Where("chat_ref", objects.ChatObjectID(sid))}, Find: []string{store.IDKey, "preview", "activations"}})
	if err != nil {
		return nil, fmt.Errorf("session %s: reading its outputs: %w", sid, err)
	}
	type read struct {
		f  Fault
		at time.Time
	}
	var reads []read
	p := &Paging{}
	for _, d := range docs {
		if _, ok := d["preview"].(map[string]any); !ok {
			continue
		}
		p.Previews++
		acts, _ := d["activations"].([]any)
		for _, a := range acts {
			m, ok := a.(map[string]any)
			if !ok {
				continue
			}
			at, _ := time.Parse(time.RFC3339Nano, asString(m["at"]))
			f := Fault{CallID: asString(m["call"]), How: "spill_read", Output: asString(d[store.IDKey]), Preview: true}
			if asString(m["agent"]) != "" {
				at = time.Time{} // a sub-agent's: its calls are another session's
			}
			reads = append(reads, read{f, at})
		}
	}
	if len(reads) == 0 {
		return p, nil
	}
	calls, err := in.st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", recorded.CallType), store.Where("session_id", sid)},
		Find: []string{"call", "time", "lane"}})
	if err != nil {
		return nil, fmt.Errorf("session %s: reading recorded calls: %w", sid, err)
	}
	sort.SliceStable(reads, func(i, j int) bool { return reads[i].at.Before(reads[j].at) })
	faulted := map[string]bool{}
	for _, r := range reads {
		best, bestAt := 0, time.Time{}
		for _, c := range calls {
			t, err := time.Parse(time.RFC3339Nano, asString(c["time"]))
			if err != nil || asString(c["lane"]) != "" || r.at.IsZero() || t.After(r.at) || t.Before(bestAt) {
				continue
			}
			best, bestAt = asInt(c["call"]), t
		}
		r.f.Call = best
		p.Faults = append(p.Faults, r.f)
		p.BySpillRead++
		if !faulted[r.f.Output] {
			faulted[r.f.Output] = true
			p.Faulted++
		}
	}
	if p.Previews > 0 {
		p.FaultRate = float64(p.Faulted) / float64(p.Previews)
	}
	return p, nil
}
