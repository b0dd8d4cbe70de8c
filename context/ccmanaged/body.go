package ccmanaged

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/context/ccmanaged/apicheck"
	"github.com/ctxstore/ctxstore/internal/jsontext"
)

// show rewrites the tool results not shown whole to the text sh gives them,
// and records every output's form in st.
func (rq *request) show(st *State, sh showing, ap *Applied) {
	for _, r := range rq.results {
		f := sh.form[r.id]
		st.Shown[r.id] = f
		switch f {
		case formWhole:
			continue
		case formPreview:
			ap.Previews++
		default:
			ap.Collapsed++
		}
		m := rq.msgs[r.msg]
		nb := block{}
		for k, v := range m.blocks[r.blk] {
			nb[k] = v
		}
		nb["content"], _ = jsontext.Marshal(sh.lines[r.id])
		m.blocks[r.blk] = nb
		m.changed = true
	}
}

// breakpoints takes Claude Code's breakpoints out of the messages and puts
// ctxstore's in, within the API's limit: one at the end, with the lifetime
// Claude Code asked for, and, unless this request rebased, one where the
// previous request ended (st.Len messages). None when Claude Code placed
// none in the messages (its caching is off).
func (rq *request) breakpoints(st *State, ap *Applied) {
	used := countBreakpoints(rq.top["tools"]) + countBreakpoints(rq.top["system"])
	ttlAsked, asked := "", false
	for _, m := range rq.msgs {
		if m.role == "system" {
			for _, b := range m.blocks {
				if !isNullRaw(b["cache_control"]) {
					used++
				}
			}
			continue
		}
		for j, b := range m.blocks {
			if _, ok := b["cache_control"]; !ok {
				continue
			}
			if !isNullRaw(b["cache_control"]) {
				asked = true
				var cc cacheControl
				json.Unmarshal(b["cache_control"], &cc)
				ttlAsked = cc.TTL
			}
			nb := block{}
			for k, v := range b {
				if k != "cache_control" {
					nb[k] = v
				}
			}
			m.blocks[j] = nb
			m.changed = true
		}
	}
	if !asked {
		return
	}
	cc, _ := jsontext.Marshal(cacheControl{Type: "ephemeral", TTL: ttlAsked})
	free := apicheck.MaxBreakpoints - used
	if free >= 1 && placeBreakpoint(rq.msgs[len(rq.msgs)-1], cc) {
		ap.Breakpoints++
		free--
	}
	if free >= 1 && ap.Rebase == "" && st.Len > 0 && st.Len < len(rq.msgs) && placeBreakpoint(rq.msgs[st.Len-1], cc) {
		ap.Breakpoints++
	}
}

// encode returns the request's body: every top-level field as it came,
// the messages not changed as they came.
func (rq *request) encode() ([]byte, error) {
	out := make([]json.RawMessage, len(rq.msgs))
	for i, m := range rq.msgs {
		if !m.changed {
			out[i] = m.raw
			continue
		}
		f := make(map[string]json.RawMessage, len(m.fields))
		for k, v := range m.fields {
			f[k] = v
		}
		var err error
		if m.str != nil && m.blocks == nil {
			f["content"], err = jsontext.Marshal(*m.str)
		} else {
			f["content"], err = jsontext.Marshal(m.blocks)
		}
		if err != nil {
			return nil, err
		}
		if out[i], err = jsontext.Marshal(f); err != nil {
			return nil, err
		}
	}
	list, err := jsontext.Marshal(out)
	if err != nil {
		return nil, err
	}
	top := make(map[string]json.RawMessage, len(rq.top))
	for k, v := range rq.top {
		top[k] = v
	}
	top["messages"] = list
	return jsontext.Marshal(top)
}

// advance moves st past request rq, sent at now: the conversation's
// rhythm (a user's prompt ends a turn and starts the next, warm or cold),
// where the stream ends, when, and how many managed requests so far.
func (st *State) advance(rq *request, now time.Time, ttl time.Duration) {
	if last := rq.msgs[len(rq.msgs)-1]; last.role == "user" && !hasResult(last) {
		if st.Calls > 0 {
			if st.Shape.Current > 0 {
				st.Shape.Turns++
				st.Shape.TurnCalls += st.Shape.Current
			}
			if now.Sub(st.touched()) >= ttl {
				st.Shape.ColdStarts++
			} else {
				st.Shape.WarmStarts++
			}
		}
		st.Shape.Current = 0
	}
	st.Shape.Current++
	st.Len, st.Last = len(rq.msgs), now
	st.Calls++
}

// countBreakpoints counts the cache_control fields of a list of blocks or
// tools (a string system prompt holds none).
func countBreakpoints(raw json.RawMessage) int {
	var list []map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
		return 0
	}
	n := 0
	for _, b := range list {
		if !isNullRaw(b["cache_control"]) {
			n++
		}
	}
	return n
}

// placeBreakpoint puts cc on the last block of m that may carry one (not
// thinking, not an empty text), a string content becoming one text block;
// false when none may.
func placeBreakpoint(m *message, cc json.RawMessage) bool {
	if m.role == "system" {
		return false
	}
	if m.str != nil && m.blocks == nil {
		if strings.TrimSpace(*m.str) == "" {
			return false
		}
		t, _ := jsontext.Marshal(*m.str)
		m.blocks = []block{{"type": json.RawMessage(`"text"`), "text": t}}
	}
	for j := len(m.blocks) - 1; j >= 0; j-- {
		b := m.blocks[j]
		switch b.str("type") {
		case "thinking", "redacted_thinking":
			continue
		case "text":
			if strings.TrimSpace(b.str("text")) == "" {
				continue
			}
		}
		nb := block{}
		for k, v := range b {
			nb[k] = v
		}
		nb["cache_control"] = cc
		m.blocks[j] = nb
		m.changed = true
		return true
	}
	return false
}

// isNullRaw tells whether a field is absent or null.
func isNullRaw(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	return t == "" || t == "null"
}

// cacheControl is a block's cache_control.
type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}
