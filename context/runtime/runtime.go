// Package runtime opens a session with everything that works on it (issue
// 11 item 3): the session (created, or resumed from the store), its agent
// tools (with the session's tracked files synced on resume), its assembler
// (resumed from its context commits) and the ingester of the harness's
// log (resumed at its cursor). The HTTP service, replay, the session-bundle
// tests and the end-to-end tests all wire a session through Open, so the
// order (session -> tools -> assembler -> ingester) and the resume steps
// live in one place.
package runtime

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// Mode says whether Open may create the session, resume it, or both.
type Mode int

const (
	// OpenOrCreate resumes the session if it exists, else creates it.
	OpenOrCreate Mode = iota
	// CreateOnly creates the session; one that exists is an error
	// (store.ErrConflict, from session.Create).
	CreateOnly
	// ResumeOnly resumes the session; a missing one is store.ErrNotFound.
	ResumeOnly
)

// State says how Open found the session.
type State string

const (
	// Created is a new session.
	Created State = "created"
	// Resumed is a session loaded from the store.
	Resumed State = "resumed"
)

// Options configure Open.
type Options struct {
	Mode Mode
	// Create are the options of a session Open creates.
	Create session.CreateOptions
	// Indexer indexes the files the tools read and touch; required.
	Indexer *files.Indexer
	// Tools, Assemble and Ingest configure the session's tools, assembler
	// and ingester. Assemble.Layout and Assemble.Tools only matter for a
	// session without context commits (a resumed assembler keeps its
	// session's).
	Tools    tools.Options
	Assemble assemble.Options
	Ingest   ingest.Options
}

// Runtime is an open session and what works on it.
type Runtime struct {
	Session   *session.Session
	Tools     *tools.Tools
	Assembler *assemble.Assembler
	Ingester  *ingest.Ingester
	// State says whether the session was created or resumed.
	State State
	// ResumeFiles is what syncing the session's files on resume reported
	// (tools.Resume): files that could not be synced. The session is usable
	// either way; the caller says whether that matters.
	ResumeFiles error
}

// Open opens session id in st (creating or resuming it as o.Mode says) and
// wires its tools, assembler and ingester.
func Open(ctx context.Context, st store.Store, id string, o Options) (*Runtime, error) {
	if o.Indexer == nil {
		return nil, errors.New("runtime: an Indexer is required")
	}
	var (
		s   *session.Session
		err error
	)
	r := &Runtime{State: Resumed}
	if o.Mode != CreateOnly {
		s, err = session.Open(ctx, st, id)
	}
	if o.Mode == CreateOnly || (o.Mode == OpenOrCreate && errors.Is(err, store.ErrNotFound)) {
		s, err = session.Create(ctx, st, id, o.Create)
		r.State = Created
	}
	if err != nil {
		return nil, err
	}
	r.Session = s
	r.Tools = tools.New(s, o.Indexer, o.Tools)
	if r.State == Resumed {
		_, r.ResumeFiles = r.Tools.Resume(ctx)
	}
	if o.Assemble.Paths == (assemble.Paths{}) {
		o.Assemble.Paths = displayPaths(o.Ingest)
	}
	if r.Assembler, err = assemble.Open(ctx, s, o.Assemble); err != nil {
		return nil, err
	}
	if dir := r.Assembler.SpillDir(); dir != "" {
		// A bare head names its spill files (the root commit's directory,
		// after a resume): a read of one loads its output.
		r.Tools.SetSpill(tools.Spill{Root: o.Tools.Spill.Root, Dir: dir})
	}
	if r.Ingester, err = ingest.New(ctx, r.Tools, r.Assembler, o.Ingest); err != nil {
		return nil, err
	}
	return r, nil
}

// Close writes the chat turn in progress (Ingester.Flush). The store stays
// open.
func (r *Runtime) Close(ctx context.Context) error {
	if r == nil || r.Ingester == nil {
		return nil
	}
	return r.Ingester.Flush(ctx)
}

// displayPaths is how the session's file paths are shown to the model
// (assemble.Paths) when the options name none: relative to the harness's
// working directory as the ingester maps it, and, for a replay's mirror
// (ingest.Mirror), with the mirror's directory taken off the others, so
// the model reads the paths of the recorded machine.
func displayPaths(o ingest.Options) assemble.Paths {
	if !filepath.IsAbs(o.Cwd) {
		return assemble.Paths{}
	}
	fs := o.Files
	if fs == nil {
		fs = ingest.Live{}
	}
	p := assemble.Paths{Root: filepath.ToSlash(fs.Local(o.Cwd))}
	if m, ok := fs.(interface{ Mount() string }); ok {
		p.Mount = filepath.ToSlash(m.Mount())
	}
	return p
}
