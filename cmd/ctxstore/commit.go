package main

import (
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// commitCmd groups the context-commit commands (docs/commits.md).
type commitCmd struct {
	Checkpoint     commitCheckpointCmd  `cmd:"" help:"Record a context commit: a delta, compaction or snapshot, with its content and provenance."`
	Show           commitShowCmd        `cmd:"" help:"Print a commit's metadata (as of a transaction with --tx-id)."`
	History        commitHistoryCmd     `cmd:"" help:"List the chain from a commit back toward its root, like git log."`
	Materialize    commitMaterializeCmd `cmd:"" help:"Print the conversation at a commit in a format (content on stdout, or -o FILE)."`
	Resolve        commitResolveCmd     `cmd:"" help:"Find a principal's commit at or nearest before a time."`
	UpdateMetadata commitUpdateCmd      `cmd:"" name:"update-metadata" help:"Change a commit's summary or tags (a new metadata version; the content never changes)."`
	Fork           commitForkCmd        `cmd:"" help:"Start a new session from a commit (fork or resume): materialize it and write the new session's first commit."`
	Formats        commitFormatsCmd     `cmd:"" help:"List the known content formats."`
}

// provenanceFlags are the provenance options of checkpoint and fork.
type provenanceFlags struct {
	Template  string `name:"template" placeholder:"NAME" help:"The agent template (part of the commit id)."`
	Principal string `name:"principal" env:"CTXSTORE_PRINCIPAL" placeholder:"NAME" help:"Who ran it (default: the user name); resolve finds commits by principal."`
	Machine   string `name:"machine" placeholder:"NAME" help:"Where it ran (default: the host name)."`
	Ticket    string `name:"ticket" placeholder:"ID" help:"The ticket worked on."`
	Thread    string `name:"thread" placeholder:"ID" help:"The thread of the conversation."`
	Harness   string `name:"harness" placeholder:"NAME" help:"The harness and its version."`
}

func (p provenanceFlags) provenance() commits.Provenance {
	if p.Principal == "" {
		if u, err := user.Current(); err == nil {
			p.Principal = u.Username
		}
	}
	if p.Machine == "" {
		p.Machine, _ = os.Hostname()
	}
	return commits.Provenance{Template: p.Template, Principal: p.Principal, Machine: p.Machine, Ticket: p.Ticket, Thread: p.Thread, Harness: p.Harness}
}

type commitCheckpointCmd struct {
	Parent  string   `name:"parent" placeholder:"CTX" help:"The parent commit (default: none, a root)."`
	Type    string   `name:"type" default:"delta" enum:"delta,compaction,snapshot" help:"delta, compaction or snapshot."`
	Format  string   `name:"format" default:"events-v1" placeholder:"FORMAT" help:"The content's format (see commit formats)."`
	Content string   `name:"content" required:"" placeholder:"FILE" help:"The content, read from FILE ('-': stdin)."`
	Session string   `name:"session" placeholder:"ID" help:"The session the commit belongs to."`
	Trigger string   `name:"trigger" default:"explicit" help:"turn_boundary, tool_call, compaction, session_end, explicit, fork, import."`
	Summary string   `name:"summary" help:"A summary of the agent's understanding."`
	Tags    []string `name:"tag" help:"A tag (repeatable)."`
	Created timeFlag `name:"created" placeholder:"TIME" help:"The commit time (default: now)."`
	provenanceFlags
}

// Run implements commit checkpoint.
func (c *commitCheckpointCmd) Run(a *app) error {
	var data []byte
	var err error
	if c.Content == "-" {
		data, err = io.ReadAll(a.stdin)
	} else {
		data, err = os.ReadFile(c.Content)
	}
	if err != nil {
		return fmt.Errorf("reading the content: %w", err)
	}
	s, err := a.open(true)
	if err != nil {
		return err
	}
	defer s.Close()
	p := c.provenance()
	p.Session, p.Trigger = c.Session, commits.Trigger(c.Trigger)
	cm, err := commitService(s).Checkpoint(a.ctx, commits.CheckpointRequest{Parent: c.Parent, Type: commits.Type(c.Type),
		Format: c.Format, Content: data, Provenance: p, Summary: c.Summary, Tags: c.Tags, Created: c.Created.t})
	if err != nil {
		return err
	}
	if a.cli.JSON {
		return a.printJSON(cm)
	}
	_, err = fmt.Fprintln(a.stdout, cm.ID)
	return err
}

type commitShowCmd struct {
	ID   string `arg:"" placeholder:"CTX" ref:"commit" help:"The commit (or a prefix of its id naming one commit)."`
	TxID *int64 `name:"tx-id" placeholder:"N" help:"Read the metadata as of tx N (earlier summaries)."`
}

// Run implements commit show.
func (c *commitShowCmd) Run(a *app) error {
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	cm, err := commitService(s).Show(a.ctx, c.ID, store.Basis{TxID: c.TxID})
	if err != nil {
		return err
	}
	if a.cli.JSON {
		return a.printJSON(cm)
	}
	t := newTable(a.stdout, "field", "value")
	for _, kv := range [][2]any{{"id", cm.ID}, {"parent", cm.Parent}, {"type", cm.Type}, {"format", cm.Format},
		{"content", cm.Content}, {"content_bytes", cm.ContentBytes}, {"depth", cm.Depth}, {"created", timeText(cm.Created)},
		{"template", cm.Template}, {"principal", cm.Principal}, {"machine", cm.Machine}, {"session", cm.Session},
		{"trigger", cm.Trigger}, {"ticket", cm.Ticket}, {"thread", cm.Thread}, {"harness", cm.Harness},
		{"messages", cm.MessageCount}, {"tokens", cm.TokenCount}, {"summary", cm.Summary}, {"tags", strings.Join(cm.Tags, ",")},
		{"snapshot_of", cm.SnapshotOf}, {"tx_id", cm.TxID}} {
		if s := fmt.Sprint(kv[1]); s != "" {
			t.row(kv[0], s)
		}
	}
	return t.flush()
}

type commitHistoryCmd struct {
	ID    string `arg:"" placeholder:"CTX" ref:"commit" help:"The commit (or a prefix of its id naming one commit)."`
	Depth int    `name:"depth" short:"n" placeholder:"N" help:"At most N commits (default: all)."`
}

// Run implements commit history.
func (c *commitHistoryCmd) Run(a *app) error {
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	h, err := commitService(s).History(a.ctx, c.ID, c.Depth)
	if err != nil {
		return err
	}
	if a.cli.JSON {
		return a.printJSON(h)
	}
	t := newTable(a.stdout, "id", "type", "created", "session", "trigger", "messages", "summary")
	for _, cm := range h {
		t.row(cm.ID, cm.Type, timeText(cm.Created), cm.Session, cm.Trigger, cm.MessageCount, cm.Summary)
	}
	return t.flush()
}

type materializeFlags struct {
	Format  string `name:"format" placeholder:"FORMAT" help:"The output format (default: the commit's own)."`
	Stop    string `name:"stop" placeholder:"STOP" help:"compaction (default), root, or an ancestor's id."`
	Output  string `name:"output" short:"o" placeholder:"FILE" help:"Write the conversation to FILE, atomically."`
	NoCache bool   `name:"no-cache" help:"Neither read nor write the snapshot cache."`
}

// materializedJSON is the --json output of materialize and fork: the
// result's metadata and, without -o, its content (text, or base64 when it
// is not UTF-8).
type materializedJSON struct {
	*commits.Materialized
	File          string  `json:"file,omitempty"`
	Content       *string `json:"content,omitempty"`
	ContentBase64 *string `json:"content_base64,omitempty"`
}

func (a *app) emitMaterialized(m *commits.Materialized, output string, session *commits.Forked) error {
	if output != "" {
		if err := writeOutput(a.stdout, output, false, "the conversation", func(w io.Writer) error {
			_, err := w.Write(m.Content)
			return err
		}); err != nil {
			return err
		}
	}
	if a.cli.JSON {
		out := materializedJSON{Materialized: m, File: output}
		if output == "" {
			out.Content, out.ContentBase64 = m.ContentJSON()
		}
		if session != nil {
			return a.printJSON(map[string]any{"session": session.Session, "commit": session.Commit, "materialized": out})
		}
		return a.printJSON(out)
	}
	if session != nil {
		fmt.Fprintf(a.stderr, "session %s, first commit %s\n", session.Session, session.Commit.ID)
	}
	fmt.Fprintf(a.stderr, "%s: %d commits, %s, tier %s, %d messages, ~%d tokens%s\n", m.Commit, m.Commits, m.Format, m.Tier,
		m.MessageCount, m.TokenCount, map[bool]string{true: " (cached)", false: ""}[m.Cached])
	if output == "" {
		_, err := a.stdout.Write(m.Content)
		return err
	}
	return nil
}

type commitMaterializeCmd struct {
	ID string `arg:"" placeholder:"CTX" ref:"commit" help:"The commit (or a prefix of its id naming one commit)."`
	materializeFlags
}

// Run implements commit materialize.
func (c *commitMaterializeCmd) Run(a *app) error {
	s, err := a.open(true)
	if err != nil {
		return err
	}
	defer s.Close()
	m, err := commitService(s).Materialize(a.ctx, commits.MaterializeRequest{ID: c.ID, Format: resolveFormat(c.Format), Stop: c.Stop, NoCache: c.NoCache})
	if err != nil {
		return err
	}
	return a.emitMaterialized(m, c.Output, nil)
}

type commitResolveCmd struct {
	Principal string   `arg:"" placeholder:"PRINCIPAL" help:"The principal."`
	At        timeFlag `name:"at" placeholder:"TIME" help:"The time (default: now)."`
}

// Run implements commit resolve.
func (c *commitResolveCmd) Run(a *app) error {
	s, err := a.open(false)
	if err != nil {
		return err
	}
	defer s.Close()
	at := c.At.t
	if !c.At.set {
		at = store.MS(time.Now())
	}
	cm, err := commitService(s).Resolve(a.ctx, c.Principal, at)
	if err != nil {
		return err
	}
	if a.cli.JSON {
		return a.printJSON(cm)
	}
	_, err = fmt.Fprintln(a.stdout, cm.ID)
	return err
}

type commitUpdateCmd struct {
	ID        string   `arg:"" placeholder:"CTX" ref:"commit" help:"The commit (or a prefix of its id naming one commit)."`
	Summary   *string  `name:"summary" help:"The new summary."`
	Tags      []string `name:"tag" help:"The new tags (repeatable; replaces the tags)."`
	ClearTags bool     `name:"clear-tags" help:"Remove every tag."`
}

// Run implements commit update-metadata.
func (c *commitUpdateCmd) Run(a *app) error {
	u := commits.Update{Summary: c.Summary}
	if len(c.Tags) > 0 || c.ClearTags {
		tags := c.Tags
		if c.ClearTags {
			tags = []string{}
		}
		u.Tags = &tags
	}
	if u.Summary == nil && u.Tags == nil {
		return usagef("update-metadata needs --summary, --tag or --clear-tags")
	}
	s, err := a.open(true)
	if err != nil {
		return err
	}
	defer s.Close()
	cm, err := commitService(s).UpdateMetadata(a.ctx, c.ID, u)
	if err != nil {
		return err
	}
	if a.cli.JSON {
		return a.printJSON(cm)
	}
	_, err = fmt.Fprintf(a.stdout, "%s tx %d\n", cm.ID, cm.TxID)
	return err
}

type commitForkCmd struct {
	ID      string `arg:"" optional:"" placeholder:"CTX" ref:"commit" help:"The commit to continue from (none: a fresh start)."`
	Session string `name:"session" placeholder:"ID" help:"The new session's id (default: a new UUID)."`
	materializeFlags
	provenanceFlags
}

// Run implements commit fork.
func (c *commitForkCmd) Run(a *app) error {
	s, err := a.open(true)
	if err != nil {
		return err
	}
	defer s.Close()
	f, err := commitService(s).Fork(a.ctx, commits.ForkRequest{From: c.ID, Session: c.Session, Format: resolveFormat(c.Format), Stop: c.Stop, Provenance: c.provenance()})
	if err != nil {
		return err
	}
	if f.Materialized == nil {
		if a.cli.JSON {
			return a.printJSON(f)
		}
		_, err := fmt.Fprintf(a.stdout, "%s %s\n", f.Session, f.Commit.ID)
		return err
	}
	return a.emitMaterialized(f.Materialized, c.Output, f)
}

type commitFormatsCmd struct{}

// Run implements commit formats.
func (c *commitFormatsCmd) Run(a *app) error {
	reg := formats.Commits()
	type row struct {
		Name       string `json:"name"`
		OutputOnly bool   `json:"output_only"`
		Decode     bool   `json:"decode"`
		Encode     bool   `json:"encode"`
		Doc        string `json:"doc"`
	}
	var rows []row
	for _, n := range reg.Names() {
		f, _ := reg.Lookup(n)
		rows = append(rows, row{n, f.OutputOnly, f.Decode != nil, f.Encode != nil, f.Doc})
	}
	if a.cli.JSON {
		return a.printJSON(rows)
	}
	t := newTable(a.stdout, "format", "decode", "encode", "output only", "content")
	for _, r := range rows {
		t.row(r.Name, r.Decode, r.Encode, r.OutputOnly, r.Doc)
	}
	return t.flush()
}

// commitService is the CLI's commits service: the commit formats with
// every harness format's codec (harness/formats), so that imported
// sessions decode and materialize as session files.
func commitService(s store.Store) *commits.Service {
	return commits.New(s, commits.Options{Registry: formats.Commits()})
}
