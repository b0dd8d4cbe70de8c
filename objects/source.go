package objects

import (
	"path"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SourceType names a kind of external source, stored as the "type" field of
// a source binding.
type SourceType string

// SourceFilesystem is the only source type implemented: a path on a
// filesystem namespace.
const SourceFilesystem SourceType = "filesystem"

// Source is a source binding: the tagged union stored under a sourced
// object's "source" key. It is part of the immutable envelope and of the
// object's identity. The union is closed: FilesystemSource is the only
// implementation; new source types are added to this package.
type Source interface {
	// SourceType returns the union tag.
	SourceType() SourceType
	// Doc returns the binding as a JSON object, tag included.
	Doc() map[string]any
	// Validate checks the required fields, naming the bad one.
	Validate() error
	isSource()
}

// FilesystemSource binds an object to a path on one filesystem namespace.
// Its document form is
// {"type":"filesystem","filesystemId":…,"path":…}.
type FilesystemSource struct {
	// FilesystemID identifies the filesystem namespace.
	// Required, non-empty, no control characters.
	FilesystemID string
	// Path is absolute, slash-separated and clean (path.Clean(Path) ==
	// Path), so that one file has one identity. Clients convert OS paths
	// (filepath.ToSlash, filepath.Clean) before binding.
	Path string
}

// SourceType returns SourceFilesystem.
func (FilesystemSource) SourceType() SourceType { return SourceFilesystem }

// Doc returns {"type":"filesystem","filesystemId":…,"path":…}.
func (s FilesystemSource) Doc() map[string]any {
	return map[string]any{
		"type":         string(SourceFilesystem),
		"filesystemId": s.FilesystemID,
		"path":         s.Path,
	}
}

// Validate checks FilesystemID and Path; errors name "source.filesystemId"
// or "source.path".
func (s FilesystemSource) Validate() error {
	if err := checkText("source.filesystemId", s.FilesystemID); err != nil {
		return err
	}
	p := s.Path
	if err := checkText("source.path", p); err != nil {
		return err
	}
	if !strings.HasPrefix(p, "/") {
		return fieldErr("source.path", nil, "path %q is not absolute", p)
	}
	if path.Clean(p) != p {
		return fieldErr("source.path", nil, "path %q is not clean (want %q)", p, path.Clean(p))
	}
	return nil
}

func (FilesystemSource) isSource() {}

// checkText requires a non-empty valid UTF-8 string without control
// characters.
func checkText(field, s string) error {
	if s == "" {
		return fieldErr(field, nil, "required, must be a non-empty string")
	}
	if !utf8.ValidString(s) {
		return fieldErr(field, ErrInvalidUTF8, "string is not valid UTF-8")
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return fieldErr(field, nil, "contains control characters")
	}
	return nil
}

// ParseSource reads a source binding from its document form. A nil v (JSON
// null) is no binding and returns (nil, nil). Anything else must be an
// object whose "type" is a supported source type (else ErrUnknownSourceType,
// naming the type) with exactly that type's fields, each valid.
func ParseSource(v any) (Source, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fieldErr("source", nil, "must be an object or null, got %s", typeName(v))
	}
	t, err := getString(m, "source", "type", true)
	if err != nil {
		return nil, err
	}
	switch SourceType(t) {
	case SourceFilesystem:
		return parseFilesystemSource(m)
	}
	return nil, fieldErr("source.type", ErrUnknownSourceType, "unknown source type %q", t)
}

func parseFilesystemSource(m map[string]any) (Source, error) {
	if err := onlyKeys(m, "source", "type", "filesystemId", "path"); err != nil {
		return nil, err
	}
	fsid, err := getString(m, "source", "filesystemId", true)
	if err != nil {
		return nil, err
	}
	p, err := getString(m, "source", "path", true)
	if err != nil {
		return nil, err
	}
	s := FilesystemSource{FilesystemID: fsid, Path: p}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// onlyKeys rejects members of m other than allowed, naming the first one in
// sorted order.
func onlyKeys(m map[string]any, base string, allowed ...string) error {
	var extra []string
	for k := range m {
		ok := false
		for _, a := range allowed {
			if k == a {
				ok = true
				break
			}
		}
		if !ok {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	return fieldErr(joinPath(base, extra[0]), nil, "unknown field")
}

// getString reads m[key] as a string. A missing key is an error when
// required and returns "" otherwise; any other type is an error.
func getString(m map[string]any, base, key string, required bool) (string, error) {
	v, ok := m[key]
	if !ok {
		if required {
			return "", fieldErr(joinPath(base, key), nil, "missing")
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fieldErr(joinPath(base, key), nil, "must be a string, got %s", typeName(v))
	}
	if !utf8.ValidString(s) {
		return "", fieldErr(joinPath(base, key), ErrInvalidUTF8, "string is not valid UTF-8")
	}
	return s, nil
}
