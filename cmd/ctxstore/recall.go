package main

import (
	"fmt"
	"strings"

	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/store"
)

// recallFlags name the recall config file.
type recallFlags struct {
	RecallConfig string `name:"recall-config" env:"CTXSTORE_RECALL_CONFIG" placeholder:"FILE" help:"The recall config (model providers; docs/recall.md). Without it the offline generator is used."`
}

// settings loads the config, printing its warnings on stderr.
func (f recallFlags) settings(a *app) *recall.Settings {
	set, warns := recall.LoadConfig(f.RecallConfig)
	for _, w := range warns {
		fmt.Fprintln(a.stderr, "ctxstore: warning: "+w)
	}
	return set
}

type sessionIndexCmd struct {
	Session string `arg:"" placeholder:"SESSION" ref:"session" help:"The session id (or a prefix of it naming one session)."`
	recallFlags
}

type sessionMetaCmd struct {
	Session string `arg:"" placeholder:"SESSION" ref:"session" help:"The session id (or a prefix of it naming one session)."`
	History bool   `name:"history" help:"Every version, oldest first."`
	basisFlags
}

type querySessionCmd struct {
	Session  string   `arg:"" placeholder:"SESSION" help:"A session id or name (resolved as @@ references are)."`
	Question []string `arg:"" help:"The question."`
	recallFlags
}

// Run implements session index.
func (c *sessionIndexCmd) Run(a *app) error {
	set := c.settings(a)
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	m, err := recall.NewIndexer(s, set).Index(a.ctx, c.Session)
	if err != nil {
		return err
	}
	return printMeta(a, []recall.Meta{*m})
}

// Run implements session meta.
func (c *sessionMetaCmd) Run(a *app) error {
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	var ms []recall.Meta
	if c.History {
		if ms, err = recall.MetaHistory(a.ctx, s, c.Session); err != nil {
			return err
		}
	} else {
		m, err := recall.ReadMeta(a.ctx, s, c.Session, c.basis())
		if store.KindOf(err) == store.ErrNotFound {
			return fmt.Errorf("session %s has no metadata at this basis (ctxstore session index %s makes it)", c.Session, c.Session)
		}
		if err != nil {
			return err
		}
		ms = []recall.Meta{*m}
	}
	return printMeta(a, ms)
}

func printMeta(a *app, ms []recall.Meta) error {
	if a.cli.JSON {
		if len(ms) == 1 {
			return a.printJSON(ms[0])
		}
		return a.printJSON(map[string]any{"history": ms})
	}
	for i, m := range ms {
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		fmt.Fprintf(a.stdout, "session:     %s\nname:        %s\ndescription: %s\ntags:        %s\ngenerator:   %s %s\ncovers:      %d user messages, %d turns\nversion:     tx %d at %s\nsummary:\n%s\n",
			m.SessionID, m.Name, m.Description, strings.Join(m.Tags, ", "), m.Generator, m.Model,
			m.UserMessages, m.IndexedTurns, m.TxID, timeText(m.TxTime), m.Summary)
	}
	return nil
}

// Run implements query-session.
func (c *querySessionCmd) Run(a *app) error {
	set := c.settings(a)
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	ans, err := recall.QuerySession(a.ctx, s, set, recall.Scope{}, c.Session, strings.Join(c.Question, " "))
	if err != nil {
		return err
	}
	if a.cli.JSON {
		return a.printJSON(ans)
	}
	_, err = fmt.Fprintln(a.stdout, ans.Text)
	return err
}
