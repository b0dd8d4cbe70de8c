package recall

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// ErrNoSession is returned (wrapped) when a reference names no session.
var ErrNoSession = errors.New("no session by that id or name")

// AmbiguousError is a reference that fuzzy-matches several sessions.
type AmbiguousError struct {
	Ref        string
	Candidates []Candidate
}

// Candidate is a session a reference may mean.
type Candidate struct {
	SessionID string `json:"session_id"`
	Name      string `json:"name"`
}

func (e *AmbiguousError) Error() string {
	var cs []string
	for _, c := range e.Candidates {
		cs = append(cs, fmt.Sprintf("%s (%s)", c.Name, c.SessionID))
	}
	return fmt.Sprintf("@@%s is ambiguous: %s", e.Ref, strings.Join(cs, ", "))
}

// Resolve finds the session ref names, in this order: an exact
// session id (a served session's, or a recorded one's that has a chat),
// then a case-insensitive name of the session index, then a
// fuzzy name match (the reference's words all in the name, or within two
// edits of it); several fuzzy matches are an *AmbiguousError listing them.
// sc limits the sessions considered.
func Resolve(ctx context.Context, st store.Store, ref string, sc Scope) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", fmt.Errorf("empty session reference: %w", ErrNoSession)
	}
	allowed := func(id string) bool { return !sc.Restricted || slices.Contains(sc.Sessions, id) }
	if allowed(ref) {
		// A served session has its session object; a recorded one
		// (imported or captured) only its chat (harness/recorded).
		for _, id := range []string{objects.SessionObjectID(ref), objects.ChatObjectID(ref)} {
			if _, err := st.EntityTx(ctx, id, store.Basis{}); err == nil {
				return ref, nil
			} else if store.KindOf(err) != store.ErrNotFound {
				return "", err
			}
		}
	}
	docs, err := st.Query(ctx, store.Query{Where: []store.Pred{{Field: "type", Op: store.Eq, Value: MetaType}},
		Find: []string{"session_id", "name"}})
	if err != nil {
		return "", err
	}
	var all []Candidate
	for _, d := range docs {
		sid, _ := d["session_id"].(string)
		name, _ := d["name"].(string)
		if sid != "" && name != "" && allowed(sid) {
			all = append(all, Candidate{SessionID: sid, Name: name})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].SessionID < all[j].SessionID })
	low := strings.ToLower(ref)
	var exact, fuzzy []Candidate
	for _, c := range all {
		n := strings.ToLower(c.Name)
		if n == low {
			exact = append(exact, c)
		} else if fuzzyMatch(low, n) {
			fuzzy = append(fuzzy, c)
		}
	}
	for _, set := range [][]Candidate{exact, fuzzy} {
		switch {
		case len(set) == 1:
			return set[0].SessionID, nil
		case len(set) > 1:
			return "", &AmbiguousError{Ref: ref, Candidates: set}
		}
	}
	return "", fmt.Errorf("@@%s: %w", ref, ErrNoSession)
}

// fuzzyMatch: every word of ref is a word of name or, from three letters
// on, the start of one; or ref is within two edits of name.
func fuzzyMatch(ref, name string) bool {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '_' || r == ' ' || r == '.' || r == ':' })
	}
	words, nameWords := split(ref), split(name)
	all := len(words) > 0
	for _, w := range words {
		found := false
		for _, n := range nameWords {
			if n == w || (len(w) >= 3 && strings.HasPrefix(n, w)) {
				found = true
				break
			}
		}
		if !found {
			all = false
			break
		}
	}
	return all || editDistance(ref, name, 2) <= 2
}

// editDistance is the Levenshtein distance of a and b, or max+1 once it
// exceeds max.
func editDistance(a, b string, maxD int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > maxD || -d > maxD {
		return maxD + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > maxD {
			return maxD + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Reference is one @@ reference in a user message.
type Reference struct {
	Ref      string `json:"ref"`
	Question string `json:"question,omitempty"`
}

// refRe matches @@name-or-id, optionally followed by ": question" (to the
// end of the line), at the start of the text or after a space or opening
// punctuation (so an address like a@@b is not one).
var refRe = regexp.MustCompile(`(?:^|[\s(\["'])@@([A-Za-z0-9][A-Za-z0-9._:-]*[A-Za-z0-9])(?::[ \t]+([^\n]+))?`)

// References returns the @@ references of a user message, in order, each
// once.
func References(text string) []Reference {
	var out []Reference
	seen := map[string]bool{}
	for _, m := range refRe.FindAllStringSubmatch(text, -1) {
		r := Reference{Ref: m[1], Question: strings.TrimSpace(m[2])}
		key := r.Ref + "\x00" + r.Question
		if !seen[key] {
			seen[key] = true
			out = append(out, r)
		}
	}
	return out
}
