package markdown

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects"
)

func TestFrontmatterFields(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		aliases []string
		tags    []string
	}{
		{"yaml lists", "---\naliases: [A, B]\ntags: [x, y/z]\n---\n", []string{"A", "B"}, []string{"x", "y/z"}},
		{"yaml block lists", "---\naliases:\n  - First name\n  - Second\ntags:\n  - x\n  - y\n---\n", []string{"First name", "Second"}, []string{"x", "y"}},
		{"strings", "---\naliases: Only one, with comma\ntags: a, b c\n---\n", []string{"Only one, with comma"}, []string{"a", "b", "c"}},
		{"singular keys", "---\nalias: Solo\ntag: t\n---\n", []string{"Solo"}, []string{"t"}},
		{"both keys merged", "---\naliases: [A]\nalias: B\ntags: [x]\ntag: [y, x]\n---\n", []string{"A", "B"}, []string{"x", "y"}},
		{"hash stripped", "---\ntags: [\"#quoted\", plain]\n---\n", nil, []string{"quoted", "plain"}},
		{"digits-only and non-strings dropped", "---\ntags: [2024, \"1984\", ok, true, {a: b}]\naliases: [1, A]\n---\n", []string{"A"}, []string{"ok"}},
		{"empty and blank dropped", "---\naliases: [\"\", \"  \", A, A]\ntags: [\"\", \" , \"]\n---\n", []string{"A"}, nil},
		{"null values", "---\naliases:\ntags:\n---\n", nil, nil},
		{"unquoted hash is a YAML comment", "---\ntags: #not-a-tag\n---\n", nil, nil},
		{"keys are case-sensitive", "---\nTags: [x]\nAliases: [A]\n---\n", nil, nil},
		{"frontmatter then inline, deduplicated", "---\ntags: [Project]\n---\n#project #new", nil, []string{"Project", "new"}},
		{"toml", "+++\naliases = [\"A\"]\ntags = [\"x\", \"y\"]\n+++\n", []string{"A"}, []string{"x", "y"}},
		{"alias whitespace folded", "---\naliases: [\"two\\nlines\", \"tab\\there\"]\n---\n", []string{"two lines", "tab here"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := mustParse(t, c.src)
			if !reflect.DeepEqual(n.Aliases, c.aliases) {
				t.Errorf("aliases: got %q, want %q", n.Aliases, c.aliases)
			}
			if !reflect.DeepEqual(n.Tags, c.tags) {
				t.Errorf("tags: got %q, want %q", n.Tags, c.tags)
			}
		})
	}
}

func TestFrontmatterValues(t *testing.T) {
	cases := []struct {
		name   string
		src    string
		format string
		want   map[string]any
	}{
		{"yaml scalars", "---\ns: text\ni: 42\nf: 1.5\nb: true\nn: null\nneg: -7\n---\n", FormatYAML,
			map[string]any{"s": "text", "i": int64(42), "f": 1.5, "b": true, "n": nil, "neg": int64(-7)}},
		{"yaml dates", "---\nd: 2024-03-14\nt: 2024-03-14T09:30:00Z\nq: \"2024-03-14\"\n---\n", FormatYAML,
			map[string]any{"d": "2024-03-14", "t": "2024-03-14T09:30:00Z", "q": "2024-03-14"}},
		{"yaml unsafe numbers", "---\nbig: 9007199254740993\nnan: .nan\ninf: -.inf\n---\n", FormatYAML,
			map[string]any{"big": "9007199254740993", "nan": "NaN", "inf": "-Inf"}},
		{"yaml nested and non-string keys", "---\nm:\n  1: one\n  true: yes\n  k: [a, {b: c}]\n---\n", FormatYAML,
			map[string]any{"m": map[string]any{"1": "one", "true": "yes", "k": []any{"a", map[string]any{"b": "c"}}}}},
		{"yaml anchors and merge", "---\nbase: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n---\n", FormatYAML,
			map[string]any{"base": map[string]any{"x": int64(1)}, "derived": map[string]any{"x": int64(1), "y": int64(2)}}},
		{"yaml empty block", "---\n---\n# T", FormatYAML, map[string]any{}},
		{"yaml comments only", "---\n# nothing\n---\n", FormatYAML, map[string]any{}},
		{"yaml longer delimiters", "----\na: 1\n----\n", FormatYAML, map[string]any{"a": int64(1)}},
		{"yaml crlf", "---\r\na: 1\r\n---\r\n", FormatYAML, map[string]any{"a": int64(1)}},
		{"toml", "+++\ntitle = \"T\"\nn = 3\nf = 2.5\nd = 1979-05-27\nlt = 07:32:00\nldt = 1979-05-27T07:32:00\nodt = 1979-05-27T07:32:00Z\n[sub]\nk = [1, \"x\"]\n[[arr]]\na = 1\n+++\n", FormatTOML,
			map[string]any{"title": "T", "n": int64(3), "f": 2.5, "d": "1979-05-27", "lt": "07:32:00",
				"ldt": "1979-05-27T07:32:00", "odt": "1979-05-27T07:32:00Z",
				"sub": map[string]any{"k": []any{int64(1), "x"}}, "arr": []any{map[string]any{"a": int64(1)}}}},
		{"toml nan", "+++\nx = nan\n+++\n", FormatTOML, map[string]any{"x": "NaN"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := mustParse(t, c.src)
			if n.FrontmatterFormat != c.format {
				t.Errorf("format %q, want %q", n.FrontmatterFormat, c.format)
			}
			if !reflect.DeepEqual(n.Frontmatter, c.want) {
				t.Fatalf("got  %#v\nwant %#v", n.Frontmatter, c.want)
			}
			// Every value must be storable as it is.
			if _, err := objects.Canonical(n.Frontmatter); err != nil {
				t.Fatalf("frontmatter is not canonical JSON: %v", err)
			}
		})
	}
}

