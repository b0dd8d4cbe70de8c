package objects

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// argsDisplayMax is the longest derived args display, in code points.
const argsDisplayMax = 120

// viewKeys lists, per kind, the fields of the default metadata view in
// rendering order. Optional fields appear only when set.
var viewKeys = map[Kind][]string{
	KindFile:         {"id", "type", "path", "file_type", "char_count", "nickname"},
	KindToolcall:     {"id", "type", "tool", "args_display", "status", "nickname"},
	KindChat:         {"id", "type", "session_ref", "turn_count", "nickname"},
	KindSystemPrompt: {"id", "type", "char_count", "nickname"},
	KindSession:      {"id", "type", "nickname"},
	KindNote:         {"id", "type", "path", "title", "tags", "char_count", "nickname"},
	KindUser:         {"id", "type", "char_count", "nickname"},
}

// MetadataView returns o's default metadata view: the compact fields the
// agent sees while o is inactive, never its content.
//
//   - every kind: id, type, and nickname when set;
//   - file: path (from the source binding), file_type, char_count;
//   - toolcall: tool, args_display (DefaultArgsDisplay when unset), status;
//   - chat: session_ref, turn_count;
//   - system_prompt and user: char_count of the content;
//   - note: path when sourced, title and tags when set, char_count;
//   - session: nothing more (it is bookkeeping and not rendered).
//
// Values are strings, int64 counts and, for tags, []any of strings.
// metadata_view_hash is the SHA-256 of its canonical JSON. The per-object
// "view" override the specification describes is not implemented: a "view" field is kept
// in Extra and ignored here.
func MetadataView(o *Object) map[string]any {
	v := map[string]any{"id": o.ID(), "type": string(o.Kind())}
	p := &o.Payload
	setOpt(v, "nickname", p.Nickname)
	switch o.Kind() {
	case KindFile:
		setOpt(v, "path", sourcePath(o.Source()))
		v["file_type"] = p.File.FileType
		v["char_count"] = p.File.CharCount
	case KindToolcall:
		v["tool"] = p.Toolcall.Tool
		d := p.Toolcall.ArgsDisplay
		if d == "" {
			d = DefaultArgsDisplay(p.Toolcall.Args)
		}
		v["args_display"] = d
		v["status"] = string(p.Toolcall.Status)
	case KindChat:
		v["session_ref"] = p.Chat.SessionRef
		v["turn_count"] = p.Chat.TurnCount
	case KindSystemPrompt, KindUser:
		v["char_count"] = CharCount(p.Content)
	case KindNote:
		setOpt(v, "path", sourcePath(o.Source()))
		setOpt(v, "title", p.Note.Title)
		if p.Note.Tags != nil {
			v["tags"] = stringsToAny(p.Note.Tags)
		}
		v["char_count"] = CharCount(p.Content)
	}
	return v
}

// sourcePath returns the path of a filesystem binding, "" otherwise.
func sourcePath(s Source) string {
	if fs, ok := s.(FilesystemSource); ok {
		return fs.Path
	}
	return ""
}

// DefaultArgsDisplay renders structured tool arguments for a metadata view
// when no args_display was given: the value itself when args has exactly one
// member and it is a string (`ls -la` for {"command":"ls -la"}), otherwise
// the canonical JSON of args. Longer results are cut to 119 code points
// plus "…". Arguments that are not valid JSON values render as "".
func DefaultArgsDisplay(args map[string]any) string {
	var s string
	if len(args) == 1 {
		for _, v := range args {
			if str, ok := v.(string); ok && str != "" && utf8.ValidString(str) {
				s = str
			}
		}
	}
	if s == "" {
		if len(args) == 0 {
			s = "{}"
		} else {
			c, err := Canonical(args)
			if err != nil {
				return ""
			}
			s = string(c)
		}
	}
	if utf8.RuneCountInString(s) <= argsDisplayMax {
		return s
	}
	r := []rune(s)
	return string(r[:argsDisplayMax-1]) + "…"
}

