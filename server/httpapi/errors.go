package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/internal/jsonlimit"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/sessionbundle"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// Error codes: the "code" of every error body. They are part of the API
// (docs/openapi.yaml lists them); new ones may be added, none renamed.
const (
	CodeBadRequest   = "bad_request"  // malformed JSON, a missing or invalid field (400)
	CodeUnauthorized = "unauthorized" // no or an unknown bearer token (401)
	CodeForbidden    = "forbidden"    // the token does not cover the session, or only sessions; another session's object (403)
	CodeNotFound     = "not_found"    // no such object, session or route (404)
	CodeNotAllowed   = "method_not_allowed"
	CodeNotOpen      = "session_not_open" // the session is not open in this server: open it first (409)
	CodeConflict     = "conflict"         // a concurrent writer changed the session, or it exists (409)
	CodeLocked       = "locked"           // the chat and system prompt cannot be deactivated (409)
	CodeTooLarge     = "too_large"        // the request body is over the limit (413)
	CodeUnavailable  = "unavailable"      // the store does not answer, or the server is shutting down (503)
	CodeInternal     = "internal"         // a bug (500)
)

// apiError is an error with its HTTP status and code.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, CodeBadRequest, format, args...)
}

// statusTable maps the sentinel errors of the layers below onto a status
// and code, in one place, so client errors are never answered 500. The
// first entry whose sentinel the error wraps wins; the store's kinds come
// after it, and anything else is a bug (500).
var statusTable = []struct {
	err    error
	status int
	code   string
}{
	{session.ErrLocked, http.StatusConflict, CodeLocked},
	{tools.ErrForeignObject, http.StatusForbidden, CodeForbidden},
	{session.ErrForeignID, http.StatusForbidden, CodeForbidden},
	{tools.ErrOutsideRoots, http.StatusForbidden, CodeForbidden},
	{sessionbundle.ErrForeign, http.StatusForbidden, CodeForbidden},
	{tools.ErrUnknownObject, http.StatusNotFound, CodeNotFound},
	{session.ErrNotInPool, http.StatusNotFound, CodeNotFound},
	{sessionbundle.ErrSessionExists, http.StatusConflict, CodeConflict},
	{versionlog.ErrNotContinuing, http.StatusConflict, CodeConflict},
	{versionlog.ErrDiverged, http.StatusConflict, CodeConflict},
	{versionlog.ErrTruncated, http.StatusBadRequest, CodeBadRequest},
	{versionlog.ErrCorrupt, http.StatusBadRequest, CodeBadRequest},
	{versionlog.ErrChecksum, http.StatusBadRequest, CodeBadRequest},
	{versionlog.ErrVersion, http.StatusBadRequest, CodeBadRequest},
	{jsonlimit.ErrTooDeep, http.StatusBadRequest, CodeBadRequest},
	{objects.ErrInvalid, http.StatusBadRequest, CodeBadRequest},
	{objects.ErrHashMismatch, http.StatusBadRequest, CodeBadRequest},
	{objects.ErrIDMismatch, http.StatusBadRequest, CodeBadRequest},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, CodeUnavailable},
}

// classify maps an error from the layers below onto a status and code:
// an *apiError as it is, a body over the limit 413, then statusTable, then
// the store's sentinel kinds.
func classify(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "request body over %d bytes", mbe.Limit)
	}
	for _, e := range statusTable {
		if errors.Is(err, e.err) {
			return errorf(e.status, e.code, "%v", err)
		}
	}
	switch store.KindOf(err) {
	case store.ErrNotFound:
		return errorf(http.StatusNotFound, CodeNotFound, "%v", err)
	case store.ErrConflict:
		return errorf(http.StatusConflict, CodeConflict, "%v", err)
	case store.ErrInvalid:
		return errorf(http.StatusBadRequest, CodeBadRequest, "%v", err)
	case store.ErrUnavailable:
		return errorf(http.StatusServiceUnavailable, CodeUnavailable, "%v", err)
	}
	return errorf(http.StatusInternalServerError, CodeInternal, "%v", err)
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, err error) {
	ae := classify(err)
	writeJSON(w, ae.status, ErrorBody{Code: ae.code, Message: ae.msg})
}

// writeJSON writes v as the JSON body (one line; <, > and & are not
// escaped, so content reads as it is).
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		_ = enc.Encode(ErrorBody{Code: CodeInternal, Message: "encoding the response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
