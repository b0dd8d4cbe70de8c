package sessionbundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// RecordPrefix starts the id of the record a target keeps of each bundle
// source it imported: RecordPrefix + the bundle's source id. Like the
// version log's cursors it is reserved (versionlog.ReservedPrefix), so a
// version log export of the target leaves it out.
const RecordPrefix = versionlog.ReservedPrefix + "session:"

// recordType is the "type" of import records.
const recordType = "ctxstore.session-import"

// ImportOptions configure ImportFile.
type ImportOptions struct {
	// Progress, if set, is told how far the phases "verify", "import"
	// (source tx ids) and "rebuild" (calls) have come.
	Progress versionlog.ProgressFunc
	// Rebuild, after the import, rebuilds the context of every call of the
	// session from the target (assemble.Rebuild, which checks each against
	// the length and SHA-256 its commit recorded) and opens the session.
	// It costs reads quadratic in the number of calls.
	Rebuild bool
}

// ImportSummary describes a finished (or interrupted) import.
type ImportSummary struct {
	Session  string            `json:"session"`
	Source   versionlog.Source `json:"source"`
	Entities int64             `json:"entities"`
	Commits  int64             `json:"commits"`
	// Applied and Skipped count source transactions: applied now, or
	// skipped because the target already had them (an earlier import of
	// this bundle, or of an older one of the same session and source).
	Applied     int64 `json:"applied"`
	Skipped     int64 `json:"skipped"`
	Ops         int64 `json:"ops"`
	Evicted     int64 `json:"evicted_ops"`
	KeptTxTimes int64 `json:"kept_tx_times"`
	// FirstTx and LastTx are the first and last source tx applied,
	// TargetFirstTx and TargetLastTx the target txs that applied them.
	FirstTx       *int64 `json:"first_tx"`
	LastTx        *int64 `json:"last_tx"`
	TargetFirstTx *int64 `json:"target_first_tx"`
	TargetLastTx  *int64 `json:"target_last_tx"`
	// Cursor is the target's cursor for the bundle's source afterwards.
	Cursor *versionlog.Cursor `json:"cursor"`
	// Complete is true once the target holds every transaction of the
	// bundle.
	Complete bool `json:"complete"`
	// Rebuilt counts the calls rebuilt and checked (ImportOptions.Rebuild).
	Rebuilt int64 `json:"rebuilt"`
	// Log is the bundle's version log end line.
	Log versionlog.Trailer `json:"log"`
}

// ImportFile imports the bundle at path (plain or gzip) into target.
//
// It first reads the whole bundle and checks it (see Verify), and checks it
// against the target, so that a damaged bundle or one the target cannot
// take changes nothing. A target that holds the session already, not from
// a bundle of the same source, refuses it (ErrSessionExists). Then it
// records the bundle's entities in the target (RecordPrefix), and applies
// the version log with versionlog.Import under the bundle's own cursor:
// each source transaction is one target transaction, so an interrupted
// import leaves a consistent target and running it again finishes it, and
// a second import of the same bundle changes nothing. Targets that can
// (SQLite) keep the source tx times.
//
// A later bundle of the same session and source continues an earlier
// import when the transactions the target already has from it touch only
// entities that the earlier bundles carried; otherwise (the session came to
// use an object whose older history the target never got) it is refused
// with versionlog.ErrNotContinuing, naming the line and the entity.
//
// Errors about the bundle's content are *versionlog.LineError naming the
// bundle's line (wrapped with the path).
func ImportFile(ctx context.Context, target store.Store, path string, o ImportOptions) (ImportSummary, error) {
	sum, err := importFile(ctx, target, path, o)
	if err != nil {
		return sum, fmt.Errorf("%s: %w", path, err)
	}
	return sum, nil
}