// RenderMetadata renders o's metadata view as one line: a label, then
// key=value pairs in ViewKeys order. The label is "toolcall_ref" for
// toolcalls and the kind otherwise; args_display is shown as
// "args". Strings made only of letters, digits and ._/:+-~@, are bare,
// others are Go-quoted (strconv.Quote), so the line never holds a newline;
// tags are joined with ",". For example:
//
//	toolcall_ref id=toolu_01 tool=bash args="ls -la" status=ok
//	file id=3f2a… path=/src/main.go file_type=go char_count=1200
//
// The line is part of the assembled bytes, which a session must rebuild
// byte for byte: its form is versioned (MetadataVersion), context commits
// record the version they were rendered with, and RenderMetadataAt renders
// any version this code knows.
func RenderMetadata(o *Object) string {
	s, _ := RenderMetadataAt(o, MetadataVersion)
	return s
}

// MetadataVersion is the version of the metadata line RenderMetadata writes.
// A change to the line (keys, order, quoting, the label) must add a version
// here and keep rendering the older ones in RenderMetadataAt:
//
//	1: the line as described at RenderMetadata.
const MetadataVersion = 1

// RenderMetadataAt renders o's metadata line as version v wrote it; a
// version this code does not know is an error.
func RenderMetadataAt(o *Object, v int) (string, error) {
	return RenderMetadataPaths(o, v, nil)
}

// RenderMetadataPaths is RenderMetadataAt with the path of a file or note
// shown as display maps it (a path relative to the session's working
// directory, say); the rest of the line is unchanged. A nil display is
// RenderMetadataAt.
func RenderMetadataPaths(o *Object, v int, display func(string) string) (string, error) {
	if v != 1 {
		return "", fmt.Errorf("objects: metadata line version %d unknown (this code renders 1 to %d)", v, MetadataVersion)
	}
	return renderMetadata(o, display), nil
}

func renderMetadata(o *Object, display func(string) string) string {
	v := MetadataView(o)
	if p, ok := v["path"].(string); ok && display != nil {
		v["path"] = display(p)
	}
	var b strings.Builder
	if o.Kind() == KindToolcall {
		b.WriteString("toolcall_ref")
	} else {
		b.WriteString(string(o.Kind()))
	}
	for _, k := range viewKeys[o.Kind()] {
		if k == "type" {
			continue
		}
		val, ok := v[k]
		if !ok {
			continue
		}
		if k == "args_display" {
			k = "args"
		}
		b.WriteString(" " + k + "=" + renderValue(val))
	}
	return b.String()
}

// renderValue formats one metadata value for RenderMetadata.
func renderValue(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i], _ = e.(string)
		}
		return renderString(strings.Join(parts, ","))
	case string:
		return renderString(x)
	}
	return renderString("")
}

// renderString leaves safe strings bare and quotes the rest.
func renderString(s string) string {
	if s == "" {
		return `""`
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			strings.IndexByte("._/:+-~@,", c) >= 0 {
			continue
		}
		return strconv.Quote(s)
	}
	return s
}

// DisplayIDLen is how many hex digits DisplayID keeps of a 64-hex id.
const DisplayIDLen = 16

// DisplayID returns the id a context shows for id: a 64-hex id (a sourced
// object's SHA-256) shortened to its first DisplayIDLen digits, which keeps
// collisions within a session negligible (2^-64 per pair) at a quarter of
// the tokens; any other id as it is. The agent tools accept it, and any
// unique hex prefix of at least 8 digits, wherever an id is expected.
func DisplayID(id string) string {
	if len(id) == 64 && isHex(id) {
		return id[:DisplayIDLen]
	}
	return id
}

// IsIDPrefix reports whether s can be a shortened id: 8 to 63 lowercase hex
// digits.
func IsIDPrefix(s string) bool { return len(s) >= 8 && len(s) < 64 && isHex(s) }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
