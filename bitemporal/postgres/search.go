package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/store"
)

var _ store.Searcher = (*Store)(nil)

// Full-text search on PostgreSQL's own text search (docs/recall.md): a new
// document's search units (the same units the SQLite store's triggers
// write: one per whole document of a searchable kind, one per chat turn)
// are written with it in the writing transaction (ctxs_put_doc), each with a tsvector of its
// title (weight A) and body (weight D) under the 'simple' configuration;
// an evict removes them with the documents. Text is reduced to words of
// letters and digits, lower-cased, in Go (store.SearchTerms reads queries
// the same way), so PostgreSQL's parser sees no file names, URLs or
// e-mail addresses to keep whole.

// wholeKinds are the kinds indexed one unit per document version.
var wholeKinds = map[string]bool{"file": true, "toolcall": true, "note": true, "user": true, "system_prompt": true, "session_meta": true}

// indexTextMax bounds the words of one unit's body that are indexed, in
// bytes: a tsvector holds at most 1 MB.
const indexTextMax = 256 << 10

// titleMax caps a hit's title, in code points (a toolcall's arguments can
// be long).
const titleMax = 200

type unit struct {
	ent, kind, session string
	part               int
	title, body        string
}

// unitsOf is the search units of document doc of entity eid. For a chat
// (chat true) it is one unit per turn; the store keeps those its previous
// stored version did not have (ctxs_put_doc).
func unitsOf(eid string, doc store.Doc) (units []unit, chat bool) {
	kind, _ := doc["type"].(string)
	switch {
	case wholeKinds[kind]:
		u := unit{ent: eid, kind: kind, part: -1, title: titleOf(doc), body: textOf(doc["content"])}
		if _, ok := doc["content"].(string); !ok {
			u.body = textOf(doc["summary"])
		}
		if ref, ok := doc["chat_ref"].(string); ok && strings.HasPrefix(ref, "chat:") {
			u.session = ref[len("chat:"):]
		} else {
			u.session, _ = doc["session_id"].(string)
		}
		units = append(units, u)
	case kind == "chat":
		turns, _ := doc["turns"].([]any)
		for k, t := range turns {
			t, _ := t.(map[string]any)
			units = append(units, unit{ent: eid, kind: "chat", session: strings.TrimPrefix(eid, "chat:"), part: k, body: turnText(t)})
		}
		return units, true
	case kind == "chat_turn":
		// A chat stored one document per turn: the turn is a unit of its
		// chat ("chat:{session}"), visible once the chat's head is.
		sid, ok := doc["session_id"].(string)
		if converted, _ := doc["converted"].(bool); converted || !ok {
			break
		}
		n, _ := store.Num(doc["n"])
		t, _ := doc["turn"].(map[string]any)
		units = append(units, unit{ent: "chat:" + sid, kind: "chat", session: sid, part: int(n), body: turnText(t)})
	}
	return units, false
}

// clean removes U+0000, which PostgreSQL's text cannot hold.
func clean(s string) string { return strings.ReplaceAll(s, "\x00", "") }

// indexText is s as the words text search indexes: lower-cased runs of
// letters and digits, separated by spaces, at most indexTextMax bytes.
func indexText(s string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(strings.ToLower(s), notWord) {
		if b.Len()+len(w)+1 > indexTextMax {
			break
		}
		b.WriteString(w)
		b.WriteByte(' ')
	}
	return b.String()
}