func importFile(ctx context.Context, target store.Store, path string, o ImportOptions) (ImportSummary, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // ImportFile names the path
		}
		return ImportSummary{}, err
	}
	defer f.Close()
	// The manifest first, to learn the session and the source.
	br, closeZ, err := lines(f)
	if err != nil {
		return ImportSummary{}, err
	}
	m, err := readManifest(br)
	closeZ()
	if err != nil {
		return ImportSummary{}, err
	}
	h := m.h
	sum := ImportSummary{Session: h.Session, Source: h.Source, Entities: h.Entities, Commits: h.Commits}
	if err := checkOwnManifest(m); err != nil {
		return sum, err
	}

	cur, err := versionlog.ReadCursor(ctx, target, h.Source.ID)
	if err != nil {
		return sum, err
	}
	recID := RecordPrefix + h.Source.ID
	recDoc, err := readRecord(ctx, target, recID)
	if err != nil {
		return sum, err
	}
	had := map[string]bool{}
	if recSession, _ := recDoc["session"].(string); recDoc != nil && recSession != h.Session {
		return sum, &versionlog.LineError{Line: 1, TxID: -1, Err: fmt.Errorf("%w: the target's record of source %s is session %s's", ErrForeign, h.Source.ID, recSession)}
	}
	if recDoc != nil {
		for _, id := range stringList(recDoc["entities"]) {
			had[id] = true
		}
	}
	status, err := target.Status(ctx)
	if err != nil {
		return sum, err
	}
	if store.SameStore(h.Source.Backend, h.Source.Location, status) {
		return sum, &versionlog.LineError{Line: 1, TxID: -1, Err: fmt.Errorf("%w: the bundle was exported from the target itself (%s)", versionlog.ErrNotContinuing, h.Source.ID)}
	}
	if cur == nil {
		head := objects.SessionObjectID(h.Session)
		rows, err := target.History(ctx, head, store.HistoryOptions{Order: store.Asc, WithCorrections: true, Basis: store.Basis{ValidTime: store.FarFuture}})
		if err != nil {
			return sum, fmt.Errorf("reading %s in the target: %w", head, err)
		}
		if len(rows) > 0 {
			return sum, &versionlog.LineError{Line: 1, TxID: -1, Err: fmt.Errorf("%w: the target holds session %s (first written by target tx %d), and not from an import of %s; import into a store without it",
				ErrSessionExists, h.Session, rows[0].TxID, h.Source.ID)}
		}
	}

	// The whole bundle, checked, and checked against what the target has.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return sum, err
	}
	var firstApplied *time.Time // source time of the first tx to apply
	info, _, err := scan(f, o.Progress, func(m *manifest, tx versionlog.Tx) error {
		for i, op := range tx.Ops {
			if err := ownDoc(h.Session, i, op); err != nil {
				return err
			}
		}
		if cur == nil || tx.ID > cur.TxID {
			if firstApplied == nil {
				t := tx.Time
				firstApplied = &t
			}
			return nil
		}
		for i, op := range tx.Ops {
			if !had[op.ID] {
				return fmt.Errorf("%w: op %d is on %s, which this bundle carries but the earlier imports from %s did not, and the target's cursor is past this transaction (at source tx %d): its history would be lost; import this bundle into a store without session %s",
					versionlog.ErrNotContinuing, i+1, op.ID, h.Source.ID, cur.TxID, h.Session)
			}
		}
		return nil
	})
	if err != nil {
		return sum, err
	}
	sum.Log = info.Trailer
	if err := checkOwnTarget(ctx, target, m, had, recID); err != nil {
		return sum, err
	}

	// Record the bundle's entities before applying anything, so that the
	// check above can be made by a later import even if this one stops
	// part way.
	if err := writeRecord(ctx, target, recID, recDoc, m, info, firstApplied); err != nil {
		return sum, err
	}

	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return sum, err
	}
	br, closeZ, err = lines(f)
	if err != nil {
		return sum, err
	}
	defer closeZ()
	if _, err := readManifest(br); err != nil {
		return sum, err
	}
	vs, err := versionlog.Import(ctx, target, br, versionlog.ImportOptions{Progress: o.Progress})
	sum.Applied, sum.Skipped, sum.Ops, sum.Evicted, sum.KeptTxTimes = vs.Applied, vs.Skipped, vs.Ops, vs.Evicted, vs.KeptTxTimes
	sum.FirstTx, sum.LastTx, sum.TargetFirstTx, sum.TargetLastTx, sum.Cursor = vs.FirstTx, vs.LastTx, vs.TargetFirstTx, vs.TargetLastTx, vs.Cursor
	sum.Complete = info.Trailer.LastTx == nil || (vs.Cursor != nil && vs.Cursor.TxID >= *info.Trailer.LastTx)
	if err != nil {
		return sum, shift(err, m.lines)
	}
	if o.Rebuild {
		if err := rebuild(ctx, target, h, o.Progress, &sum); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// rebuild opens the imported session and rebuilds every call.
func rebuild(ctx context.Context, target store.Store, h Header, progress versionlog.ProgressFunc, sum *ImportSummary) error {
	if _, err := session.Open(ctx, target, h.Session); err != nil {
		return fmt.Errorf("opening the imported session: %w", err)
	}
	for n := 1; int64(n) <= h.Commits; n++ {
		if _, err := assemble.Rebuild(ctx, target, h.Session, n); err != nil {
			return fmt.Errorf("rebuilding call %d of the imported session: %w", n, err)
		}
		sum.Rebuilt++
		if progress != nil {
			progress("rebuild", int64(n), h.Commits)
		}
	}
	return nil
}

// readRecord reads the target's record of a bundle source, nil if none.
func readRecord(ctx context.Context, target store.Store, id string) (store.Doc, error) {
	doc, err := target.Entity(ctx, id, store.Basis{ValidTime: versionlog.CursorValidTime})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", id, err)
	}
	return doc, nil
}

