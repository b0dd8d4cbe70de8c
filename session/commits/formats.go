package commits

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/internal/jsontext"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
)

// Format is one serialization of commit content (docs/formats/commits.md).
// A format is named "{family}-v{version}". Only Name and Concat are
// required; the optional functions say which translation tiers it takes
// part in (docs/commits.md, "Translation tiers").
type Format struct {
	// Name is the format's name, e.g. "events-v1".
	Name string
	// Family and Version split the name ("events", 1).
	Family  string
	Version int
	// Doc says in one line what an artifact holds.
	Doc string
	// OutputOnly marks formats that materialization produces but commits
	// never hold (narrative-v1, raw-v1); Checkpoint refuses them.
	OutputOnly bool
	// Validate checks an artifact before it is stored (nil: any bytes).
	Validate func([]byte) error
	// Concat joins artifacts of this format in chain order: the native
	// tier.
	Concat func(parts [][]byte) ([]byte, error)
	// Decode reads an artifact as neutral events (nil: the format cannot
	// be translated field by field, only rendered as a narrative).
	Decode func([]byte) ([]events.Event, error)
	// Encode writes neutral events in this format (nil: the format can
	// only be produced natively, from artifacts of its own format).
	Encode func([]events.Event) ([]byte, error)
	// Count gives an artifact's message count (nil: Decode's messages, or
	// its lines).
	Count func([]byte) int64
	// Text extracts an artifact's human-readable text for the narrative
	// tier (nil: the strings of the artifact's JSON values).
	Text func([]byte) string
	// ForSession makes a materialization the session file of a new
	// session (Fork; nil: the content as it is). Pi's names the session in
	// its header.
	ForSession func(content []byte, session string) ([]byte, error)
}

// Registry is a set of formats. The harness codecs, a floor above, are
// given to a registry when a program builds it (harness.NewRegistry
// extends claude-code-v1 and pi-v3 with their Decode and Encode); there is
// no registry shared by the whole program.
type Registry struct {
	mu sync.RWMutex
	m  map[string]*Format
}

// NewRegistry returns a registry holding the built-in formats: events-v1,
// conversation-v1, claude-code-v1, pi-v3, codex-v1, narrative-v1 and raw-v1.
func NewRegistry() *Registry {
	r := &Registry{m: map[string]*Format{}}
	for _, f := range builtins() {
		if err := r.Register(f); err != nil {
			panic(err)
		}
	}
	return r
}

// Register adds f, or replaces the format of the same name (to give a
// built-in format a codec). f needs a well-formed Name and a Concat.
func (r *Registry) Register(f *Format) error {
	fam, ver, ok := SplitFormat(f.Name)
	if !ok {
		return fmt.Errorf("commits: format name %q is not {family}-v{version}", f.Name)
	}
	if f.Concat == nil {
		return fmt.Errorf("commits: format %s: Concat is required", f.Name)
	}
	g := *f
	g.Family, g.Version = fam, ver
	r.mu.Lock()
	r.m[f.Name] = &g
	r.mu.Unlock()
	return nil
}

// Extend gives the registered format called name what set fills in on a
// copy of it (a harness package's decoder or encoder), and registers the
// copy in its place; several packages may extend one format.
func (r *Registry) Extend(name string, set func(*Format)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.m[name]
	if !ok {
		return fmt.Errorf("commits: no format %s to extend", name)
	}
	g := *f
	set(&g)
	g.Name, g.Family, g.Version = f.Name, f.Family, f.Version
	r.m[name] = &g
	return nil
}

// Lookup returns the format called name.
func (r *Registry) Lookup(name string) (*Format, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.m[name]
	return f, ok
}

// Signature names the registry's formats and which of them decode and
// encode: part of the materialization cache key, so that a binary with
// other codecs (a decoder added later) does not reuse a translation made
// without them.
func (r *Registry) Signature() string {
	var b strings.Builder
	for _, n := range r.Names() {
		f, _ := r.Lookup(n)
		fmt.Fprintf(&b, "%s:%t:%t;", n, f.Decode != nil, f.Encode != nil)
	}
	return ContentHash([]byte(b.String()))[:16]
}

// Names lists the registered formats, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// formatAliases are the harness names the faces take for formats
// (docs/crossharness.md): `materialize --format claude-code` and the HTTP
// materialize route's "format" alike.
var formatAliases = map[string]string{
	"pi":          FormatPi,
	"claude-code": FormatClaudeCode,
	"claude":      FormatClaudeCode,
	"codex":       FormatCodex,
	"events":      FormatEvents,
	"narrative":   FormatNarrative,
}

