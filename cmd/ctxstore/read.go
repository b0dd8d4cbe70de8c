package main

import (
	"errors"
	"fmt"

	"github.com/ctxstore/ctxstore/store"
)

type getCmd struct {
	ID string `arg:"" help:"The document id (xt/id)."`
	basisFlags
}

type historyCmd struct {
	ID              string   `arg:"" help:"The document id (xt/id)."`
	Desc            bool     `name:"desc" help:"Newest first (default: oldest first)."`
	WithCorrections bool     `name:"with-corrections" help:"Show every version written, not only the one that won at each valid time."`
	WithDocs        bool     `name:"with-docs" help:"Include the documents."`
	StartValidTime  timeFlag `name:"start-valid-time" placeholder:"TIME" help:"Valid time the listing starts at, inclusive (the earliest; with --desc, the latest)."`
	EndValidTime    timeFlag `name:"end-valid-time" placeholder:"TIME" help:"Valid time the listing ends at, exclusive."`
	StartTxID       *int64   `name:"start-tx-id" placeholder:"N" help:"Transaction the listing starts at, inclusive (the first; with --desc, the last)."`
	EndTxID         *int64   `name:"end-tx-id" placeholder:"N" help:"Transaction the listing ends at, exclusive."`
	basisFlags
}

// Run implements get.
func (c *getCmd) Run(a *app) error {
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	doc, err := s.Entity(a.ctx, c.ID, c.basis())
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%q not found: no document with this id at this basis", c.ID)
	}
	if err != nil {
		return err
	}
	if a.cli.JSON {
		return a.printJSON(jsonDoc(doc))
	}
	text, err := docText(doc, true)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(a.stdout, text)
	return err
}

// historyJSON is one row of history --json. ContentHash is null for a
// tombstone; Doc is present only with --with-docs (null for a tombstone).
type historyJSON struct {
	ValidTime   string   `json:"valid_time"`
	TxID        int64    `json:"tx_id"`
	TxTime      string   `json:"tx_time"`
	Deleted     bool     `json:"deleted"`
	ContentHash *string  `json:"content_hash"`
	Doc         *jsonDoc `json:"doc,omitempty"`
}

// Run implements history.
func (c *historyCmd) Run(a *app) error {
	opts := store.HistoryOptions{
		Order:           store.Asc,
		WithCorrections: c.WithCorrections,
		WithDocs:        c.WithDocs,
		StartValidTime:  c.StartValidTime.ptr(),
		EndValidTime:    c.EndValidTime.ptr(),
		StartTxID:       c.StartTxID,
		EndTxID:         c.EndTxID,
		Basis:           c.basis(),
	}
	if c.Desc {
		opts.Order = store.Desc
	}
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	rows, err := s.History(a.ctx, c.ID, opts)
	if err != nil {
		return err
	}
	if a.cli.JSON {
		out := make([]historyJSON, len(rows))
		for i, r := range rows {
			h := historyJSON{ValidTime: timeText(r.ValidTime), TxID: r.TxID, TxTime: timeText(r.TxTime), Deleted: r.Deleted}
			if !r.Deleted {
				hash := r.ContentHash
				h.ContentHash = &hash
			}
			if c.WithDocs {
				d := jsonDoc(r.Doc)
				h.Doc = &d
			}
			out[i] = h
		}
		return a.printJSON(out)
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintf(a.stdout, "no history for %q\n", c.ID)
		return err
	}
	header := []any{"VALID_TIME", "TX", "TX_TIME", "CONTENT"}
	if c.WithDocs {
		header = append(header, "DOC")
	}
	t := newTable(a.stdout, header...)
	for _, r := range rows {
		content := "deleted"
		if !r.Deleted {
			content = shortHash(r.ContentHash)
		}
		cells := []any{timeText(r.ValidTime), r.TxID, timeText(r.TxTime), content}
		if c.WithDocs {
			doc := "-"
			if r.Doc != nil {
				if doc, err = docText(r.Doc, false); err != nil {
					return err
				}
			}
			cells = append(cells, doc)
		}
		t.row(cells...)
	}
	return t.flush()
}

// shortHash is the first 12 characters of a content hash.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "-"
	}
	return h
}
