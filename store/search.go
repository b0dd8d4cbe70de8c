package store

import (
	"context"
	"strings"
	"time"
	"unicode"
)

// Searcher is an optional capability of a Store: full-text search over the
// text of its objects, a derived index the backend maintains from its own
// writes (docs/recall.md). Callers find it with a type assertion:
//
//	if s, ok := st.(store.Searcher); ok { hits, err := s.Search(ctx, q) }
//
// The index is not needed for correctness: a backend rebuilds it from the
// documents it holds. Hits are metadata only: the id, kind,
// session, a short snippet and the version's times, never the content.
type Searcher interface {
	Search(ctx context.Context, q SearchQuery) ([]SearchHit, error)
}

// SearchQuery is one full-text search.
type SearchQuery struct {
	// Text is the user's words. Every word must occur (AND), in any field;
	// a word ending in '*' is a prefix; "quoted words" are a phrase. Other
	// syntax is taken literally, so any text is a valid query.
	Text string
	// Kinds keeps only objects of these kinds ("file", "toolcall", "chat",
	// "note", "user", "system_prompt", "session_meta"); empty: every kind.
	Kinds []string
	// Sessions keeps only objects that belong to one of these sessions (a
	// chat's turns and its session's toolcalls and metadata); empty: every
	// object. Session isolation is the caller's (see context/recall's Scope):
	// files and notes belong to no session.
	Sessions []string
	// Since and Until keep versions written (tx time) in [Since, Until);
	// zero: unbounded.
	Since, Until time.Time
	// Basis searches the versions visible at a past basis; the zero Basis is
	// the latest.
	Basis Basis
	// Limit is the most hits returned (default 20, at most 1000).
	Limit int
}

// SearchHit is one match: a version of an object (or, for a chat, one turn).
type SearchHit struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Session string `json:"session,omitempty"`
	// Turn is the index of the matching chat turn (chats only), else -1.
	Turn int `json:"turn"`
	// Title is the object's short descriptive text: path, title, tool and
	// arguments, nickname, tags (what its metadata view shows).
	Title string `json:"title,omitempty"`
	// Snippet is a few words around the match with the matched words
	// between « and ».
	Snippet string `json:"snippet"`
	// Score orders hits: higher is better. Scores of two backends are not
	// comparable.
	Score     float64   `json:"score"`
	TxID      int64     `json:"tx_id"`
	TxTime    time.Time `json:"tx_time"`
	ValidTime time.Time `json:"valid_time"`
}

// Search limits.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 1000
)

// SnippetOpen and SnippetClose mark the matched words in a snippet.
const (
	SnippetOpen  = "«"
	SnippetClose = "»"
)

// Normalize checks q and fills defaults. An empty text is ErrInvalid.
func (q SearchQuery) Normalize() (SearchQuery, error) {
	if len(SearchTerms(q.Text)) == 0 {
		return q, Errorf("search", ErrInvalid, "", "text: no words to search for")
	}
	if q.Limit <= 0 {
		q.Limit = DefaultSearchLimit
	}
	if q.Limit > MaxSearchLimit {
		q.Limit = MaxSearchLimit
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return q, Errorf("search", ErrInvalid, "", "since must be before until")
	}
	return q, nil
}

// SearchTerm is one term of a query: a word, a phrase of words or a prefix.
type SearchTerm struct {
	Words  []string
	Prefix bool
}

// SearchTerms splits text into terms the way every backend reads it: quoted
// phrases, words of letters and digits (other characters separate words),
// a trailing '*' making a single word a prefix. Words are lower-cased.
func SearchTerms(text string) []SearchTerm {
	var out []SearchTerm
	parts := strings.Split(text, `"`)
	for i, part := range parts {
		if i%2 == 1 { // inside quotes
			if w := words(part); len(w) > 0 {
				out = append(out, SearchTerm{Words: w})
			}
			continue
		}
		for _, f := range strings.Fields(part) {
			prefix := strings.HasSuffix(f, "*")
			ws := words(f)
			for j, w := range ws {
				out = append(out, SearchTerm{Words: []string{w}, Prefix: prefix && j == len(ws)-1})
			}
		}
	}
	return out
}

// words splits s into lower-case runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}
