package sessionbundle

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// ExportOptions configure Export.
type ExportOptions struct {
	// StoreID names the source store (default "<backend>:<location>" from
	// its status); the bundle's source id is SourceID(session, StoreID).
	StoreID string
	// PageSize is how many transactions are read from the store at a time
	// (default 100).
	PageSize int
	// TempDir is where the version log is staged while the manifest is
	// computed (default os.TempDir()).
	TempDir string
	// Progress, if set, is told how far the phases "collect" (entities
	// looked up) and "export" (source tx ids scanned) have come.
	Progress versionlog.ProgressFunc
}

// ExportSummary describes a finished export.
type ExportSummary struct {
	Session  string            `json:"session"`
	Source   versionlog.Source `json:"source"`
	Upto     int64             `json:"upto"`
	Entities int64             `json:"entities"`
	Commits  int64             `json:"commits"`
	// Lines and Bytes are the bundle's, uncompressed.
	Lines int64 `json:"lines"`
	Bytes int64 `json:"bytes"`
	// Log is the version log's end line (txs, ops, docs, first and last
	// source tx, checksum).
	Log versionlog.Trailer `json:"log"`
	// Evicted counts the put and match ops written without their document
	// because it was evicted from the source.
	Evicted int64 `json:"evicted_ops"`
}