func TestNoFrontmatter(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []Link // the body must still be read
	}{
		// An unclosed block is no frontmatter: the "---" is a thematic
		// break and the rest is Markdown.
		{"unclosed", "---\ntitle: x\n[[A]]\n", []Link{{Kind: KindWikilink, Target: "A"}}},
		{"not on the first line", "\n---\ntitle: x\n---\n[[A]]", []Link{{Kind: KindWikilink, Target: "A"}}},
		{"delimiter counts differ", "----\ntitle: x\n---\n[[A]]", []Link{{Kind: KindWikilink, Target: "A"}}},
		{"trailing text on delimiter", "--- yaml\ntitle: x\n---\n[[A]]", []Link{{Kind: KindWikilink, Target: "A"}}},
		{"thematic break later", "# T\n\n---\ntitle: x\n---\n[[A]]", []Link{{Kind: KindWikilink, Target: "A"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := mustParse(t, c.src)
			if n.Frontmatter != nil || n.FrontmatterFormat != "" {
				t.Errorf("frontmatter found: %#v", n.Frontmatter)
			}
			if got := noPos(n.Links); !reflect.DeepEqual(got, c.want) {
				t.Errorf("links: got %s, want %s", dump(got), dump(c.want))
			}
		})
	}
}

func TestFrontmatterErrors(t *testing.T) {
	cases := []struct {
		name   string
		src    string
		format string
		line   int
		msg    string
	}{
		{"bad indentation", "---\ntitle: x\n  tags: [a]\n---\n", FormatYAML, 3, "mapping values are not allowed in this context"},
		{"unclosed flow list", "---\ntitle: x\ntags: [a, b\nother: 1\n---\n", FormatYAML, 3, "did not find expected ',' or ']'"},
		{"error on first line", "---\ntitle: a: b\n---\n", FormatYAML, 2, "mapping values are not allowed in this context"},
		{"tab indentation", "---\na:\n\t- x\n---\n", FormatYAML, 3, "found character that cannot start any token"},
		{"duplicate key", "---\ntitle: a\ntags: []\ntitle: b\n---\n", FormatYAML, 4, `mapping key "title" already defined at line 2`},
		{"unknown anchor", "---\na: 1\nb: *nope\n---\n", FormatYAML, 3, "unknown anchor 'nope' referenced"},
		{"unterminated quote", "---\na: \"open\nb: 1\n---\n", FormatYAML, 4, "found unexpected end of stream"},
		{"a lone CR breaks a YAML line, not a note line", "---\r\n\"\r0\n---\r\n", FormatYAML, 3, "found unexpected end of stream"},
		{"not a mapping", "---\n- a\n- b\n---\n", FormatYAML, 2, "must be a mapping of keys to values, not a list"},
		{"a bare string", "---\njust some words\n---\n", FormatYAML, 2, "must be a mapping of keys to values, not a string"},
		{"toml missing value", "+++\ntitle = \"x\"\ntags =\n+++\n", FormatTOML, 3, "expected value"},
		{"toml duplicate key", "+++\na = 1\nb = 2\na = 3\n+++\n", FormatTOML, 4, "has already been defined"},
		{"toml yaml syntax", "+++\ntitle: x\n+++\n", FormatTOML, 2, "expected"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := "# Body title\n\nSee [[Other]] #tag\n"
			n, err := Parse([]byte(c.src + body))
			var fe *FrontmatterError
			if !errors.As(err, &fe) {
				t.Fatalf("got error %v (%T), want a *FrontmatterError", err, err)
			}
			if !errors.Is(err, objects.ErrInvalid) {
				t.Errorf("error does not wrap objects.ErrInvalid")
			}
			if fe.Format != c.format || fe.Line != c.line || !strings.Contains(fe.Msg, c.msg) {
				t.Errorf("got format %q line %d msg %q; want %q line %d msg containing %q", fe.Format, fe.Line, fe.Msg, c.format, c.line, c.msg)
			}
			wantPrefix := "markdown: line " + strconv.Itoa(c.line) + ": invalid " + strings.ToUpper(c.format) + " frontmatter: "
			if !strings.HasPrefix(err.Error(), wantPrefix) {
				t.Errorf("message %q does not start with %q", err.Error(), wantPrefix)
			}
			// The body is still parsed.
			if n == nil {
				t.Fatal("no note returned with the error")
			}
			if n.Frontmatter != nil || n.Aliases != nil || n.Title != "Body title" ||
				!reflect.DeepEqual(n.Tags, []string{"tag"}) || len(n.Links) != 1 || n.Links[0].Target != "Other" {
				t.Errorf("partial note: %s", dump(n))
			}
		})
	}
}
