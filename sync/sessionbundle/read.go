package sessionbundle

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// maxManifestLine bounds a manifest line (ids are at most a few hundred
// bytes; the header holds a store location).
const maxManifestLine = 64 << 10

// Info is what a bundle says about itself, once read and checked whole.
type Info struct {
	Header Header `json:"header"`
	// Entities lists the entities, by id.
	Entities []Entity `json:"-"`
	// Log is the version log's header, Trailer its end line.
	Log     versionlog.Header  `json:"-"`
	Trailer versionlog.Trailer `json:"log"`
	// ManifestLines is the number of lines before the version log (the
	// manifest end line included); Lines counts every line.
	ManifestLines int64 `json:"manifest_lines"`
	Lines         int64 `json:"lines"`
}

// manifest is a bundle's first part, read.
type manifest struct {
	h     Header
	ents  []Entity
	role  map[string]Role
	lines int64 // lines of the manifest, its end line included
}

// opener returns the bundle's lines, gunzipped when the bytes start with
// gzip's magic number.
func lines(r io.Reader) (*bufio.Reader, func() error, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	magic, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, &versionlog.LineError{Line: 1, TxID: -1, Err: fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)}
		}
		return bufio.NewReaderSize(zr, 256<<10), zr.Close, nil
	}
	return br, func() error { return nil }, nil
}

// truncated maps a read error of a compressed stream cut short to
// ErrTruncated.
func readErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the manifest is cut short", ErrTruncated)
	}
	return fmt.Errorf("%w: %v", ErrCorrupt, err)
}

// readManifest reads the manifest from br, leaving br at the version
// log's first line.
func readManifest(br *bufio.Reader) (*manifest, error) {
	m := &manifest{role: map[string]Role{}}
	sum := sha256.New()
	var line int64
	next := func() ([]byte, error) {
		line++
		b, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull) || len(b) > maxManifestLine:
			return nil, &versionlog.LineError{Line: line, TxID: -1, Err: fmt.Errorf("%w: a manifest line longer than %d bytes", ErrCorrupt, maxManifestLine)}
		case err != nil && len(b) == 0 && errors.Is(err, io.EOF) && line == 1:
			return nil, &versionlog.LineError{Line: line, TxID: -1, Err: fmt.Errorf("%w: the bundle is empty", ErrTruncated)}
		case err != nil:
			return nil, &versionlog.LineError{Line: line, TxID: -1, Err: readErr(err)}
		}
		if err := loneSurrogate(b); err != nil {
			return nil, &versionlog.LineError{Line: line, TxID: -1, Err: err}
		}
		return b, nil
	}
	fail := func(err error) error { return &versionlog.LineError{Line: line, TxID: -1, Err: err} }
	b, err := next()
	if err != nil {
		return nil, err
	}
	if m.h, err = parseHeader(b[:len(b)-1]); err != nil {
		return nil, fail(err)
	}
	sum.Write(b)
	var prev string
	for {
		b, err := next()
		if err != nil {
			return nil, err
		}
		body := b[:len(b)-1]
		switch lineType(body) {
		case "entity":
			e, err := parseEntity(body)
			if err != nil {
				return nil, fail(err)
			}
			if len(m.ents) > 0 && e.ID <= prev {
				return nil, fail(fmt.Errorf("%w: entity %q: entities must be listed once each, in increasing id order (after %q)", ErrCorrupt, e.ID, prev))
			}
			prev = e.ID
			m.ents = append(m.ents, e)
			m.role[e.ID] = e.Role
			sum.Write(b)
		case "manifest_end":
			end, err := parseManifestEnd(body)
			if err != nil {
				return nil, fail(err)
			}
			if end.Lines != line-1 || end.Entities != int64(len(m.ents)) || end.SHA256 != hex.EncodeToString(sum.Sum(nil)) {
				return nil, fail(fmt.Errorf("%w: the manifest end line says %d lines and %d entities with sha256 %s; the manifest has %d lines and %d entities with sha256 %s",
					ErrChecksum, end.Lines, end.Entities, end.SHA256, line-1, len(m.ents), hex.EncodeToString(sum.Sum(nil))))
			}
			m.lines = line
			return m, m.check(line)
		default:
			return nil, fail(fmt.Errorf("%w: expected an entity line or the manifest end, got %.40q", ErrCorrupt, body))
		}
	}
}

