package recall

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ctxstore/ctxstore/context/recall/provider"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// turnReads counts the turn documents read through it.
type turnReads struct {
	store.Store
	n atomic.Int64
}

func (r *turnReads) Entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	if strings.Contains(id, ":turn:") {
		r.n.Add(1)
	}
	return r.Store.Entity(ctx, id, b)
}

// mixedTurns makes n turns numbered from base, of every shape an index
// run meets: user and assistant text, a turn without text (tool calls
// only), the harness's noise, an answer without a question, and words
// whose scores and first uses change as the chat grows.
func mixedTurns(base, n int) []objects.Turn {
	words := []string{"payment", "gateway", "stripe", "modal", "escape", "button", "retry", "webhook", "ledger", "invoice"}
	var out []objects.Turn
	for i := base; i < base+n; i++ {
		w, v := words[i%len(words)], words[(i*7+3)%len(words)]
		switch i % 5 {
		case 0:
			out = append(out, turns(fmt.Sprintf("Fix the %s and the %s, step %d.", w, v, i), "Fixed the "+v+" for step "+fmt.Sprint(i)+".")...)
		case 1:
			out = append(out, objects.Turn{User: "", Assistant: []map[string]any{{"type": "toolCall", "id": fmt.Sprint("tc", i), "name": "bash"}}})
		case 2:
			out = append(out, objects.Turn{User: "/compact"})
		case 3:
			out = append(out, objects.Turn{Assistant: []map[string]any{{"type": "text", "text": "Also the " + w + " " + w + " " + v + "."}}})
		default:
			out = append(out, objects.Turn{User: []any{map[string]any{"type": "text", "text": "Then the " + v + " é " + strings.Repeat(w+" ", i%4)}}})
		}
	}
	return out
}

// An index run reads only the turns added since the last one, and what it
// gives is what a run over the whole chat gives: the metadata, the offline
// generator's inputs and the provider's conversation, after every step; a
// turn missed or read twice changes the counts, the scores or the tail.
func TestIndexReadsOnlyNewTurns(t *testing.T) {
	p, err := provider.New(provider.Config{Name: "p", Type: "openai", BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		for _, c := range []struct {
			name  string
			steps []int // turns appended before each index run
			set   *Settings
		}{
			{"offline, one turn at a time", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, nil},
			{"offline, uneven steps", []int{3, 17, 1, 40, 9}, nil},
			{"provider, a small tail", []int{2, 7, 30, 5}, &Settings{Config: Config{MaxBytes: 300}, Provider: p}},
		} {
			t.Run(c.name, func(t *testing.T) {
				rs := &turnReads{Store: e.Store}
				s := newSession(t, e, "inc-"+strings.NewReplacer(" ", "-", ",", "").Replace(c.name), nil)
				ix := NewIndexer(rs, c.set)
				total := 0
				for i, k := range c.steps {
					if _, _, err := s.AppendTurns(ctx, mixedTurns(total, k)...); err != nil {
						t.Fatal(err)
					}
					total += k
					before := rs.n.Load()
					got, err := ix.read(ctx, s.ID())
					if err != nil {
						t.Fatal(err)
					}
					if read := rs.n.Load() - before; read != int64(k) {
						t.Errorf("step %d: %d turn documents read for %d new turns", i, read, k)
					}
					want, err := NewIndexer(e.Store, c.set).read(ctx, s.ID())
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("step %d: after %d turns the incremental digest differs from a full read:\n%+v\n%+v", i, total, got, want)
					}
					msgs, err := Conversation(ctx, e.Store, s.ID(), store.Basis{})
					if err != nil {
						t.Fatal(err)
					}
					if f := offlineFields(msgs); !reflect.DeepEqual(got.fields(), f) {
						t.Errorf("step %d: fields %+v, the whole conversation's %+v", i, got.fields(), f)
					}
					if c.set != nil {
						if conv := Serialize(msgs, c.set.MaxBytes); got.conversation() != conv {
							t.Errorf("step %d: conversation %q, the whole one's %q", i, got.conversation(), conv)
						}
					}
				}
			})
		}
	})
}

// A session indexed in steps, then resumed by a new indexer (a new
// process): its runs give what one run over the whole chat gives, and
// after its first run it too reads only the new turns.
func TestIndexResumedByANewIndexer(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		rs := &turnReads{Store: e.Store}
		s := newSession(t, e, "resumed", mixedTurns(0, 30))
		first := NewIndexer(rs, nil)
		if _, err := first.Index(ctx, s.ID()); err != nil {
			t.Fatal(err)
		}
		total := 30
		for _, k := range []int{12, 25} {
			if _, _, err := s.AppendTurns(ctx, mixedTurns(total, k)...); err != nil {
				t.Fatal(err)
			}
			total += k
			if _, err := first.Index(ctx, s.ID()); err != nil {
				t.Fatal(err)
			}
		}
		resumed := NewIndexer(rs, nil)
		for i, k := range []int{8, 1, 20} {
			if _, _, err := s.AppendTurns(ctx, mixedTurns(total, k)...); err != nil {
				t.Fatal(err)
			}
			total += k
			before := rs.n.Load()
			got, err := resumed.Index(ctx, s.ID())
			if err != nil {
				t.Fatal(err)
			}
			read, wantRead := rs.n.Load()-before, int64(k)
			if i == 0 {
				wantRead = int64(total) // the digest is not stored: read once
			}
			if read != wantRead {
				t.Errorf("run %d: %d turn documents read, want %d", i, read, wantRead)
			}
			msgs, err := Conversation(ctx, e.Store, s.ID(), store.Basis{})
			if err != nil {
				t.Fatal(err)
			}
			f := offlineFields(msgs)
			users, last := 0, 0
			for _, m := range msgs {
				last = max(last, m.Turn+1)
				if m.Role == "user" {
					users++
				}
			}
			if g := (Fields{Name: got.Name, Description: got.Description, Summary: got.Summary, Tags: got.Tags}); !reflect.DeepEqual(g, f) ||
				got.UserMessages != users || got.IndexedTurns != last {
				t.Errorf("run %d: %+v\nwant %+v, %d user messages, %d turns", i, got, f, users, last)
			}
		}
	})
}

// An indexer keeps the digests of the sessions indexed last only.
func TestIndexerKeepsFewDigests(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		ix := NewIndexer(e.Store, nil)
		var ids []string
		for i := range maxDigests + 3 {
			s := newSession(t, e, fmt.Sprint("few-", i), mixedTurns(0, 2))
			ids = append(ids, s.ID())
			if _, err := ix.read(ctx, s.ID()); err != nil {
				t.Fatal(err)
			}
		}
		if len(ix.digests) != maxDigests || ix.digests[ids[0]] != nil || ix.digests[ids[len(ids)-1]] == nil {
			t.Errorf("%d digests kept (the first session's: %v), want the last %d", len(ix.digests), ix.digests[ids[0]] != nil, maxDigests)
		}
	})
}

// offlineFields is the offline generator (no provider configured): an
// extractive, deterministic index of a conversation. The name and tags are
// the words the user used most (ties: first used), stop words and short
// words left out; the description is the first user message's first
// sentence; the summary quotes the first request, the latest requests and
// the last answer.
func offlineFields(msgs []Message) Fields {
	d := newDigest(0)
	for _, m := range msgs {
		d.add(m)
	}
	return d.fields()
}