// CanonicalFormat returns the format a harness name stands for ("pi" ->
// pi-v3, "claude-code" -> claude-code-v1), or name itself.
func CanonicalFormat(name string) string {
	if n, ok := formatAliases[name]; ok {
		return n
	}
	return name
}

// SplitFormat splits "{family}-v{version}".
func SplitFormat(name string) (family string, version int, ok bool) {
	i := strings.LastIndex(name, "-v")
	if i <= 0 || i+2 >= len(name) {
		return "", 0, false
	}
	v := 0
	for _, c := range name[i+2:] {
		if c < '0' || c > '9' {
			return "", 0, false
		}
		v = v*10 + int(c-'0')
		if v > 1<<20 {
			return "", 0, false
		}
	}
	fam := name[:i]
	for _, c := range fam {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return "", 0, false
		}
	}
	return fam, v, v > 0
}

// The built-in format names.
const (
	FormatEvents       = "events-v1"
	FormatConversation = "conversation-v1"
	FormatClaudeCode   = "claude-code-v1"
	FormatPi           = "pi-v3"
	FormatCodex        = "codex-v1"
	FormatNarrative    = "narrative-v1"
	FormatRaw          = "raw-v1"
)

func builtins() []*Format {
	return []*Format{
		{
			Name:     FormatEvents,
			Doc:      "a JSON array of neutral events (objects/events); concatenation merges the arrays",
			Validate: func(b []byte) error { _, err := events.Decode(b); return err },
			Concat:   concatEvents,
			Decode:   events.Decode,
			Encode:   events.Encode,
			Count: func(b []byte) int64 {
				evs, _ := events.Decode(b)
				return countMessages(evs)
			},
		},
		{
			Name:     FormatConversation,
			Doc:      "a JSON array of harness-neutral messages (objects/conversation.Message); concatenation merges the arrays",
			Validate: func(b []byte) error { _, err := decodeConversation(b); return err },
			Concat:   concatJSONArrays,
			Decode: func(b []byte) ([]events.Event, error) {
				msgs, err := decodeConversation(b)
				if err != nil {
					return nil, err
				}
				return events.FromMessages(msgs), nil
			},
			Encode: func(evs []events.Event) ([]byte, error) {
				msgs := events.ToMessages(evs)
				if msgs == nil {
					msgs = []conversation.Message{}
				}
				return jsontext.Marshal(msgs)
			},
			Count: func(b []byte) int64 { m, _ := decodeConversation(b); return int64(len(m)) },
		},
		{
			Name:   FormatClaudeCode,
			Doc:    "complete JSONL lines of a Claude Code transcript, as the file holds them; concatenation is byte append (codec: harness/claudecode)",
			Concat: concatBytes,
			Count:  countLines,
		},
		{
			Name:   FormatPi,
			Doc:    "complete JSONL lines of a Pi v3 session file (header and entries); concatenation is byte append (codec: harness/pi)",
			Concat: concatBytes,
			Count:  countLines,
		},
		{
			Name:   FormatCodex,
			Doc:    "complete JSONL lines of a Codex CLI rollout file (session_meta, response items, events); concatenation is byte append (codec: harness/codex)",
			Concat: concatBytes,
			Count:  countLines,
		},
		{
			Name:       FormatNarrative,
			Doc:        "Markdown text telling what the conversation held (translation tier 3); concatenation joins with a blank line",
			OutputOnly: true,
			Concat:     concatText,
			Encode:     encodeNarrative,
			Count: func(b []byte) int64 {
				n := int64(bytes.Count(b, []byte("\n## ")))
				if bytes.HasPrefix(b, []byte("## ")) {
					n++
				}
				return n
			},
		},
		{
			Name:       FormatRaw,
			Doc:        "a JSON array of the stored artifacts with their commit and format (translation tier 4)",
			OutputOnly: true,
			Concat:     concatJSONArrays,
		},
	}
}