// check checks the manifest against its header.
func (m *manifest) check(line int64) error {
	h := m.h
	fail := func(format string, args ...any) error {
		return &versionlog.LineError{Line: line, TxID: -1, Err: fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)}
	}
	if int64(len(m.ents)) != h.Entities {
		return fail("the header announces %d entities, the manifest lists %d", h.Entities, len(m.ents))
	}
	var commits int64
	for _, e := range m.ents {
		if e.Role == RoleCommit {
			commits++
		}
	}
	if commits != h.Commits {
		return fail("the header announces %d context commits, the manifest lists %d", h.Commits, commits)
	}
	for id, want := range map[string]Role{objects.SessionObjectID(h.Session): RoleSession, h.Chat: RoleChat, h.SystemPrompt: RoleSystemPrompt} {
		if got, ok := m.role[id]; !ok || got != want {
			return fail("the manifest does not list %s as the session's %s", id, want)
		}
	}
	return nil
}

// scan reads a whole bundle from r and checks it: the manifest, the
// version log (structure, document hashes, counts, checksum), that the
// log's header matches the manifest's, that every op is on a listed
// entity and that the log writes the session object. each, if not nil, is
// called for every transaction, and may refuse it. Errors are
// *versionlog.LineError naming the bundle's line.
func scan(r io.Reader, progress versionlog.ProgressFunc, each func(m *manifest, tx versionlog.Tx) error) (*Info, *manifest, error) {
	br, closeZ, err := lines(r)
	if err != nil {
		return nil, nil, err
	}
	defer closeZ()
	m, err := readManifest(br)
	if err != nil {
		return nil, nil, err
	}
	off := m.lines
	rd, err := versionlog.NewReader(br)
	if err != nil {
		return nil, m, shift(err, off)
	}
	lh := rd.Header()
	logLine := &versionlog.LineError{Line: off + 1, TxID: -1}
	switch {
	case lh.Source != m.h.Source:
		logLine.Err = fmt.Errorf("%w: the version log's source %+v is not the manifest's %+v", ErrCorrupt, lh.Source, m.h.Source)
	case lh.After != -1:
		logLine.Err = fmt.Errorf("%w: the version log starts after tx %d; a bundle's starts at the beginning (-1)", ErrCorrupt, lh.After)
	case lh.Upto != m.h.Upto:
		logLine.Err = fmt.Errorf("%w: the version log goes up to tx %d, the manifest says %d", ErrCorrupt, lh.Upto, m.h.Upto)
	}
	if logLine.Err != nil {
		return nil, m, logLine
	}
	head := objects.SessionObjectID(m.h.Session)
	sawHead := false
	for {
		tx, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, m, shift(err, off)
		}
		for i, op := range tx.Ops {
			if _, ok := m.role[op.ID]; !ok {
				return nil, m, &versionlog.LineError{Line: tx.Line + off, TxID: tx.ID,
					Err: fmt.Errorf("%w: op %d (%s) is on %q, which the manifest does not list", ErrCorrupt, i+1, op.Kind, op.ID)}
			}
			if op.ID == head && op.Kind == store.OpPut && !op.Evicted {
				sawHead = true
			}
			if err := verifyObject(i, op); err != nil {
				return nil, m, &versionlog.LineError{Line: tx.Line + off, TxID: tx.ID, Err: err}
			}
		}
		if each != nil {
			if err := each(m, tx); err != nil {
				return nil, m, &versionlog.LineError{Line: tx.Line + off, TxID: tx.ID, Err: err}
			}
		}
		if progress != nil {
			progress("verify", tx.ID+1, m.h.Upto+1)
		}
	}
	t, _ := rd.Trailer()
	info := &Info{Header: m.h, Entities: m.ents, Log: lh, Trailer: t, ManifestLines: off, Lines: off + t.Lines + 1}
	if !sawHead {
		return info, m, &versionlog.LineError{Line: info.Lines, TxID: -1,
			Err: fmt.Errorf("%w: the version log never writes the session object %s", ErrCorrupt, head)}
	}
	return info, m, nil
}

// shift adds off to the line of a *versionlog.LineError in err (the
// version log's lines are numbered from its own header).
func shift(err error, off int64) error {
	var le *versionlog.LineError
	if errors.As(err, &le) {
		le.Line += off
	}
	return err
}

// Verify reads a whole bundle (plain or gzip) and checks it, as import
// does before writing anything: the manifest's structure and checksum,
// the version log's (documents, counts, checksum), and that they agree.
// Errors are *versionlog.LineError naming the bundle's line.
func Verify(r io.Reader) (*Info, error) {
	info, _, err := scan(r, nil, nil)
	return info, err
}
