package ingest

import (
	"path/filepath"
	"strings"
)

// Kind is how ingestion handles a harness tool's calls.
type Kind string

// The kinds. A tool not in the map is KindOther: its call is recorded as a
// toolcall with its output, and nothing else.
const (
	KindRead  Kind = "read"  // the file is indexed and activated; its output is not kept as toolcall output
	KindWrite Kind = "write" // the file is indexed (a new version) and pooled
	KindEdit  Kind = "edit"  // as write
	KindBash  Kind = "bash"  // best-effort file attribution from the command and output
	KindLs    Kind = "ls"    // the listed files are indexed and pooled
	KindFind  Kind = "find"  // as ls, one path per output line
	KindGrep  Kind = "grep"  // as ls, from file:line prefixes
	KindOther Kind = "other" // recorded as is
)

// DefaultTools maps the tools of Pi and Claude Code (lowercased) to kinds.
var DefaultTools = map[string]Kind{
	"read": KindRead, "write": KindWrite, "edit": KindEdit, "multiedit": KindEdit,
	"bash": KindBash, "ls": KindLs, "find": KindFind, "glob": KindFind, "grep": KindGrep,
}

// kindOf returns the kind of a tool name (case-insensitive).
func (in *Ingester) kindOf(name string) Kind {
	if k, ok := in.o.Tools[strings.ToLower(name)]; ok {
		return k
	}
	return KindOther
}

// pathArg returns the file path a tool call names, or "".
func pathArg(args map[string]any) string {
	for _, k := range []string{"path", "file_path", "filePath", "notebook_path", "file"} {
		if s, ok := args[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// abs resolves p against cwd (p as the harness saw it).
func abs(cwd, p string) string {
	if p == "" {
		return cwd
	}
	if strings.HasPrefix(p, "~/") {
		return p // a home the harness knows and we do not: kept as given
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}
