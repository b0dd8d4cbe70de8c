package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ctxstore/ctxstore/context/recall/provider"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

func TestMain(m *testing.M) { storetestenv.Main(m) }

// turns makes chat turns: user text, assistant text blocks, a thinking
// block and a tool call that serialization must leave out.
func turns(pairs ...string) []objects.Turn {
	var out []objects.Turn
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, objects.Turn{User: pairs[i], Assistant: []map[string]any{
			{"type": "thinking", "thinking": "private reasoning"},
			{"type": "text", "text": pairs[i+1]},
			{"type": "toolCall", "id": "tc", "name": "bash"},
		}})
	}
	return out
}

func newSession(t *testing.T, e *storetestenv.Env, name string, ts []objects.Turn) *session.Session {
	t.Helper()
	s, err := session.Create(context.Background(), e.Store, e.ID(name), session.CreateOptions{SystemPrompt: "sys"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) > 0 {
		if _, _, err := s.AppendTurns(context.Background(), ts...); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestSerialize(t *testing.T) {
	msgs := []Message{{Role: "user", Text: "first question"}, {Role: "assistant", Text: "first answer"}, {Role: "user", Text: "second"}}
	got := Serialize(msgs, 0)
	if got != "[User]: first question\n\n[Assistant]: first answer\n\n[User]: second" {
		t.Fatalf("serialized %q", got)
	}
	if cut := Serialize(msgs, 30); cut != "[User]: second" && !strings.HasSuffix(cut, "[User]: second") || len(cut) > 30 {
		t.Errorf("tail-capped %q", cut)
	}
	if s := TruncateTail("ééé", 3); s != "é" {
		t.Errorf("cut inside a UTF-8 sequence: %q", s)
	}
}

func TestOfflineIndexAndVersions(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		s := newSession(t, e, "s1", turns(
			"Refactor the confirm button so the modal closes on escape.", "Done: the confirm button modal closes on Escape now.",
			"Now add a test for the confirm button.", "Added a test.",
		))
		ix := NewIndexer(e.Store, nil)
		msgs, err := Conversation(ctx, e.Store, s.ID(), store.Basis{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if strings.Contains(m.Text, "private reasoning") {
				t.Fatalf("thinking serialized: %+v", m)
			}
		}
		if due, err := ix.Due(ctx, s.ID()); err != nil || due {
			t.Fatalf("due with 2 user messages: %v %v", due, err)
		}
		m1, err := ix.Index(ctx, s.ID())
		if err != nil {
			t.Fatal(err)
		}
		if m1.Name != "confirm-button-refactor" && !strings.HasPrefix(m1.Name, "confirm-button") {
			t.Errorf("offline name %q", m1.Name)
		}
		if err := ValidateFields(Fields{Name: m1.Name, Description: m1.Description, Summary: m1.Summary, Tags: m1.Tags}); err != nil {
			t.Errorf("offline fields invalid: %v", err)
		}
		if m1.Generator != "offline" || m1.UserMessages != 2 || m1.IndexedTurns != 2 {
			t.Errorf("meta %+v", m1)
		}
		again, _ := ix.Index(ctx, s.ID())
		if again.Name != m1.Name || again.Summary != m1.Summary {
			t.Errorf("offline generator not deterministic: %+v vs %+v", again, m1)
		}
		// Five new user messages make it due; the new name is a new
		// version and the old one stays readable as of its time.
		var more []string
		for i := 0; i < 5; i++ {
			more = append(more, "Switch the payment gateway to stripe webhooks, payment retries too.", "ok")
		}
		if _, _, err := s.AppendTurns(ctx, turns(more...)...); err != nil {
			t.Fatal(err)
		}
		m2, did, err := ix.MaybeIndex(ctx, s.ID())
		if err != nil || !did {
			t.Fatalf("MaybeIndex: %v %v", did, err)
		}
		if m2.Name == m1.Name || !strings.Contains(m2.Name, "payment") {
			t.Errorf("new name %q (was %q)", m2.Name, m1.Name)
		}
		old, err := ReadMeta(ctx, e.Store, s.ID(), store.AtTx(m1.TxID, m1.TxTime))
		if err != nil || old.Name != m1.Name {
			t.Errorf("as of the first indexing: %+v %v", old, err)
		}
		h, err := MetaHistory(ctx, e.Store, s.ID())
		if err != nil || len(h) < 2 || h[0].Name != m1.Name || h[len(h)-1].Name != m2.Name {
			t.Errorf("history %+v %v", h, err)
		}
		if _, did, _ := ix.MaybeIndex(ctx, s.ID()); did {
			t.Errorf("indexed again without new messages")
		}
		// The metadata is searchable, within its session.
		hits, err := Search(ctx, e.Store, store.SearchQuery{Text: "stripe webhooks", Kinds: []string{MetaType}}, Scope{})
		if err != nil || len(hits) != 1 || hits[0].Session != s.ID() {
			t.Errorf("search session_meta: %+v %v", hits, err)
		}
		as, err := attempts(ctx, e.Store, s.ID())
		if err != nil || len(as) < 3 || !as[0].Success || as[0].Generator != "offline" {
			t.Errorf("attempts %+v %v", as, err)
		}
	})
}

// scripted is a local server speaking one provider's wire format with
// scripted answers.
type scripted struct {
	kind    string
	mu      sync.Mutex
	answers []any // string: the completion's text; int: an HTTP status
	calls   int
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := s.calls
	s.calls++
	s.mu.Unlock()
	if n >= len(s.answers) {
		http.Error(w, "no more answers", 500)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch a := s.answers[n].(type) {
	case int:
		w.WriteHeader(a)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "scripted failure"}})
	case string:
		if s.kind == "anthropic" {
			json.NewEncoder(w).Encode(map[string]any{"model": "claude-scripted", "content": []any{map[string]any{"type": "text", "text": a}},
				"usage": map[string]any{"input_tokens": 500, "output_tokens": 50}})
		} else {
			json.NewEncoder(w).Encode(map[string]any{"model": "local-scripted", "choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": a}}},
				"usage": map[string]any{"prompt_tokens": 500, "completion_tokens": 50}})
		}
	}
}

