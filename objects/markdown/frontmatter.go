package markdown

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"go.abhg.dev/goldmark/frontmatter"
	"gopkg.in/yaml.v3"

	"github.com/ctxstore/ctxstore/objects"
)

// Frontmatter formats, as reported in [Note.FrontmatterFormat].
const (
	FormatYAML = "yaml"
	FormatTOML = "toml"
)

// maxFrontmatterDepth bounds the nesting of frontmatter values. It is far
// below the object model's own limit, so a parsed note always validates.
const maxFrontmatterDepth = 100

// FrontmatterError reports frontmatter that does not parse. Line is the
// 1-based line of the note (not of the frontmatter block) at which the
// problem was found. It unwraps to [objects.ErrInvalid] and to the
// decoder's own error, if any.
type FrontmatterError struct {
	Format string // FormatYAML or FormatTOML
	Line   int    // 1-based line in the note
	Msg    string // what is wrong, without a position
	Err    error  // the decoder's error, if any
}

// Error implements error.
func (e *FrontmatterError) Error() string {
	return fmt.Sprintf("markdown: line %d: invalid %s frontmatter: %s", e.Line, strings.ToUpper(e.Format), e.Msg)
}

// Unwrap returns objects.ErrInvalid and the decoder's error.
func (e *FrontmatterError) Unwrap() []error {
	if e.Err == nil {
		return []error{objects.ErrInvalid}
	}
	return []error{objects.ErrInvalid, e.Err}
}

// rawFrontmatter receives the undecoded frontmatter from the goldmark
// extension: the formats below "unmarshal" into it by keeping the bytes, so
// that this package decodes them itself and can place errors on note lines.
type rawFrontmatter struct {
	format string
	raw    []byte
}

func captureFormat(name string, delim byte) frontmatter.Format {
	return frontmatter.Format{
		Name:  strings.ToUpper(name),
		Delim: delim,
		Unmarshal: func(b []byte, v any) error {
			c, ok := v.(*rawFrontmatter)
			if !ok {
				return fmt.Errorf("markdown: unexpected frontmatter target %T", v)
			}
			c.format, c.raw = name, b
			return nil
		},
	}
}

var frontmatterFormats = []frontmatter.Format{
	captureFormat(FormatYAML, '-'),
	captureFormat(FormatTOML, '+'),
}

// frontmatterDelim mirrors the extension's rule for a delimiter line: three
// or more of the same byte and nothing else, CR and LF aside.
func frontmatterDelim(line []byte) (delim byte, count int) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) < 3 || (line[0] != '-' && line[0] != '+') {
		return 0, 0
	}
	for _, c := range line[1:] {
		if c != line[0] {
			return 0, 0
		}
	}
	return line[0], len(line)
}

// hasClosedFrontmatter reports whether src opens with a frontmatter
// delimiter line that a matching line closes later. The goldmark extension
// would otherwise take an unclosed block (a note that starts with a "---"
// thematic break) to run to the end of the document; Obsidian, like this
// package, reads such a note as having no frontmatter.
func hasClosedFrontmatter(src []byte) bool {
	line, rest := cutLine(src)
	d, n := frontmatterDelim(line)
	if d == 0 {
		return false
	}
	for len(rest) > 0 {
		line, rest = cutLine(rest)
		if dd, nn := frontmatterDelim(line); dd == d && nn == n {
			return true
		}
	}
	return false
}

func cutLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i+1], b[i+1:]
	}
	return b, nil
}

