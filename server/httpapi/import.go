package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxstore/ctxstore/harness/importer"
)

// importTypes are what POST /v1/import reads: JSON naming a path, or one
// uploaded session file.
var importTypes = []string{"application/json", "application/x-ndjson", "application/octet-stream", "application/gzip"}

// ImportBody is POST /v1/import with a JSON body: a path under the
// server's roots. Principal is ignored: the commits are recorded as by
// the request's token (Options.Principal without tokens).
type ImportBody struct {
	Path      string `json:"path"`
	As        string `json:"as,omitempty"`
	Principal string `json:"principal,omitempty"`
	Machine   string `json:"machine,omitempty"`
}

// importSessions imports agent sessions (docs/import.md): a path under the
// server's roots (incremental, as the CLI), or an uploaded file.
func (s *Server) importSessions(q *request) (any, error) {
	ct := q.r.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") {
		var b ImportBody
		if err := q.decode(&b); err != nil {
			return nil, err
		}
		as, err := importAs(b.As)
		if err != nil {
			return nil, err
		}
		if b.Path == "" || !filepath.IsAbs(b.Path) {
			return nil, badRequest("path: an absolute path is required, got %q", b.Path)
		}
		if err := s.roots.Check(b.Path); err != nil {
			return nil, err
		}
		if _, err := os.Stat(b.Path); err != nil {
			return nil, errorf(http.StatusNotFound, CodeNotFound, "path %s: %v", b.Path, err)
		}
		// Every file the importer opens (each of a folder, a sub-agent's
		// parent) is checked again, symlinks resolved: a link in the
		// folder never leads out of the roots.
		// The commits are by the request's token (its name), whatever
		// principal the body names.
		im := importer.New(s.st, importer.Options{As: as, Principal: q.principal, Machine: b.Machine, Allow: s.roots.Check})
		res, err := im.Import(q.ctx, b.Path)
		if res != nil {
			for i := range res.Files {
				if res.Files[i].Commits == nil {
					res.Files[i].Commits = []string{} // a failed file: none (the API's commits is an array)
				}
			}
		}
		return res, err
	}
	as, err := importAs(q.r.URL.Query().Get("as"))
	if err != nil {
		return nil, err
	}
	name := filepath.Base(q.r.URL.Query().Get("name"))
	if name == "." || name == "/" || name == "" {
		name = "upload.jsonl"
	}
	dir, err := os.MkdirTemp("", "ctxstore-upload-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		return nil, err
	}
	lines := &lineCounter{w: f}
	err = spool(lines, q.r.Body, s.o.MaxImport, q.lease)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if lines.n > int64(s.o.MaxImportLines) {
		// Importing costs about a millisecond of CPU per record: a small
		// gzip upload of many short records would hold the server for
		// minutes. Refused before anything is written.
		return nil, tooLarge("the upload holds %d lines, over the limit of %d per request (Options.MaxImportLines): split it, or import it by path from under the server's roots (ctxstore import), which continues where it stopped", lines.n, s.o.MaxImportLines)
	}
	im := importer.New(s.st, importer.Options{As: as, Principal: q.principal})
	res, err := im.Import(q.ctx, p)
	// The answer names the upload by its name, never by the server's
	// temporary path.
	hide := strings.NewReplacer(p, name, dir+string(filepath.Separator), "", dir, "upload").Replace
	if err != nil {
		return nil, &hidden{err: err, msg: hide(err.Error())}
	}
	for i := range res.Files {
		f := &res.Files[i]
		f.Path, f.Error = hide(f.Path), hide(f.Error)
		for j := range f.Problems {
			f.Problems[j].Path, f.Problems[j].Msg = hide(f.Problems[j].Path), hide(f.Problems[j].Msg)
		}
		if f.Commits == nil {
			f.Commits = []string{}
		}
	}
	return res, nil
}

// hidden is err with another message (one that leaves out the server's
// paths); it still classifies as err.
type hidden struct {
	err error
	msg string
}

func (h *hidden) Error() string { return h.msg }
func (h *hidden) Unwrap() error { return h.err }

func importAs(as string) (importer.Harness, error) {
	switch as {
	case "", "claude-code", "pi", "codex", "swe-agent":
		return importer.Harness(as), nil
	}
	return "", badRequest("as: %q is not claude-code, pi, codex or swe-agent", as)
}

// lineCounter counts the newlines written through it.
type lineCounter struct {
	w io.Writer
	n int64
}

func (c *lineCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(bytes.Count(p[:n], []byte{'\n'}))
	return n, err
}
