package httpapi

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/ctxstore/ctxstore/sync/sessionbundle"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// Session bundles (package sessionbundle, docs/service.md): GET
// /v1/sessions/{sid}/export answers the bundle itself; POST
// /v1/sessions/{sid}/import takes one as the body.

// exportSession writes the bundle to a temporary file first, so that a
// failure is a JSON error and not a cut stream, then sends it whole with
// its length; the summary is in the Ctxstore-Export header.
func (s *Server) exportSession(w http.ResponseWriter, q *request) error {
	// Serialize with the session's requests if it is open here, so the
	// bundle holds whole calls.
	if l, err := s.lock(q.sid); err == nil {
		defer l.mu.Unlock()
	}
	f, err := os.CreateTemp("", "ctxstore-export-*.jsonl")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	sum, err := sessionbundle.Export(q.ctx, s.st, q.sid, f, sessionbundle.ExportOptions{})
	if err != nil {
		return err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	meta, _ := json.Marshal(sum)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.Header().Set("Ctxstore-Export", string(meta))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f)
	return nil
}

// ImportResponse is the answer of POST /v1/sessions/{sid}/import.
type ImportResponse = sessionbundle.ImportSummary

func (s *Server) importSession(q *request) (any, error) {
	s.mu.Lock()
	l := s.sessions[q.sid]
	s.mu.Unlock()
	if l != nil && l.isOpen() {
		return nil, errorf(http.StatusConflict, CodeConflict, "session %s is open in this server: close it before importing", q.sid)
	}
	f, err := os.CreateTemp("", "ctxstore-import-*.jsonl")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := spool(f, q.r.Body, s.o.MaxImport, q.lease); err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	info, err := sessionbundle.Verify(f)
	if err != nil {
		return nil, bundleError(err)
	}
	if info.Header.Session != q.sid {
		return nil, badRequest("the bundle holds session %s, not %s", info.Header.Session, q.sid)
	}
	sum, err := sessionbundle.ImportFile(q.ctx, s.st, f.Name(), sessionbundle.ImportOptions{})
	if err != nil {
		return nil, bundleError(err)
	}
	return sum, nil
}

// spool copies a bundle body to f, decompressing a gzip body on the way
// and refusing (413) one that decompresses to more than max bytes: a
// small compressed body must not expand without bound. The decompressed
// bytes count into the request's body budget (l) as the body's own do.
func spool(f io.Writer, body io.Reader, max int64, l *lease) error {
	br := bufio.NewReader(body)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return badRequest("bundle: gzip: %v", err)
		}
		defer zr.Close()
		r = &counted{r: zr, l: l}
	}
	n, err := io.Copy(f, io.LimitReader(r, max+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("bundle: %v", err)
	}
	if n > max {
		return tooLarge("the bundle decompresses to more than %d bytes, the server's limit", max)
	}
	return nil
}

// bundleError maps a bundle's faults: damaged or not continuing what the
// store has is the request's fault (400), a session the store already
// holds from elsewhere a conflict (409), a bundle reaching outside its
// session (another session's objects) is forbidden (403).
func bundleError(err error) error {
	var le *versionlog.LineError
	switch {
	case errors.Is(err, sessionbundle.ErrForeign):
		return errorf(http.StatusForbidden, CodeForbidden, "%v", err)
	case errors.Is(err, sessionbundle.ErrSessionExists), errors.Is(err, versionlog.ErrNotContinuing):
		return errorf(http.StatusConflict, CodeConflict, "%v", err)
	case errors.As(err, &le):
		return badRequest("bundle: %v", err)
	}
	return err
}
