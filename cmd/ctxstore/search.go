package main

import (
	"strconv"
	"strings"

	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/store"
)

type searchCmd struct {
	Text    []string `arg:"" help:"Words to find (all must occur; word* is a prefix; \"quoted words\" a phrase)."`
	Kind    []string `name:"kind" placeholder:"KIND" help:"Only objects of this kind (file, toolcall, chat, note, user, system_prompt, session_meta); repeatable."`
	Session []string `name:"session" placeholder:"ID" ref:"session" help:"Only objects of this session (chat turns, toolcalls, session metadata); repeatable."`
	Since   timeFlag `name:"since" placeholder:"TIME" help:"Only versions written at or after TIME."`
	Until   timeFlag `name:"until" placeholder:"TIME" help:"Only versions written before TIME."`
	Limit   int      `name:"limit" default:"20" placeholder:"N" help:"At most N hits (1-1000)."`
	basisFlags
}

// searchJSON is search --json: the hits, best first.
type searchJSON struct {
	Hits []store.SearchHit `json:"hits"`
}

// Run implements search.
func (c *searchCmd) Run(a *app) error {
	if c.Limit < 1 || c.Limit > store.MaxSearchLimit {
		return usagef("--limit %d: want 1 to %d", c.Limit, store.MaxSearchLimit)
	}
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	q := store.SearchQuery{Text: strings.Join(c.Text, " "), Kinds: c.Kind, Sessions: c.Session,
		Since: c.Since.t, Until: c.Until.t, Limit: c.Limit, Basis: c.basis()}
	hits, err := recall.Search(a.ctx, s, q, recall.Scope{})
	if err != nil {
		return err
	}
	if a.cli.JSON {
		if hits == nil {
			hits = []store.SearchHit{}
		}
		return a.printJSON(searchJSON{Hits: hits})
	}
	t := newTable(a.stdout, "KIND", "ID", "SESSION", "TURN", "TX", "TITLE", "SNIPPET")
	for _, h := range hits {
		turn := ""
		if h.Turn >= 0 {
			turn = strconv.Itoa(h.Turn)
		}
		t.row(h.Kind, h.ID, h.Session, turn, h.TxID, oneLine(h.Title, 40), oneLine(h.Snippet, 100))
	}
	return t.flush()
}

// oneLine squeezes white space and cuts s to n code points.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
