package markdown

import (
	"bytes"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"go.abhg.dev/goldmark/frontmatter"
	"go.abhg.dev/goldmark/hashtag"
	"go.abhg.dev/goldmark/wikilink"
)

// Note is what Parse finds in a Markdown note. Every string is valid UTF-8;
// titles, tags, aliases, block ids and link fields contain no control
// characters.
type Note struct {
	// Frontmatter is the parsed frontmatter as JSON values (nil, bool,
	// string, int64, float64, map[string]any, []any), every key kept. It is
	// nil when the note has no frontmatter and empty when the block is.
	Frontmatter map[string]any
	// FrontmatterFormat is FormatYAML, FormatTOML or "" (none).
	FrontmatterFormat string
	// Title is the frontmatter "title" when it is a non-blank string,
	// else the text of the first level-1 heading at the top level of the
	// document, else "". Runs of white space are folded to one space.
	Title string
	// Aliases are the frontmatter "aliases" and then "alias" entries:
	// each a string or a list of strings. Duplicates are dropped.
	Aliases []string
	// Tags are the frontmatter "tags" and "tag" entries, then the inline
	// #tags in document order, without '#', deduplicated without regard
	// to case (the first spelling wins), in order of first appearance.
	Tags []string
	// Links are the wikilinks and the Markdown links to local files, in
	// document order, one per occurrence.
	Links []Link
	// External are the links to URLs, in document order.
	External []ExternalLink
	// BlockIDs are the block ids (" ^id" at the end of a line) defined
	// in the note, without '^', in order, without duplicates.
	BlockIDs []string
}

var (
	utf8BOM = []byte("\xEF\xBB\xBF")

	baseExtensions = []goldmark.Extender{
		extension.Table,
		extension.Strikethrough,
		extension.Linkify,
		extension.Footnote,
		&wikilink.Extender{},
		tagExtender{},
	}
	// withFrontmatter parses notes that open with a closed frontmatter
	// block; plain parses the others (see hasClosedFrontmatter). Both are
	// safe for concurrent use: goldmark keeps parse state per call.
	withFrontmatter = goldmark.New(goldmark.WithExtensions(
		append([]goldmark.Extender{&frontmatter.Extender{Formats: frontmatterFormats}}, baseExtensions...)...))
	plain = goldmark.New(goldmark.WithExtensions(baseExtensions...))
)

// Parse parses a Markdown note (Obsidian flavour) and extracts its
// frontmatter, title, aliases, tags, links and block ids. It does no I/O.
//
// The only error is a *FrontmatterError, for frontmatter that does not
// parse or is not a mapping. Parse then still returns the note as read from
// the body, with no frontmatter, title from the first heading, and no
// aliases or frontmatter tags, so that a note with broken frontmatter can
// still be indexed.
func Parse(src []byte) (*Note, error) {
	base := 0
	if bytes.HasPrefix(src, utf8BOM) {
		base = len(utf8BOM)
	}
	body := capQuotes(src[base:])
	md := plain
	if hasClosedFrontmatter(body) {
		md = withFrontmatter
	}
	pc := parser.NewContext()
	doc := md.Parser().Parse(text.NewReader(body), parser.WithContext(pc))

	st := &state{src: body, base: base, lines: lineStarts(src)}
	var fmErr error
	if data := frontmatter.Get(pc); data != nil {
		var raw rawFrontmatter
		if err := data.Decode(&raw); err == nil {
			// The block starts on line 1, so its text starts on line 2.
			m, err := decodeFrontmatter(raw.format, raw.raw, 2)
			if err != nil {
				fmErr = err
			} else {
				st.note.Frontmatter = m
				st.note.FrontmatterFormat = raw.format
				st.fromFrontmatter(m)
			}
		}
	}
	st.walk(doc)
	if st.note.Title == "" {
		st.note.Title = st.h1
	}
	return &st.note, fmErr
}

// MaxQuoteDepth is the deepest blockquote nesting Parse reads: the parser
// takes time quadratic in a line's nesting (a 200 KB line of '>' took half
// a minute), so on a line nested deeper the further markers are read as
// spaces (the same length: offsets and lines stay those of the note).
const MaxQuoteDepth = 64