func notWord(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// titleOf is a whole document's title: path, title, name, tool, arguments,
// nickname, description and tags, as the SQLite store's units have it.
func titleOf(doc store.Doc) string {
	var parts []string
	add := func(v any) {
		if s := textOf(v); s != "" {
			parts = append(parts, s)
		}
	}
	if src, ok := doc["source"].(map[string]any); ok {
		add(src["path"])
	}
	add(doc["title"])
	add(doc["name"])
	add(doc["tool"])
	if s, ok := doc["args_display"].(string); ok {
		add(s)
	} else if m, ok := doc["args"].(map[string]any); ok {
		add(m)
	}
	add(doc["nickname"])
	add(doc["description"])
	if tags, ok := doc["tags"].([]any); ok {
		var ts []string
		for _, t := range tags {
			if s, ok := t.(string); ok {
				ts = append(ts, s)
			}
		}
		add(strings.Join(ts, " "))
	}
	return strings.Join(parts, " ")
}

// textOf is a value as text: a string as it is, anything else but null as
// JSON.
func textOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// turnText is a chat turn's searchable text: the user's text (a string,
// or the text blocks) and the assistant's text blocks; no thinking, no
// tool calls.
func turnText(t map[string]any) string {
	var parts []string
	blocks := func(v any) {
		list, _ := v.([]any)
		for _, b := range list {
			if m, ok := b.(map[string]any); ok && m["type"] == "text" {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
	}
	if s, ok := t["user"].(string); ok {
		parts = append(parts, s)
	} else {
		blocks(t["user"])
	}
	blocks(t["assistant"])
	return strings.Join(parts, "\n")
}

// tsQuery renders the user's text as a tsquery: every term required, a
// phrase as words in sequence, a prefix term with :*. Words are letters
// and digits only, so no tsquery syntax leaks through.
func tsQuery(terms []store.SearchTerm) string {
	var parts []string
	for _, t := range terms {
		p := strings.Join(t.Words, " <-> ")
		if t.Prefix {
			p += ":*"
		}
		parts = append(parts, "("+p+")")
	}
	return strings.Join(parts, " & ")
}

// search is Search, one attempt. Hits are ranked by ts_rank, a title
// match worth twice a body match; among the units of the versions visible
// at the basis (for a chat turn: the chat's visible version is the turn's
// or a later one).
func (s *Store) search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	vt, tx, err := s.resolve(ctx, "search", q.Basis)
	if err != nil {
		return nil, err
	}
	terms := store.SearchTerms(q.Text)
	var args sqlArgs
	query, vtP, txP := args.add(tsQuery(terms)), args.add(vt), args.add(tx)
	var filters []string
	if len(q.Kinds) > 0 {
		filters = append(filters, "u.kind = ANY ("+args.add(q.Kinds)+"::text[])")
	}
	if len(q.Sessions) > 0 {
		filters = append(filters, "u.session = ANY ("+args.add(q.Sessions)+"::text[])")
	}
	if !q.Since.IsZero() {
		filters = append(filters, "p.tx_time >= "+args.add(ms(q.Since)))
	}
	if !q.Until.IsZero() {
		filters = append(filters, "p.tx_time < "+args.add(ms(q.Until)))
	}
	extra := ""
	if len(filters) > 0 {
		extra = " AND " + strings.Join(filters, " AND ")
	}
	stmt := `SELECT u.ent, u.kind, coalesce(u.session, '') AS session, u.part, u.title, u.body, p.tx_id, p.tx_time, p.vt,
		ts_rank('{0.5, 0, 0, 1.0}', u.tsv, q) AS rank
	FROM search_units u CROSS JOIN to_tsquery('simple', ` + query + `) AS q
	CROSS JOIN LATERAL (SELECT v.doc, v.tx_id, v.tx_time, v.vt FROM points v
		WHERE v.ent = u.ent AND v.vt <= ` + vtP + ` AND v.tx_id <= ` + txP + ` ORDER BY v.vt DESC, v.tx_id DESC LIMIT 1) AS p
	WHERE u.tsv @@ q AND CASE WHEN u.part >= 0 THEN p.doc >= u.doc ELSE p.doc = u.doc END` + extra + `
	ORDER BY rank DESC, u.id LIMIT ` + args.add(q.Limit)
	var rows []struct {
		Ent     []byte  `db:"ent"`
		Kind    string  `db:"kind"`
		Session string  `db:"session"`
		Part    int     `db:"part"`
		Title   string  `db:"title"`
		Body    string  `db:"body"`
		TxID    int64   `db:"tx_id"`
		TxTime  int64   `db:"tx_time"`
		VT      int64   `db:"vt"`
		Rank    float64 `db:"rank"`
	}
	if err := s.db.SelectContext(ctx, &rows, stmt, args...); err != nil {
		return nil, dbErr("search", "", err)
	}
	out := make([]store.SearchHit, len(rows))
	for i, r := range rows {
		snip := snippet(r.Body, terms)
		if snip == "" {
			snip = snippet(r.Title, terms)
		}
		out[i] = store.SearchHit{ID: string(r.Ent), Kind: r.Kind, Session: r.Session, Turn: r.Part, Title: cut(r.Title, titleMax),
			Snippet: snip, Score: r.Rank, TxID: r.TxID, TxTime: fromMS(r.TxTime), ValidTime: fromMS(r.VT)}
	}
	return out, nil
}

// snippetWords is how many words a snippet shows.
const snippetWords = 16

// snippet is a few words of text around its first word that a term
// matches, matched words between store.SnippetOpen and SnippetClose; ""
// if no word matches.
func snippet(text string, terms []store.SearchTerm) string {
	type span struct{ from, to int }
	var words []span
	start := -1
	for i, r := range text {
		if notWord(r) {
			if start >= 0 {
				words = append(words, span{start, i})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		words = append(words, span{start, len(text)})
	}
	match := func(w string) bool {
		w = strings.ToLower(w)
		for _, t := range terms {
			for j, tw := range t.Words {
				if w == tw || (t.Prefix && j == len(t.Words)-1 && strings.HasPrefix(w, tw)) {
					return true
				}
			}
		}
		return false
	}
	first := -1
	for i, w := range words {
		if match(text[w.from:w.to]) {
			first = i
			break
		}
	}
	if first < 0 {
		return ""
	}
	lo := max(0, first-snippetWords/4)
	hi := min(len(words), lo+snippetWords)
	var b strings.Builder
	if lo > 0 {
		b.WriteString("…")
	}
	at := words[lo].from
	for _, w := range words[lo:hi] {
		b.WriteString(text[at:w.from])
		if match(text[w.from:w.to]) {
			b.WriteString(store.SnippetOpen + text[w.from:w.to] + store.SnippetClose)
		} else {
			b.WriteString(text[w.from:w.to])
		}
		at = w.to
	}
	if hi < len(words) {
		b.WriteString("…")
	}
	return b.String()
}

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