// decodeFrontmatter decodes raw frontmatter whose first line is line
// firstLine of the note into JSON values.
func decodeFrontmatter(format string, raw []byte, firstLine int) (map[string]any, error) {
	var (
		v   any
		err error
	)
	switch format {
	case FormatYAML:
		err = yaml.Unmarshal(raw, &v)
		if err != nil {
			return nil, yamlError(err, raw, firstLine)
		}
	case FormatTOML:
		var m map[string]any
		err = toml.Unmarshal(raw, &m)
		if err != nil {
			return nil, tomlError(err, firstLine)
		}
		v = m
	default:
		return nil, &FrontmatterError{Format: format, Line: firstLine - 1, Msg: "unknown format"}
	}
	if v == nil { // an empty block, or only comments
		return map[string]any{}, nil
	}
	out, err := toJSON(v, 0)
	if err != nil {
		return nil, &FrontmatterError{Format: format, Line: firstLine, Msg: err.Error()}
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, &FrontmatterError{Format: format, Line: firstLine,
			Msg: fmt.Sprintf("must be a mapping of keys to values, not %s", jsonTypeName(out))}
	}
	return m, nil
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

var (
	yamlLineRe   = regexp.MustCompile(`line (\d+)`)
	yamlPrefixRe = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)
	yamlAnchorRe = regexp.MustCompile(`^unknown anchor '(.*)' referenced`)
)

// yamlParserErrors are the messages yaml.v3 raises from its parser rather
// than its scanner. For those it reports a 0-based line (its scanner errors
// are 1-based), and it leaves the line out altogether when that number is
// 0, so both need fixing up to name the right line.
var yamlParserErrors = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"found undefined tag handle",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
}

// yamlError turns a yaml.v3 error into a FrontmatterError whose line numbers
// are lines of the note.
func yamlError(err error, raw []byte, firstLine int) error {
	fe := &FrontmatterError{Format: FormatYAML, Line: firstLine, Err: err}
	shift := func(yamlLine int) int { return noteLine(raw, yamlLine) + firstLine - 1 }
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			if i == 0 {
				if sm := yamlLineRe.FindStringSubmatch(m); sm != nil {
					n, _ := strconv.Atoi(sm[1])
					fe.Line = shift(n)
				}
			}
			// "line 3: mapping key "a" already defined at line 2": both
			// numbers are 1-based lines of the YAML text.
			msgs[i] = yamlLineRe.ReplaceAllStringFunc(m, func(s string) string {
				n, _ := strconv.Atoi(s[len("line "):])
				return "line " + strconv.Itoa(shift(n))
			})
			msgs[i] = strings.TrimPrefix(msgs[i], "line "+strconv.Itoa(fe.Line)+": ")
		}
		fe.Msg = strings.Join(msgs, "; ")
		return fe
	}
	msg := err.Error()
	line := 1
	if sm := yamlPrefixRe.FindStringSubmatch(msg); sm != nil {
		if sm[1] != "" {
			line, _ = strconv.Atoi(sm[1])
		} else {
			line = 0
		}
		msg = msg[len(sm[0]):]
	}
	parserErr := false
	for _, p := range yamlParserErrors {
		if strings.HasPrefix(msg, p) {
			parserErr = true
			break
		}
	}
	switch {
	case parserErr:
		line++ // 0-based, and 0 was left out
	case line == 0:
		line = 1 // a scanner error on the first line carries no number
		if sm := yamlAnchorRe.FindStringSubmatch(msg); sm != nil {
			line = lineOf(raw, "*"+sm[1])
		}
	}
	fe.Line = shift(line)
	fe.Msg = msg
	return fe
}

// lineOf returns the 1-based YAML line of the first occurrence of s in b,
// 1 if there is none.
func lineOf(b []byte, s string) int {
	i := bytes.Index(b, []byte(s))
	if i < 0 {
		return 1
	}
	n := 1
	for j := 0; j < i; j++ {
		if b[j] == '\n' || b[j] == '\r' && (j+1 >= len(b) || b[j+1] != '\n') {
			n++
		}
	}
	return n
}

// noteLine turns a 1-based line of YAML text b into its line among b's
// lines as the note counts them: YAML also breaks lines at a lone "\r",
// the note only at "\n". The line after b's last "\n" is the one that
// follows the text (the frontmatter's closing delimiter).
func noteLine(b []byte, yamlLine int) int {
	y, n := 1, 1
	for j := 0; j < len(b) && y < yamlLine; j++ {
		switch {
		case b[j] == '\n':
			y, n = y+1, n+1
		case b[j] == '\r' && (j+1 >= len(b) || b[j+1] != '\n'):
			y++
		}
	}
	return n
}