// writeRecord writes the record of the bundle's source: the union of the
// entities every import of it carried, and this bundle's extent; nothing
// if that is what the target holds already. It is guarded by a match on
// the record read, as the version log's cursor is. A target that can take
// a tx time (SQLite) gets the record with the source time of the first
// transaction to apply, at, so that the import can keep the source's tx
// times after it.
func writeRecord(ctx context.Context, target store.Store, id string, prev store.Doc, m *manifest, info *Info, at *time.Time) error {
	set := map[string]bool{}
	if prev != nil {
		for _, e := range stringList(prev["entities"]) {
			set[e] = true
		}
	}
	for _, e := range m.ents {
		set[e.ID] = true
	}
	ids := make([]any, 0, len(set))
	for _, e := range slices.Sorted(maps.Keys(set)) {
		ids = append(ids, e)
	}
	doc := store.Doc{
		store.IDKey: id, "type": recordType, "session": m.h.Session, "source": m.h.Source.ID,
		"upto": m.h.Upto, "entity_count": int64(len(ids)), "entities": ids, "commits": m.h.Commits,
	}
	if info.Trailer.LastTx != nil {
		doc["last_tx"] = *info.Trailer.LastTx
	}
	if prev != nil && store.SameDoc(prev, doc) {
		return nil
	}
	from := versionlog.CursorValidTime
	ops := []store.Op{
		{Kind: store.OpMatch, ID: id, Doc: prev, ValidFrom: &from},
		store.PutAt(doc, versionlog.CursorValidTime),
	}
	var err error
	ctx = store.WithReservedWrites(ctx) // the record's id is reserved
	if at != nil {
		// A later transaction in the way: the target's clock.
		_, _, err = store.SubmitAtWait(ctx, target, ops, *at, true)
	} else {
		_, err = store.SubmitWait(ctx, target, ops)
	}
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("%w: another import of %s changed %s; run the import again", versionlog.ErrDiverged, m.h.Source.ID, id)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", id, err)
	}
	return nil
}

func stringList(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Imported describes one bundle source a store imported.
type Imported struct {
	Session  string `json:"session"`
	Source   string `json:"source"`
	Upto     int64  `json:"upto"`
	Entities int64  `json:"entities"`
	Commits  int64  `json:"commits"`
	// LastTx is the last source transaction of the latest bundle imported;
	// Cursor the last one applied; Complete whether that bundle is in.
	LastTx   *int64             `json:"last_tx"`
	Cursor   *versionlog.Cursor `json:"cursor"`
	Complete bool               `json:"complete"`
}

// ListImported lists the bundle sources st imported, by session then
// source.
func ListImported(ctx context.Context, st store.Store) ([]Imported, error) {
	docs, err := st.Query(ctx, store.Query{
		Where:   []store.Pred{store.Where("type", recordType)},
		Find:    []string{"session", "source", "upto", "entity_count", "commits", "last_tx"},
		OrderBy: []store.Order{{Field: "session"}, {Field: "source"}},
		Basis:   store.Basis{ValidTime: versionlog.CursorValidTime},
	})
	if err != nil {
		return nil, fmt.Errorf("listing imported sessions: %w", err)
	}
	out := make([]Imported, 0, len(docs))
	for _, d := range docs {
		im := Imported{}
		im.Session, _ = d["session"].(string)
		im.Source, _ = d["source"].(string)
		if n, ok := store.Num(d["upto"]); ok {
			im.Upto = int64(n)
		}
		if n, ok := store.Num(d["entity_count"]); ok {
			im.Entities = int64(n)
		}
		if n, ok := store.Num(d["commits"]); ok {
			im.Commits = int64(n)
		}
		if n, ok := store.Num(d["last_tx"]); ok {
			t := int64(n)
			im.LastTx = &t
		}
		if im.Cursor, err = versionlog.ReadCursor(ctx, st, im.Source); err != nil {
			return nil, err
		}
		im.Complete = im.LastTx == nil || (im.Cursor != nil && im.Cursor.TxID >= *im.LastTx)
		out = append(out, im)
	}
	return out, nil
}