// Export writes session sessionID of src to w as a bundle: the manifest,
// then the version log of the session's entities (see the package doc)
// with their full history, up to src's latest transaction when the export
// starts. The same store exported twice gives the same bytes.
//
// It reads the session, its context commits and its chat at the latest
// basis to learn the entities, one history read per entity to find where
// their history starts, and the tx log from there on in pages; documents
// that carry the session's id in "session_id" join the entities as the
// scan meets them. The log is staged in a temporary file, since the
// manifest that precedes it is known only at the end.
func Export(ctx context.Context, src store.Store, sessionID string, w io.Writer, o ExportOptions) (ExportSummary, error) {
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	latest, status, err := store.Settle(ctx, src)
	if err != nil {
		return ExportSummary{}, fmt.Errorf("export: %w", err)
	}
	if o.StoreID == "" {
		o.StoreID = status.Backend + ":" + status.Location
	}
	ex := &exporter{ctx: ctx, src: src, o: o, session: sessionID, first: map[string]int64{}, role: map[string]Role{}}
	ex.sum = ExportSummary{Session: sessionID, Source: versionlog.SourceOf(status, SourceID(sessionID, o.StoreID)), Upto: -1}
	if latest != nil {
		ex.sum.Upto = latest.ID
	}
	if err := ex.collect(); err != nil {
		return ex.sum, fmt.Errorf("export: session %s: %w", sessionID, err)
	}
	tmp, err := os.CreateTemp(o.TempDir, "ctxstore-session-*.log")
	if err != nil {
		return ex.sum, fmt.Errorf("export: staging the log: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := ex.writeLog(tmp); err != nil {
		return ex.sum, fmt.Errorf("export: session %s: %w", sessionID, err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return ex.sum, fmt.Errorf("export: staging the log: %w", err)
	}
	if err := ex.writeBundle(w, tmp); err != nil {
		return ex.sum, fmt.Errorf("export: %w", err)
	}
	return ex.sum, nil
}

type exporter struct {
	ctx     context.Context
	src     store.Store
	o       ExportOptions
	session string
	sum     ExportSummary
	info    session.Info

	// role holds every entity known so far; first the first tx of its
	// history still in the source (absent: none, or not looked up yet).
	role    map[string]Role
	first   map[string]int64
	written map[string]bool // entities with an op in the log
}

// collect learns the entities the session names: its head, chat and system
// prompt, its index, and what its commits and chat reference.
func (ex *exporter) collect() error {
	s, err := session.Open(ex.ctx, ex.src, ex.session)
	if err != nil {
		return err
	}
	ex.info = s.Info()
	add := func(id string, r Role) {
		if _, ok := ex.role[id]; !ok && id != "" && !versionlog.Reserved(id) {
			ex.role[id] = r
		}
	}
	add(objects.SessionObjectID(ex.session), RoleSession)
	add(ex.info.ChatID, RoleChat)
	add(ex.info.SystemPromptID, RoleSystemPrompt)
	var prev *assemble.Commit
	for n := 1; ; n++ {
		c, err := assemble.ReadCommitAfter(ex.ctx, ex.src, ex.session, n, prev)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return err
		}
		prev = c
		add(c.ID, RoleCommit)
		add(c.SystemRef.ID, RoleObject)
		refs := append(append([]string(nil), c.Pool...), c.Active...)
		for _, it := range c.Items {
			if it.Ref != "" {
				refs = append(refs, it.Ref)
			}
		}
		for _, r := range refs {
			ref, err := objects.ParseRef(r)
			if err != nil {
				return fmt.Errorf("%s: reference %q: %w", c.ID, r, err)
			}
			add(ref.ID, RoleObject)
		}
	}
	for _, id := range s.State().Index {
		add(id, RoleObject)
	}
	chat, err := s.Chat(ex.ctx)
	if err != nil {
		return err
	}
	for _, id := range chat.Chat.ToolcallRefs {
		add(id, RoleObject)
	}
	ids := make([]string, 0, len(ex.role))
	for id := range ex.role {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if err := ex.lookFirst(id); err != nil {
			return err
		}
		if ex.o.Progress != nil {
			ex.o.Progress("collect", int64(i+1), int64(len(ids)))
		}
	}
	return nil
}

// lookFirst records the first tx of id's history still in the source, at
// or before the export's upto (none if the entity is unknown or evicted).
func (ex *exporter) lookFirst(id string) error {
	upto := ex.sum.Upto
	rows, err := ex.src.History(ex.ctx, id, store.HistoryOptions{Order: store.Asc, WithCorrections: true,
		Basis: store.Basis{ValidTime: store.FarFuture, TxID: &upto}})
	if err != nil {
		return fmt.Errorf("reading the history of %s: %w", id, err)
	}
	for _, r := range rows {
		if f, ok := ex.first[id]; !ok || r.TxID < f {
			ex.first[id] = r.TxID
		}
	}
	return nil
}

// writeLog writes the version log of the entities to w: every source
// transaction with an op on one of them, restricted to those ops.
func (ex *exporter) writeLog(w io.Writer) error {
	start := ex.sum.Upto + 1
	for _, f := range ex.first {
		start = min(start, f)
	}
	lw, err := versionlog.NewWriter(w, versionlog.Header{Source: ex.sum.Source, After: -1, Upto: ex.sum.Upto})
	if err != nil {
		return err
	}
	ex.written = map[string]bool{}
	for cur := start - 1; cur < ex.sum.Upto; {
		page, err := ex.src.TxLog(ex.ctx, cur, ex.o.PageSize)
		if err != nil {
			return fmt.Errorf("reading the tx log after tx %d: %w", cur, err)
		}
		if len(page) == 0 {
			break
		}
		for _, lt := range page {
			if lt.ID > ex.sum.Upto {
				cur = ex.sum.Upto
				break
			}
			cur = lt.ID
			tx, keep, err := ex.restrict(lt)
			if err != nil {
				return err
			}
			if keep {
				if err := lw.WriteTx(tx); err != nil {
					return err
				}
			}
			if ex.o.Progress != nil {
				ex.o.Progress("export", lt.ID-start+1, ex.sum.Upto-start+1)
			}
		}
	}
	t, err := lw.Close()
	ex.sum.Log = t
	return err
}

// restrict keeps the ops of lt on the session's entities, made explicit.
// A document carrying the session's id in "session_id" makes its entity
// one of them.
func (ex *exporter) restrict(lt store.LoggedTx) (versionlog.Tx, bool, error) {
	ids := make([]string, len(lt.Ops))
	for i, op := range lt.Ops {
		ids[i] = op.ID
		if ids[i] == "" && op.Doc != nil {
			ids[i], _ = store.DocID(op.Doc)
		}
		if op.Doc == nil || versionlog.Reserved(ids[i]) {
			continue
		}
		if sid, _ := op.Doc["session_id"].(string); sid != ex.session {
			continue
		}
		if _, known := ex.role[ids[i]]; !known {
			r := RoleSessionDoc
			if t, _ := op.Doc["type"].(string); t == assemble.CommitType {
				r = RoleCommit
			}
			ex.role[ids[i]] = r
			if err := ex.lookFirst(ids[i]); err != nil {
				return versionlog.Tx{}, false, err
			}
		}
	}
	kept := store.LoggedTx{Tx: lt.Tx}
	for i, op := range lt.Ops {
		if _, ok := ex.role[ids[i]]; ok {
			op.ID = ids[i]
			kept.Ops = append(kept.Ops, op)
		}
	}
	if len(kept.Ops) == 0 {
		return versionlog.Tx{}, false, nil
	}
	tx, err := versionlog.FromLogged(kept)
	if err != nil {
		return tx, false, err
	}
	for i := range tx.Ops {
		op := &tx.Ops[i]
		ex.written[op.ID] = true
		// A match that expected a document of an entity evicted since
		// cannot carry it (evicted content is never written): no point at
		// or before the match is left exactly when it was evicted.
		if op.Kind == store.OpMatch && op.Doc != nil {
			if f, ok := ex.first[op.ID]; !ok || f > tx.ID {
				op.Doc, op.DocHash, op.Evicted = nil, "", true
			}
		}
		if op.Evicted {
			ex.sum.Evicted++
		}
	}
	return tx, true, nil
}

// writeBundle writes the manifest (the entities with an op in the log)
// and copies the staged log after it.
func (ex *exporter) writeBundle(w io.Writer, log io.Reader) error {
	ents := make([]Entity, 0, len(ex.written))
	for id := range ex.written {
		ents = append(ents, Entity{ID: id, Role: ex.role[id]})
		if ex.role[id] == RoleCommit {
			ex.sum.Commits++
		}
	}
	slices.SortFunc(ents, func(a, b Entity) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	ex.sum.Entities = int64(len(ents))
	h := Header{Session: ex.session, Source: ex.sum.Source, Upto: ex.sum.Upto, Chat: ex.info.ChatID,
		SystemPrompt: ex.info.SystemPromptID, Commits: ex.sum.Commits, Entities: ex.sum.Entities}
	for id, want := range map[string]Role{objects.SessionObjectID(ex.session): RoleSession, h.Chat: RoleChat, h.SystemPrompt: RoleSystemPrompt} {
		if !ex.written[id] {
			return fmt.Errorf("session %s: the tx log holds no op on its %s %s", ex.session, want, id)
		}
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	sum := sha256.New()
	var b []byte
	put := func(line []byte) error {
		sum.Write(line)
		ex.sum.Lines++
		ex.sum.Bytes += int64(len(line))
		_, err := bw.Write(line)
		return err
	}
	if err := put(appendHeader(b[:0], h)); err != nil {
		return err
	}
	for _, e := range ents {
		if err := put(appendEntity(b[:0], e)); err != nil {
			return err
		}
	}
	end := appendManifestEnd(nil, manifestEnd{Lines: ex.sum.Lines, Entities: int64(len(ents)), SHA256: hex.EncodeToString(sum.Sum(nil))})
	if err := put(end); err != nil {
		return err
	}
	n, err := io.Copy(bw, log)
	if err != nil {
		return fmt.Errorf("copying the staged log: %w", err)
	}
	ex.sum.Bytes += n
	ex.sum.Lines += ex.sum.Log.Lines + 1
	return bw.Flush()
}