func tomlError(err error, firstLine int) error {
	fe := &FrontmatterError{Format: FormatTOML, Line: firstLine, Msg: err.Error(), Err: err}
	var pe toml.ParseError
	var ppe *toml.ParseError
	switch {
	case errors.As(err, &pe):
	case errors.As(err, &ppe):
		pe = *ppe
	default:
		fe.Msg = strings.TrimPrefix(fe.Msg, "toml: ")
		return fe
	}
	if pe.Position.Line > 0 {
		fe.Line = pe.Position.Line + firstLine - 1
	}
	fe.Msg = pe.Message
	if pe.LastKey != "" {
		fe.Msg += fmt.Sprintf(" (after key %q)", pe.LastKey)
	}
	return fe
}

// toJSON converts a decoded YAML or TOML value into the JSON values the
// object model stores (nil, bool, string, int64, float64, map[string]any,
// []any):
//
//   - strings that are not valid UTF-8 get U+FFFD for the bad bytes;
//   - integers beyond ±2^53, which a double cannot hold exactly, become
//     decimal strings; NaN and ±Inf become "NaN", "+Inf" and "-Inf";
//   - times become strings: a date at midnight UTC as "2006-01-02", TOML
//     local dates and times in their own forms, others as RFC 3339;
//   - map keys that are not strings (YAML allows 1: or true:) are written
//     as text.
func toJSON(v any, depth int) (any, error) {
	if depth > maxFrontmatterDepth {
		return nil, fmt.Errorf("values nested deeper than %d levels", maxFrontmatterDepth)
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return x, nil
	case string:
		return validUTF8(x), nil
	case []byte:
		return validUTF8(string(x)), nil
	case int:
		return intJSON(int64(x)), nil
	case int64:
		return intJSON(x), nil
	case uint64:
		if x <= 1<<53 {
			return int64(x), nil
		}
		return strconv.FormatUint(x, 10), nil
	case float64:
		return floatJSON(x), nil
	case time.Time:
		return timeJSON(x), nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := toJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[validUTF8(k)] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := toJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		out := make(map[string]any, rv.Len())
		keys := rv.MapKeys()
		// Sort so that when two keys print the same ("1" and 1), the
		// winner does not depend on map order.
		sort.Slice(keys, func(i, j int) bool {
			return fmt.Sprintf("%T%v", keys[i].Interface(), keys[i].Interface()) <
				fmt.Sprintf("%T%v", keys[j].Interface(), keys[j].Interface())
		})
		for _, k := range keys {
			ks, err := toJSON(k.Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			c, err := toJSON(rv.MapIndex(k).Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			out[keyText(ks)] = c
		}
		return out, nil
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			c, err := toJSON(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intJSON(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return toJSON(rv.Uint(), depth)
	case reflect.Float32, reflect.Float64:
		return floatJSON(rv.Float()), nil
	case reflect.String:
		return validUTF8(rv.String()), nil
	}
	return nil, fmt.Errorf("unsupported value of type %T", v)
}

func keyText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "null"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return validUTF8(fmt.Sprint(v))
}

func intJSON(n int64) any {
	if n > 1<<53 || n < -(1<<53) {
		return strconv.FormatInt(n, 10)
	}
	return n
}

func floatJSON(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return f
}

func timeJSON(t time.Time) string {
	switch t.Location().String() {
	case "date-local": // TOML local date
		return t.Format("2006-01-02")
	case "datetime-local":
		return t.Format("2006-01-02T15:04:05.999999999")
	case "time-local":
		return t.Format("15:04:05.999999999")
	}
	if t.Location() == time.UTC && t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format("2006-01-02")
	}
	return t.Format(time.RFC3339Nano)
}

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