// capQuotes returns src with the blockquote markers past MaxQuoteDepth on
// each line turned into spaces; src itself when no line nests deeper.
func capQuotes(src []byte) []byte {
	out := src
	for start := 0; start < len(src); {
		end := bytes.IndexByte(src[start:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += start
		}
		i, depth := start, 0
		for n := 0; n < 3 && i < end && src[i] == ' '; n++ {
			i++
		}
		for i < end && src[i] == '>' {
			depth++
			if depth > MaxQuoteDepth {
				if &out[0] == &src[0] {
					out = append([]byte(nil), src...)
				}
				out[i] = ' '
			}
			i++
			for i < end && (src[i] == ' ' || src[i] == '\t') {
				i++
			}
		}
		start = end + 1
	}
	return out
}

// state carries one parse.
type state struct {
	src   []byte // the document without a BOM
	base  int    // offset of src in the caller's bytes
	lines []int  // offsets at which the caller's lines start

	note    Note
	h1      string
	tagSeen map[string]bool
	blockOK map[string]bool
}

func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// position converts an offset into src to an offset into the caller's
// bytes and a 1-based line. An unknown position (-1) gives (-1, 0).
func (s *state) position(off int) (offset, line int) {
	if off < 0 {
		return -1, 0
	}
	offset = off + s.base
	return offset, sort.Search(len(s.lines), func(i int) bool { return s.lines[i] > offset })
}

func (s *state) addTag(tag string) {
	tag = clean(tag)
	if tag == "" {
		return
	}
	key := strings.ToLower(tag)
	if s.tagSeen == nil {
		s.tagSeen = make(map[string]bool)
	}
	if s.tagSeen[key] {
		return
	}
	s.tagSeen[key] = true
	s.note.Tags = append(s.note.Tags, tag)
}

func (s *state) walk(doc ast.Node) {
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch x := n.(type) {
		case *ast.CodeSpan, *ast.CodeBlock, *ast.FencedCodeBlock, *ast.HTMLBlock, *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		case *ast.Heading:
			if x.Level == 1 && s.h1 == "" && x.Parent() == doc {
				s.h1 = foldSpace(plainText(x, s.src))
			}
		case *wikilink.Node:
			s.wikilink(x)
			return ast.WalkSkipChildren, nil
		case *hashtag.Node:
			s.addTag(string(x.Tag))
			return ast.WalkSkipChildren, nil
		case *ast.Link:
			s.markdownLink(x.Destination, plainText(x, s.src), false, x.Pos())
		case *ast.Image:
			s.markdownLink(x.Destination, plainText(x, s.src), true, x.Pos())
		case *ast.AutoLink:
			s.autoLink(x)
		case *ast.Text:
			s.blockID(x)
		}
		return ast.WalkContinue, nil
	})
}