func decodeConversation(b []byte) ([]conversation.Message, error) {
	var msgs []conversation.Message
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&msgs); err != nil {
		return nil, fmt.Errorf("conversation-v1: not a JSON array of messages: %w", err)
	}
	for i, m := range msgs {
		switch m.Role {
		case conversation.RoleUser, conversation.RoleAssistant, conversation.RoleToolResult:
		default:
			return nil, fmt.Errorf("conversation-v1: message %d: field \"role\": unknown role %q", i, m.Role)
		}
	}
	return msgs, nil
}

func countMessages(evs []events.Event) int64 {
	var n int64
	for _, e := range evs {
		if e.IsMessage() {
			n++
		}
	}
	return n
}

func concatBytes(parts [][]byte) ([]byte, error) {
	return bytes.Join(parts, nil), nil
}

func concatText(parts [][]byte) ([]byte, error) {
	var keep [][]byte
	for _, p := range parts {
		if len(bytes.TrimSpace(p)) > 0 {
			keep = append(keep, bytes.TrimRight(p, "\n"))
		}
	}
	out := bytes.Join(keep, []byte("\n\n"))
	if len(out) > 0 {
		out = append(out, '\n')
	}
	return out, nil
}

// concatJSONArrays merges JSON arrays without decoding their elements.
func concatJSONArrays(parts [][]byte) ([]byte, error) {
	out := []byte{'['}
	n := 0
	for i, p := range parts {
		p = bytes.TrimSpace(p)
		if len(p) < 2 || p[0] != '[' || p[len(p)-1] != ']' {
			return nil, fmt.Errorf("part %d: not a JSON array", i)
		}
		inner := bytes.TrimSpace(p[1 : len(p)-1])
		if len(inner) == 0 {
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, inner...)
		n++
	}
	return append(out, ']'), nil
}

func concatEvents(parts [][]byte) ([]byte, error) { return concatJSONArrays(parts) }

func countLines(b []byte) int64 {
	n := int64(bytes.Count(b, []byte{'\n'}))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// encodeNarrative renders events as Markdown: what the conversation held,
// for an agent that cannot load it natively (tier 3) or for a person.
func encodeNarrative(evs []events.Event) ([]byte, error) {
	var b strings.Builder
	for _, e := range evs {
		switch e.Type {
		case events.Prompt:
			who := "User"
			if e.Source != "" && e.Source != "user" {
				who = "Injected (" + e.Source + ")"
			}
			fmt.Fprintf(&b, "## %s\n\n%s\n\n", who, e.Text)
		case events.Response:
			fmt.Fprintf(&b, "## Assistant\n\n%s\n\n", e.Text)
		case events.Thinking:
			fmt.Fprintf(&b, "## Assistant (thinking)\n\n%s\n\n", e.Text)
		case events.ToolCall:
			in, _ := jsontext.Marshal(e.Tool.Input)
			fmt.Fprintf(&b, "## Tool call %s (%s)\n\n%s\n\n", e.Tool.Name, e.Tool.ID, in)
		case events.ToolResult:
			status := ""
			if e.Result != nil && e.Result.IsError {
				status = ", error"
			}
			content := ""
			if e.Result != nil {
				content = e.Result.Content
			}
			fmt.Fprintf(&b, "## Tool result (%s%s)\n\n%s\n\n", e.Tool.ID, status, content)
		case events.System:
			switch e.Subtype {
			case events.SubtypeCompactionSummary:
				fmt.Fprintf(&b, "## Summary of the earlier conversation\n\n%s\n\n", e.Text)
			case events.SubtypeNarrative:
				fmt.Fprintf(&b, "%s\n\n", strings.TrimRight(e.Text, "\n"))
			default:
				if e.Text != "" {
					fmt.Fprintf(&b, "## System (%s)\n\n%s\n\n", e.Subtype, e.Text)
				}
			}
		case events.Error:
			fmt.Fprintf(&b, "## Error\n\n%s\n\n", e.Text)
		}
	}
	return []byte(b.String()), nil
}

// genericText extracts the strings of an artifact read as JSON (a value
// or JSON lines), for the narrative of a format without a Text function;
// bytes that are not JSON are kept as text when they are UTF-8.
func genericText(b []byte) string {
	var parts []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if s := strings.TrimSpace(x); s != "" {
				parts = append(parts, s)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				switch k {
				case "text", "content", "thinking", "summary", "message", "input", "output", "result", "name":
					walk(x[k])
				}
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		walk(v)
	}
	if len(parts) == 0 && utf8.Valid(b) {
		return string(b)
	}
	return strings.Join(parts, "\n\n")
}
