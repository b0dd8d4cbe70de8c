package recall

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ctxstore/ctxstore/context/recall/provider"
	"github.com/ctxstore/ctxstore/store"
)

// DefaultQueryMaxBytes caps the conversation query_session sends a model.
const DefaultQueryMaxBytes = 200 * 1024

// Passage is a part of a session that matches a question.
type Passage struct {
	// ID is the object (a toolcall the agent can activate, or the chat).
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Turn    int    `json:"turn"`
	Snippet string `json:"snippet"`
	// Matched counts the question's words the passage holds.
	Matched int `json:"matched"`
}

// Answer is query_session's answer.
type Answer struct {
	SessionID string `json:"session_id"`
	Name      string `json:"name,omitempty"`
	Question  string `json:"question"`
	// Text is what the agent is told.
	Text string `json:"text"`
	// Model answered (empty: the offline passages).
	Model    string          `json:"model,omitempty"`
	Usage    *provider.Usage `json:"usage,omitempty"`
	Passages []Passage       `json:"passages,omitempty"`
}

// QuerySession answers a question about the session ref names (resolved
// as @@ references are, within sc). With a provider, a model answers from
// the session's serialized conversation, capped at QueryMaxBytes with the
// most recent messages first and compaction summaries always kept; without
// one (or with a disabled config) the answer is the best-matching
// passages, with the ids the agent can activate.
func QuerySession(ctx context.Context, st store.Store, set *Settings, sc Scope, ref, question string) (*Answer, error) {
	if set == nil {
		set = Offline()
	}
	question = strings.TrimSpace(question)
	if question == "" {
		return nil, store.Errorf("query_session", store.ErrInvalid, "", "question: empty")
	}
	sid, err := Resolve(ctx, st, ref, sc)
	if err != nil {
		return nil, err
	}
	a := &Answer{SessionID: sid, Question: question}
	if m, err := ReadMeta(ctx, st, sid, store.Basis{}); err == nil {
		a.Name = m.Name
	}
	label := sid
	if a.Name != "" {
		label = a.Name + " (" + sid + ")"
	}
	if set.Provider != nil && !set.Disabled {
		msgs, err := Conversation(ctx, st, sid, store.Basis{})
		if err != nil {
			return nil, err
		}
		capBytes := set.QueryMaxBytes
		if capBytes <= 0 {
			capBytes = DefaultQueryMaxBytes
		}
		conv := recentFirst(msgs, capBytes)
		resp, err := set.Provider.Complete(ctx, provider.Request{
			System: "You answer questions about a past coding-agent session from its conversation. " +
				"Answer briefly and concretely; if the conversation does not say, answer that it does not.",
			Prompt:    "<conversation>\n" + conv + "\n</conversation>\n\nQuestion: " + question,
			MaxTokens: 1024,
		})
		if err != nil {
			return nil, fmt.Errorf("query_session %s: %w", sid, err)
		}
		a.Model, a.Usage = resp.Model, &resp.Usage
		a.Text = "Session " + label + " answers (" + resp.Model + "): " + strings.TrimSpace(resp.Text)
		return a, nil
	}
	ps, err := passages(ctx, st, sid, question, 5)
	if err != nil {
		return nil, err
	}
	a.Passages = ps
	var b strings.Builder
	if len(ps) == 0 {
		fmt.Fprintf(&b, "Session %s: nothing matches %q.", label, question)
	} else {
		fmt.Fprintf(&b, "Session %s, passages matching %q (no model configured; activate(id) loads a toolcall's output):", label, question)
		for i, p := range ps {
			fmt.Fprintf(&b, "\n%d. %s id=%s", i+1, p.Kind, p.ID)
			if p.Turn >= 0 {
				fmt.Fprintf(&b, " turn=%d", p.Turn)
			}
			fmt.Fprintf(&b, ": %s", strings.Join(strings.Fields(p.Snippet), " "))
		}
	}
	a.Text = b.String()
	return a, nil
}

// recentFirst keeps the most recent messages that fit in maxBytes, and
// every compaction summary whatever the cap, and renders them in order.
func recentFirst(msgs []Message, maxBytes int) string {
	keep := make([]bool, len(msgs))
	used := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		n := len(msgs[i].Text) + 16
		if used+n > maxBytes {
			break
		}
		keep[i] = true
		used += n
	}
	var kept []Message
	for i, m := range msgs {
		if keep[i] || (m.Role == "user" && compactionSummary(m.Text)) {
			kept = append(kept, m)
		}
	}
	if len(kept) == 0 && len(msgs) > 0 { // one message larger than the cap
		last := msgs[len(msgs)-1]
		last.Text = TruncateTail(last.Text, maxBytes)
		kept = append(kept, last)
	}
	return Serialize(kept, 1<<62)
}

// passages searches the session for each significant word of the question
// and ranks what it finds by how many words it holds, then by the best
// score.
func passages(ctx context.Context, st store.Store, sid, question string, n int) ([]Passage, error) {
	var words []string
	seen := map[string]bool{}
	for _, t := range store.SearchTerms(question) {
		for _, w := range t.Words {
			if len(w) > 2 && !stopWords[w] && !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	type agg struct {
		p     Passage
		score float64
	}
	byKey := map[string]*agg{}
	for _, w := range words {
		hits, err := Search(ctx, st, store.SearchQuery{Text: w, Sessions: []string{sid}, Limit: 50}, Scope{})
		if err != nil {
			return nil, err
		}
		for _, h := range hits {
			key := fmt.Sprintf("%s#%d", h.ID, h.Turn)
			a := byKey[key]
			if a == nil {
				a = &agg{p: Passage{ID: h.ID, Kind: h.Kind, Turn: h.Turn, Snippet: h.Snippet}}
				byKey[key] = a
			}
			a.p.Matched++
			a.score = max(a.score, h.Score)
		}
	}
	var all []*agg
	for _, a := range byKey {
		all = append(all, a)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].p.Matched != all[j].p.Matched {
			return all[i].p.Matched > all[j].p.Matched
		}
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].p.ID+fmt.Sprint(all[i].p.Turn) < all[j].p.ID+fmt.Sprint(all[j].p.Turn)
	})
	var out []Passage
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].p)
	}
	return out, nil
}