func (s *state) wikilink(n *wikilink.Node) {
	inner := string(n.Target)
	if n.Fragment != nil {
		inner += "#" + string(n.Fragment)
	}
	var label string
	if c, ok := n.FirstChild().(*ast.Text); ok {
		seg := c.Segment
		// The label follows '|' when an alias was written; without one the
		// extension repeats the whole target as the label.
		if seg.Start > 0 && s.src[seg.Start-1] == '|' {
			label = string(seg.Value(s.src))
			// In a GFM table the alias pipe is written "\|": the table
			// keeps the backslash and the wikilink splits after it.
			inner = strings.TrimSuffix(inner, `\`)
		}
	}
	target, heading, block := splitWikilink(inner)
	off, line := s.position(n.Pos())
	s.addLink(Link{
		Kind: KindWikilink, Target: target, Heading: heading, BlockRef: block,
		Label: label, Embed: n.Embed, Line: line, Offset: off,
	})
}

func (s *state) addLink(l Link) {
	l.Target, l.Heading, l.BlockRef, l.Label = clean(l.Target), clean(l.Heading), clean(l.BlockRef), foldSpace(l.Label)
	if l.Target == "" && l.Heading == "" && l.BlockRef == "" {
		return // [[#]] and the like point nowhere
	}
	s.note.Links = append(s.note.Links, l)
}

func (s *state) markdownLink(dest []byte, label string, embed bool, pos int) {
	d := strings.TrimSpace(string(unescape(dest)))
	if d == "" {
		return
	}
	off, line := s.position(pos)
	if isExternal(d) {
		s.note.External = append(s.note.External, ExternalLink{
			URL: validUTF8(d), Label: foldSpace(label), Embed: embed, Line: line, Offset: off,
		})
		return
	}
	target, heading, block := splitLocal(d)
	s.addLink(Link{
		Kind: KindMarkdown, Target: target, Heading: heading, BlockRef: block,
		Label: label, Embed: embed, Line: line, Offset: off,
	})
}

func (s *state) autoLink(n *ast.AutoLink) {
	label := n.Label(s.src)
	pos := n.Pos()
	// A bare URL found by the linkify extension is positioned at the
	// character before it; find the URL itself.
	if pos >= 0 && pos < len(s.src) && s.src[pos] != '<' {
		window := s.src[pos:min(len(s.src), pos+len(label)+8)]
		if i := bytes.Index(window, label); i >= 0 {
			pos += i
		}
	}
	url := string(n.URL(s.src))
	if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(url), "mailto:") {
		url = "mailto:" + url
	}
	off, line := s.position(pos)
	s.note.External = append(s.note.External, ExternalLink{
		URL: validUTF8(url), Label: foldSpace(string(label)), Line: line, Offset: off,
	})
}

// blockIDRe matches a block id at the end of a line: white space (or the
// start of the line), '^', then Latin letters, digits and dashes.
var blockIDRe = regexp.MustCompile(`(?:^|[ \t])\^([A-Za-z0-9-]+)$`)

// blockID records the block id that ends text node t, if any. The id must
// be the last thing on its line in the source and lie inside this text
// node, so that an id inside a code span, a link or HTML does not count.
func (s *state) blockID(t *ast.Text) {
	seg := t.Segment
	rest := s.src[seg.Stop:]
	i := 0
	for i < len(rest) && (rest[i] == ' ' || rest[i] == '\t' || rest[i] == '\r') {
		i++
	}
	if i < len(rest) && rest[i] != '\n' {
		return
	}
	lineStart := bytes.LastIndexByte(s.src[:seg.Stop], '\n') + 1
	line := bytes.TrimRight(s.src[lineStart:seg.Stop], " \t\r")
	m := blockIDRe.FindSubmatchIndex(line)
	if m == nil || lineStart+m[2]-1 < seg.Start { // m[2]-1 is the '^'
		return
	}
	id := string(line[m[2]:m[3]])
	if s.blockOK == nil {
		s.blockOK = make(map[string]bool)
	}
	if !s.blockOK[id] {
		s.blockOK[id] = true
		s.note.BlockIDs = append(s.note.BlockIDs, id)
	}
}

// unescape resolves backslash escapes and entity references, as a
// renderer would in a link destination.
func unescape(b []byte) []byte {
	b = util.UnescapePunctuations(b)
	b = util.ResolveNumericReferences(b)
	return util.ResolveEntityNames(b)
}

// plainText returns the text a reader sees in n's inline content: markup
// dropped, code spans and labels kept, line breaks as spaces.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch x := c.(type) {
		case *ast.Text:
			v := x.Segment.Value(src)
			if !x.IsRaw() {
				v = unescape(v)
			}
			b.Write(v)
			if x.SoftLineBreak() || x.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(x.Value)
		case *ast.AutoLink:
			b.Write(x.Label(src))
		case *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// clean makes s valid UTF-8 without control characters (each becomes a
// space) and trims it.
func clean(s string) string {
	s = validUTF8(s)
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		s = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return ' '
			}
			return r
		}, s)
	}
	return strings.TrimSpace(s)
}

// foldSpace cleans s and folds each run of white space to one space.
func foldSpace(s string) string {
	return strings.Join(strings.Fields(clean(s)), " ")
}
