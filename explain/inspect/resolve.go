package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// AmbiguousError is an id prefix that more than one id starts with.
type AmbiguousError struct {
	Kind       string // "session", "object", "commit"
	Prefix     string
	Candidates []string // sorted, at most maxCandidates
	More       int      // candidates not listed
}

const maxCandidates = 10

func (e *AmbiguousError) Error() string {
	more := ""
	if e.More > 0 {
		more = fmt.Sprintf(" and %d more", e.More)
	}
	return fmt.Sprintf("%s id %q is ambiguous: %d %ss start with it: %s%s; give more of the id",
		e.Kind, e.Prefix, len(e.Candidates)+e.More, e.Kind, strings.Join(e.Candidates, ", "), more)
}

// pick returns the one id of ids that equals prefix or starts with it: the
// id itself when there is one, (prefix, nil) when none does (the caller
// reports it not found as before), an *AmbiguousError naming the
// candidates when several do.
func pick(kind, prefix string, ids []string) (string, error) {
	var c []string
	seen := map[string]bool{}
	for _, id := range ids {
		if id == prefix {
			return id, nil
		}
		if strings.HasPrefix(id, prefix) && !seen[id] {
			seen[id] = true
			c = append(c, id)
		}
	}
	switch len(c) {
	case 0:
		return prefix, nil
	case 1:
		return c[0], nil
	}
	sort.Strings(c)
	// A session and its sub-agents' lanes ("S/agent-…") share S's
	// prefixes: the prefix names S.
	if kind == "session" && !strings.Contains(c[0], "/") {
		lanes := true
		for _, id := range c[1:] {
			lanes = lanes && strings.HasPrefix(id, c[0]+"/")
		}
		if lanes {
			return c[0], nil
		}
	}
	e := &AmbiguousError{Kind: kind, Prefix: prefix, Candidates: c}
	if len(c) > maxCandidates {
		e.Candidates, e.More = c[:maxCandidates], len(c)-maxCandidates
	}
	return "", e
}

// ResolveSession returns the session id id names: itself when a session
// (served, or recorded through its commits) has that id, else the one
// session whose id starts with it. An id no session starts with is
// returned as it is; a prefix of several is an *AmbiguousError.
func ResolveSession(ctx context.Context, st store.Store, id string) (string, error) {
	if id == "" {
		return id, nil
	}
	ids, err := session.List(ctx, st)
	if err != nil {
		return "", err
	}
	chains, err := commits.New(st, commits.Options{}).Chains(ctx, nil)
	if err != nil {
		return "", err
	}
	for _, c := range chains {
		ids = append(ids, c.Session)
	}
	return pick("session", id, ids)
}

// ResolveCommit returns the commit id id names: a whole commit id, or the
// one commit whose id starts with it, with or without "ctx-". An id no
// commit starts with is returned as it is; a prefix of several is an
// *AmbiguousError.
func ResolveCommit(ctx context.Context, st store.Store, id string) (string, error) {
	if id == "" || commits.IsCommitID(id) {
		return id, nil
	}
	p := id
	if !strings.HasPrefix(p, commits.IDPrefix) {
		p = commits.IDPrefix + p
	}
	cs, err := commits.New(st, commits.Options{}).ListCommits(ctx, nil)
	if err != nil {
		return "", err
	}
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	got, err := pick("commit", p, ids)
	if got == p && err == nil && p != id {
		return id, nil // none: as given
	}
	return got, err
}

// ResolveObject returns the object id id names: itself when a document has
// that id, else the one document whose id starts with it (the short ids a
// context prints). An id nothing starts with is returned as it is; a
// prefix of several is an *AmbiguousError.
func ResolveObject(ctx context.Context, st store.Store, id string) (string, error) {
	if id == "" {
		return id, nil
	}
	if _, err := st.Entity(ctx, id, store.Basis{}); err == nil {
		return id, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	docs, err := st.Query(ctx, store.Query{
		Where: []store.Pred{{Field: store.IDKey, Op: store.Gte, Value: id}, {Field: store.IDKey, Op: store.Lt, Value: id + "\U0010FFFF"}},
		Find:  []string{store.IDKey}, Limit: 1000,
	})
	if err != nil {
		return "", err
	}
	ids := make([]string, 0, len(docs))
	for _, d := range docs {
		if s, ok := d[store.IDKey].(string); ok {
			ids = append(ids, s)
		}
	}
	return pick("object", id, ids)
}