const goodAnswer = `{"name":"confirm-button-refactor","description":"Refactored the confirm button modal.","summary":"The user asked to close the modal on escape; done and tested.","tags":["ui","modal"]}`

func TestGenerationContract(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		for _, kind := range []string{"anthropic", "openai"} {
			cases := []struct {
				name     string
				answers  []any
				ok       bool
				attempts int
			}{
				{"valid", []any{"```json\n" + goodAnswer + "\n```"}, true, 1},
				{"malformed then schema violation then valid", []any{`{"name": "x",`, `{"name":"Not Kebab","description":"d","summary":"s","tags":["a"]}`, goodAnswer}, true, 3},
				{"three malformed", []any{"not json", "{}", `{"name":"a","description":"d","summary":"s","tags":[],"extra":1}`}, false, 3},
				{"429 is not retried", []any{429, goodAnswer}, false, 1},
			}
			for _, c := range cases {
				t.Run(kind+"/"+c.name, func(t *testing.T) {
					srv := &scripted{kind: kind, answers: c.answers}
					hs := httptest.NewServer(srv)
					defer hs.Close()
					base := hs.URL
					if kind == "openai" {
						base += "/v1"
					}
					p, err := provider.New(provider.Config{Name: kind, Type: kind, BaseURL: base, Model: "cheap", InputPerMTok: 1, OutputPerMTok: 2})
					if err != nil {
						t.Fatal(err)
					}
					s := newSession(t, e, "g-"+kind+"-"+strings.ReplaceAll(c.name, " ", "-"), turns("Make the modal close on escape.", "Done."))
					ix := NewIndexer(e.Store, &Settings{Config: Config{MinNewUserMessages: 5}, Provider: p})
					m, err := ix.Index(ctx, s.ID())
					if c.ok != (err == nil) {
						t.Fatalf("Index: %+v, %v; want ok=%v", m, err, c.ok)
					}
					if srv.calls != c.attempts {
						t.Errorf("%d calls, want %d", srv.calls, c.attempts)
					}
					as, aerr := attempts(ctx, e.Store, s.ID())
					if aerr != nil || len(as) != c.attempts {
						t.Fatalf("recorded attempts %+v %v, want %d", as, aerr, c.attempts)
					}
					last := as[len(as)-1]
					if last.Success != c.ok || last.Usage.InputTokens != 500 && c.ok || (!c.ok && last.Error == "") {
						t.Errorf("last attempt %+v", last)
					}
					if c.ok {
						if m.Name != "confirm-button-refactor" || m.Generator != kind || m.Model == "" {
							t.Errorf("meta %+v", m)
						}
						if last.Usage.CostUSD <= 0 {
							t.Errorf("no cost recorded: %+v", last)
						}
					} else if _, err := ReadMeta(ctx, e.Store, s.ID(), store.Basis{}); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("a failed generation wrote metadata: %v", err)
					}
				})
			}
		}
	})
}

