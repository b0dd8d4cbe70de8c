package markdown

import (
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"go.abhg.dev/goldmark/hashtag"
)

// tagExtender installs tagParser in place of hashtag.Extender. Notes are
// never rendered, so no renderer is registered.
type tagExtender struct{}

func (tagExtender) Extend(md goldmark.Markdown) {
	md.Parser().AddOptions(parser.WithInlineParsers(util.Prioritized(tagParser{}, 999)))
}

// tagParser is the hashtag extension's parser, in its Obsidian variant,
// tried only where Obsidian starts a tag: at the start of a line of its
// block or after white space. The extension alone also takes "#b" in "a#b"
// or "(#b)". Checking first also keeps parsing linear: the extension scans
// to the next white space for every '#', which on a long line without
// spaces and with many '#' is quadratic.
type tagParser struct{}

var obsidianTags = &hashtag.Parser{Variant: hashtag.ObsidianVariant}

func (tagParser) Trigger() []byte { return obsidianTags.Trigger() }

func (tagParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	_, seg := block.PeekLine()
	if !tagMayStart(parent, block.Source(), seg.Start) {
		return nil
	}
	return obsidianTags.Parse(parent, block, pc)
}

// tagMayStart reports whether a '#' at offset pos, about to become a child
// of parent, may start a tag.
func tagMayStart(parent ast.Node, src []byte, pos int) bool {
	if pos <= 0 {
		return pos == 0
	}
	prev := parent.LastChild()
	if prev == nil && parent.Type() == ast.TypeBlock {
		return true // first inline of its block: ">#tag", "|#tag|"
	}
	if t, ok := prev.(*ast.Text); ok && (t.SoftLineBreak() || t.HardLineBreak()) {
		return true
	}
	r, _ := utf8.DecodeLastRune(src[:pos])
	return unicode.IsSpace(r)
}