func TestConfig(t *testing.T) {
	if s, w := LoadConfig(""); s.Provider != nil || s.Disabled || len(w) != 0 {
		t.Errorf("no config: %+v %v", s, w)
	}
	for _, c := range []struct{ json, want string }{
		{`{"min_new_user_messages": 0, "providers": [{"name":"a","type":"anthropic"}]}`, "model: required"},
		{`{"min_new_user_messages": -1}`, "min_new_user_messages"},
		{`{"bogus": 1}`, "unknown field"},
		{`{"providers": [{"name":"a","type":"openai","model":"m"}], "use": ["b"]}`, `no provider named "b"`},
	} {
		if _, err := ParseConfig([]byte(c.json)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.json, err, c.want)
		}
	}
	s, err := ParseConfig([]byte(`{"providers": [{"name":"local","type":"openai","base_url":"http://127.0.0.1:1/v1","model":"qwen"}]}`))
	if err != nil || s.Provider == nil || s.Provider.Model() != "qwen" || s.MinNewUserMessages != 5 {
		t.Errorf("valid config: %+v %v", s, err)
	}
	// A disabled index does nothing.
	dir := t.TempDir()
	path := dir + "/recall.json"
	if err := writeFile(path, `{"providers": [{"name":"a","type":"anthropic"}]}`); err != nil {
		t.Fatal(err)
	}
	s, warns := LoadConfig(path)
	if !s.Disabled || len(warns) != 1 || !strings.Contains(warns[0], path) {
		t.Fatalf("invalid config: %+v %v", s, warns)
	}
	ix := NewIndexer(nil, s)
	if _, did, err := ix.MaybeIndex(context.Background(), "x"); did || err != nil {
		t.Errorf("disabled MaybeIndex: %v %v", did, err)
	}
	if _, err := ix.Index(context.Background(), "x"); !errors.Is(err, ErrDisabled) {
		t.Errorf("disabled Index: %v", err)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

// Due's threshold: at least min_new_user_messages new user messages, and
// at least a quarter of those already covered, so indexes of a long
// session are spaced by its growth (total work linear in its length).
func TestDueGrowsWithTheSession(t *testing.T) {
	for _, tc := range []struct {
		users, covered, minNew int
		want                   bool
	}{
		{5, 0, 5, true},
		{4, 0, 5, false},
		{25, 20, 5, true},  // 5 new of 20: a quarter
		{29, 24, 5, false}, // 5 new of 24: less than a quarter
		{30, 24, 5, true},  // 6 new
		{1100, 1000, 5, false},
		{1250, 1000, 5, true},
		{3, 1, 1, true},
	} {
		if got := dueAt(tc.users, tc.covered, tc.minNew); got != tc.want {
			t.Errorf("dueAt(%d, %d, %d) = %v, want %v", tc.users, tc.covered, tc.minNew, got, tc.want)
		}
	}
	// Indexing a session of n user messages one message at a time reads
	// the conversation O(log n) times, not n/5.
	covered, indexes := 0, 0
	for users := 1; users <= 10000; users++ {
		if dueAt(users, covered, 5) {
			covered, indexes = users, indexes+1
		}
	}
	if indexes > 40 {
		t.Fatalf("%d indexes over 10,000 user messages", indexes)
	}
}

// attempts lists a session's recorded generation attempts, oldest first.
func attempts(ctx context.Context, st store.Store, sessionID string) ([]Attempt, error) {
	docs, err := st.Query(ctx, store.Query{Where: []store.Pred{
		{Field: "type", Op: store.Eq, Value: AttemptType},
		{Field: "session_id", Op: store.Eq, Value: sessionID},
	}, OrderBy: []store.Order{{Field: "at"}, {Field: "attempt"}}})
	if err != nil {
		return nil, err
	}
	var out []Attempt
	for _, d := range docs {
		raw, _ := json.Marshal(d)
		var a Attempt
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("attempt %v: %w", d[store.IDKey], err)
		}
		out = append(out, a)
	}
	return out, nil
}
