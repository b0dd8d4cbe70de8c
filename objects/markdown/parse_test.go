package markdown

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// dump renders v as indented JSON for failure messages.
func dump(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func mustParse(t *testing.T, src string) *Note {
	t.Helper()
	n, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return n
}

// noPos drops positions so that cases can list links compactly; positions
// have their own test.
func noPos(ls []Link) []Link {
	var out []Link
	for _, l := range ls {
		l.Line, l.Offset = 0, 0
		out = append(out, l)
	}
	return out
}

// dailyNote is a real-looking Obsidian daily note exercising most features.
const dailyNote = `---
title: 2024-03-14 Daily
aliases:
  - Pi day
  - "Thursday log"
tags: [daily, work/ctxstore]
created: 2024-03-14
rating: 4
---
# Thursday

Met with [[Alice Smith|Alice]] about the [[Project Plan#Goals]] and the
[[Project Plan#^risks-1|risk list]]. #meeting #work/ctxstore #🎯

![[whiteboard.png|400]]
![[Architecture#Storage]]

Inline code is not a link: ` + "`[[Not A Link]]`, `#notatag`" + `.
See [the spec](../specs/store%20spec.md#Bitemporal) and
[XTDB docs](https://docs.xtdb.com/#queries).

` + "```go" + `
// #gofmt [[CodeLink]]
x := "[[also not]]"
` + "```" + `

    indented code #indented [[Indented]]

| Person | Link |
| --- | --- |
| Bob | [[People/Bob Jones\|Bob]] |
| Carol | [[Carol#Contact\|Carol's contact]] |

- [ ] follow up with [[Alice Smith]] #todo ^task-1
- [x] ship it ^task-2

Issue#42 is not a tag, nor is #2024, but #y2024 is.
`

func TestParseDailyNote(t *testing.T) {
	n := mustParse(t, dailyNote)
	want := &Note{
		Frontmatter: map[string]any{
			"title":   "2024-03-14 Daily",
			"aliases": []any{"Pi day", "Thursday log"},
			"tags":    []any{"daily", "work/ctxstore"},
			"created": "2024-03-14",
			"rating":  int64(4),
		},
		FrontmatterFormat: FormatYAML,
		Title:             "2024-03-14 Daily",
		Aliases:           []string{"Pi day", "Thursday log"},
		Tags:              []string{"daily", "work/ctxstore", "meeting", "🎯", "todo", "y2024"},
		Links: []Link{
			{Kind: KindWikilink, Target: "Alice Smith", Label: "Alice", Line: 12, Offset: 151},
			{Kind: KindWikilink, Target: "Project Plan", Heading: "Goals", Line: 12, Offset: 183},
			{Kind: KindWikilink, Target: "Project Plan", BlockRef: "risks-1", Label: "risk list", Line: 13, Offset: 214},
			{Kind: KindWikilink, Target: "whiteboard.png", Label: "400", Embed: true, Line: 15, Offset: 282},
			{Kind: KindWikilink, Target: "Architecture", Heading: "Storage", Embed: true, Line: 16, Offset: 306},
			{Kind: KindMarkdown, Target: "../specs/store spec.md", Heading: "Bitemporal", Label: "the spec", Line: 19, Offset: 394},
			{Kind: KindWikilink, Target: "People/Bob Jones", Label: "Bob", Line: 31, Offset: 628},
			{Kind: KindWikilink, Target: "Carol", Heading: "Contact", Label: "Carol's contact", Line: 32, Offset: 666},
			{Kind: KindWikilink, Target: "Alice Smith", Line: 34, Offset: 725},
		},
		External: []ExternalLink{
			{URL: "https://docs.xtdb.com/#queries", Label: "XTDB docs", Line: 20, Offset: 446},
		},
		BlockIDs: []string{"task-1", "task-2"},
	}
	if !reflect.DeepEqual(n, want) {
		t.Fatalf("got\n%s\nwant\n%s", dump(n), dump(want))
	}
	// Positions point at the link's first byte.
	for _, l := range n.Links {
		if c := dailyNote[l.Offset]; c != '[' && c != '!' {
			t.Errorf("link %+v: offset points at %q", l, c)
		}
	}
}

func TestParseLinks(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []Link
	}{
		{"plain", "See [[Project Plan]].", []Link{{Kind: KindWikilink, Target: "Project Plan"}}},
		{"alias", "[[Project Plan|the plan]]", []Link{{Kind: KindWikilink, Target: "Project Plan", Label: "the plan"}}},
		{"heading", "[[Plan#Goals]]", []Link{{Kind: KindWikilink, Target: "Plan", Heading: "Goals"}}},
		{"nested heading", "[[Plan#Goals#Risks]]", []Link{{Kind: KindWikilink, Target: "Plan", Heading: "Goals#Risks"}}},
		{"heading and alias", "[[Plan#Goals|goals]]", []Link{{Kind: KindWikilink, Target: "Plan", Heading: "Goals", Label: "goals"}}},
		{"block ref", "[[Plan#^abc-1]]", []Link{{Kind: KindWikilink, Target: "Plan", BlockRef: "abc-1"}}},
		{"block ref and alias", "[[Plan#^abc|that]]", []Link{{Kind: KindWikilink, Target: "Plan", BlockRef: "abc", Label: "that"}}},
		{"same-note heading", "[[#Setup]]", []Link{{Kind: KindWikilink, Heading: "Setup"}}},
		{"same-note block", "[[#^b1]]", []Link{{Kind: KindWikilink, BlockRef: "b1"}}},
		{"path target", "[[notes/2024/Plan.md]]", []Link{{Kind: KindWikilink, Target: "notes/2024/Plan.md"}}},
		{"spaces trimmed", "[[ Plan | the plan ]]", []Link{{Kind: KindWikilink, Target: "Plan", Label: "the plan"}}},
		{"embed", "![[diagram.png]]", []Link{{Kind: KindWikilink, Target: "diagram.png", Embed: true}}},
		{"embed note section", "![[Plan#Goals]]", []Link{{Kind: KindWikilink, Target: "Plan", Heading: "Goals", Embed: true}}},
		{"embed with size", "![[diagram.png|300]]", []Link{{Kind: KindWikilink, Target: "diagram.png", Label: "300", Embed: true}}},
		{"two on a line", "[[A]] and [[B]]", []Link{{Kind: KindWikilink, Target: "A"}, {Kind: KindWikilink, Target: "B"}}},
		{"repeated kept", "[[A]] [[A]]", []Link{{Kind: KindWikilink, Target: "A"}, {Kind: KindWikilink, Target: "A"}}},
		{"in heading", "## About [[A]]", []Link{{Kind: KindWikilink, Target: "A"}}},
		{"in list and quote", "- [[A]]\n> [[B]]", []Link{{Kind: KindWikilink, Target: "A"}, {Kind: KindWikilink, Target: "B"}}},
		{"in callout", "> [!note] Title\n> see [[A]]", []Link{{Kind: KindWikilink, Target: "A"}}},
		{"in emphasis", "**[[A]]** _[[B|b]]_", []Link{{Kind: KindWikilink, Target: "A"}, {Kind: KindWikilink, Target: "B", Label: "b"}}},
		{"in footnote", "Text[^1]\n\n[^1]: From [[Source]].", []Link{{Kind: KindWikilink, Target: "Source"}}},

		{"table escaped pipe", "| a | b |\n|---|---|\n| [[Plan\\|the plan]] | x |", []Link{{Kind: KindWikilink, Target: "Plan", Label: "the plan"}}},
		{"table escaped pipe heading", "| a |\n|---|\n| [[Plan#Goals\\|goals]] |", []Link{{Kind: KindWikilink, Target: "Plan", Heading: "Goals", Label: "goals"}}},
		{"table escaped pipe block", "| a |\n|---|\n| ![[Plan#^b1\\|b]] |", []Link{{Kind: KindWikilink, Target: "Plan", BlockRef: "b1", Label: "b", Embed: true}}},
		{"table plain link", "| a |\n|---|\n| [[Plan]] |", []Link{{Kind: KindWikilink, Target: "Plan"}}},

		{"markdown relative", "[plan](Plan.md)", []Link{{Kind: KindMarkdown, Target: "Plan.md", Label: "plan"}}},
		{"markdown dir and percent", "[p](../notes/My%20Plan.md)", []Link{{Kind: KindMarkdown, Target: "../notes/My Plan.md", Label: "p"}}},
		{"markdown angle brackets", "[p](<My Plan.md>)", []Link{{Kind: KindMarkdown, Target: "My Plan.md", Label: "p"}}},
		{"markdown heading", "[g](Plan.md#Goals%20and%20risks)", []Link{{Kind: KindMarkdown, Target: "Plan.md", Heading: "Goals and risks", Label: "g"}}},
		{"markdown block", "[g](Plan.md#^b1)", []Link{{Kind: KindMarkdown, Target: "Plan.md", BlockRef: "b1", Label: "g"}}},
		{"markdown same note", "[up](#Intro)", []Link{{Kind: KindMarkdown, Heading: "Intro", Label: "up"}}},
		{"markdown query dropped", "[q](a.md?plain=1)", []Link{{Kind: KindMarkdown, Target: "a.md", Label: "q"}}},
		{"markdown escapes", `[c](a\(b\).md)`, []Link{{Kind: KindMarkdown, Target: "a(b).md", Label: "c"}}},
		{"markdown absolute path", "[r](/etc/notes.md)", []Link{{Kind: KindMarkdown, Target: "/etc/notes.md", Label: "r"}}},
		{"markdown image", "![a chart](img/chart.png)", []Link{{Kind: KindMarkdown, Target: "img/chart.png", Label: "a chart", Embed: true}}},
		{"markdown reference", "[the plan][p]\n\n[p]: Plan.md", []Link{{Kind: KindMarkdown, Target: "Plan.md", Label: "the plan"}}},
		{"markdown label markup", "[**bold** `x`](a.md)", []Link{{Kind: KindMarkdown, Target: "a.md", Label: "bold x"}}},
		{"markdown windows path", `[w](C:/notes/a.md)`, []Link{{Kind: KindMarkdown, Target: "C:/notes/a.md", Label: "w"}}},

		{"inline code", "`[[Not]]` and `[x](y.md)`", nil},
		{"double backtick code", "``a [[Not]] ` b``", nil},
		{"fenced code", "```\n[[Not]]\n```", nil},
		{"tilde fence", "~~~md\n[x](y.md)\n~~~", nil},
		{"indented code", "    [[Not]]", nil},
		{"code in list", "- item\n\n      [[Not]]", nil},
		{"html block", "<div>\n[[Not]]\n</div>", nil},
		{"html comment", "a <!-- [[Not]] --> b", nil},
		{"escaped bracket", `\[[Not]]`, nil},
		{"empty", "[[]] [[|x]] [[a|]] [[#]]", nil},
		{"unclosed", "[[a\nb]]", nil},
		{"unescaped pipe in table splits the cell", "| a | b |\n|---|---|\n| [[Plan|p]] | x |", nil},
		{"external only", "[x](https://example.com/a.md) <https://example.com> ![i](http://x/i.png)", nil},
		{"unused reference definition", "[p]: Plan.md", nil},
		{"footnote is not a link", "a[^1]\n\n[^1]: text", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := mustParse(t, c.src)
			if got := noPos(n.Links); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("links of %q:\ngot  %s\nwant %s", c.src, dump(got), dump(c.want))
			}
		})
	}
}

func TestParseExternal(t *testing.T) {
	src := "[docs](https://go.dev/doc/#x) ![logo](https://go.dev/logo.png)\n" +
		"<https://example.com/a> <me@example.com> www.example.org and https://bare.example/p#frag\n" +
		"[mail](mailto:a@b.c) [vault](obsidian://open?vault=v) [proto](//cdn.example/x.js)\n" +
		"`https://in.code/`\n"
	n := mustParse(t, src)
	// at gives the position of the first occurrence of marker in src.
	at := func(marker string) (line, off int) {
		off = strings.Index(src, marker)
		return strings.Count(src[:off], "\n") + 1, off
	}
	ext := func(url, label string, embed bool, marker string) ExternalLink {
		line, off := at(marker)
		return ExternalLink{URL: url, Label: label, Embed: embed, Line: line, Offset: off}
	}
	want := []ExternalLink{
		ext("https://go.dev/doc/#x", "docs", false, "[docs]"),
		ext("https://go.dev/logo.png", "logo", true, "![logo]"),
		ext("https://example.com/a", "https://example.com/a", false, "<https://example.com/a>"),
		ext("mailto:me@example.com", "me@example.com", false, "<me@"),
		ext("http://www.example.org", "www.example.org", false, "www."),
		ext("https://bare.example/p#frag", "https://bare.example/p#frag", false, "https://bare"),
		ext("mailto:a@b.c", "mail", false, "[mail]"),
		ext("obsidian://open?vault=v", "vault", false, "[vault]"),
		ext("//cdn.example/x.js", "proto", false, "[proto]"),
	}
	if !reflect.DeepEqual(n.External, want) {
		t.Fatalf("got\n%s\nwant\n%s", dump(n.External), dump(want))
	}
	if n.Links != nil {
		t.Errorf("external links leaked into Links: %s", dump(n.Links))
	}
	if n.Tags != nil {
		t.Errorf("a URL fragment became a tag: %v", n.Tags)
	}
}

func TestParseTags(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"simple", "#idea and #todo", []string{"idea", "todo"}},
		{"line start", "#idea\n#todo", []string{"idea", "todo"}},
		{"nested", "#project/ctxstore/notes", []string{"project/ctxstore/notes"}},
		{"dash underscore digits", "#v2-beta_1", []string{"v2-beta_1"}},
		{"unicode", "#日本語 #café #Straße", []string{"日本語", "café", "Straße"}},
		{"emoji", "#🎉 #done✅ #👩‍💻", []string{"🎉", "done✅", "👩‍💻"}},
		{"digits only", "#2024 #123/456x #1984", []string{"123/456x"}},
		{"punctuation ends", "#tag. #other, (#paren) #end!", []string{"tag", "other", "end"}},
		{"mid-word", "Issue#42 a#b C# x#y", nil},
		{"after markup", "*#em* **#strong**", nil},
		{"in heading", "## Plans #draft", []string{"draft"}},
		{"heading is not a tag", "# Heading\n## Two", nil},
		{"in list and quote", "- #a\n> #b\n>#c", []string{"a", "b", "c"}},
		{"in table", "| x | y |\n|---|---|\n| #a | b #c |", []string{"a", "c"}},
		{"dedup case-insensitive", "#Todo #todo #TODO #other #Other", []string{"Todo", "other"}},
		{"code span", "`#notatag` #yes", []string{"yes"}},
		{"fenced code", "```sh\n# comment\n#notatag\n```\n#yes", []string{"yes"}},
		{"indented code", "    #notatag\n\n#yes", []string{"yes"}},
		{"escaped", `\#notatag #yes`, []string{"yes"}},
		{"in wikilink", "[[Note#Heading]] [[x|#label]]", nil},
		{"in markdown link destination", "[x](a.md#heading)", nil},
		{"in url", "https://example.com/page#section", nil},
		{"html comment", "a <!-- #hidden --> #shown", []string{"shown"}},
		{"html block", "<!-- #hidden -->\n\n#shown", []string{"shown"}},
		{"bare hash", "# \n a # b", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := mustParse(t, c.src)
			if !reflect.DeepEqual(n.Tags, c.want) {
				t.Fatalf("tags of %q: got %q, want %q", c.src, n.Tags, c.want)
			}
		})
	}
}

func TestParseTitle(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want string
	}{
		{"frontmatter", "---\ntitle: From FM\n---\n# From H1", "From FM"},
		{"toml frontmatter", "+++\ntitle = \"From TOML\"\n+++\n# From H1", "From TOML"},
		{"h1", "Intro\n\n## Two\n\n# The *Real* `Title` [[Link|L]] #tag\n\n# Second", "The Real Title L #tag"},
		{"setext h1", "My Note\n=======\n", "My Note"},
		{"setext two lines", "My\nNote\n===\n", "My Note"},
		{"blank frontmatter title", "---\ntitle: \"  \"\n---\n# H1", "H1"},
		{"non-string frontmatter title", "---\ntitle: 1984\n---\n# H1", "H1"},
		{"multi-line frontmatter title", "---\ntitle: |\n  two\n  lines\n---\n", "two lines"},
		{"only h2", "## Not a title", ""},
		{"h1 in quote does not count", "> # Quoted\n", ""},
		{"h1 in code does not count", "```\n# code\n```", ""},
		{"escapes and entities", `# A \*b\* &amp; c`, "A *b* & c"},
		{"none", "just text", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustParse(t, c.src).Title; got != c.want {
				t.Fatalf("title of %q: got %q, want %q", c.src, got, c.want)
			}
		})
	}
}

func TestParseBlockIDs(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"paragraph", "Some claim. ^claim-1", []string{"claim-1"}},
		{"trailing space", "Some claim. ^c1  ", []string{"c1"}},
		{"own line after paragraph", "Some claim.\n^c2", []string{"c2"}},
		{"list items", "- one ^i1\n- two ^i2\n  - nested ^i3", []string{"i1", "i2", "i3"}},
		{"quote", "> quoted ^q1", []string{"q1"}},
		{"after link", "see [[A]] ^l1", []string{"l1"}},
		{"after code span", "run `ls` ^k1", []string{"k1"}},
		{"crlf", "line ^r1\r\nnext", []string{"r1"}},
		{"duplicates", "a ^d\n\nb ^d", []string{"d"}},
		{"not at line end", "a ^x b", nil},
		{"no space before", "word^x", nil},
		{"bad chars", "a ^x_y", nil},
		{"inside code span", "`a ^x`", nil},
		{"inside code span at end", "text `^x`", nil},
		{"fenced", "```\na ^x\n```", nil},
		{"inside link label", "[a ^x](b.md)", nil},
		{"inside wikilink alias", "[[a|b ^x]]", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustParse(t, c.src).BlockIDs; !reflect.DeepEqual(got, c.want) {
				t.Fatalf("block ids of %q: got %q, want %q", c.src, got, c.want)
			}
		})
	}
}

func TestParsePositions(t *testing.T) {
	// A BOM, CRLF line ends and frontmatter must not shift positions.
	src := "\xEF\xBB\xBF---\r\ntags: [a]\r\n---\r\nx [[A]]\r\n\r\n  ![[B]] [c](c.md)\r\n"
	n := mustParse(t, src)
	if !reflect.DeepEqual(n.Tags, []string{"a"}) {
		t.Fatalf("frontmatter after a BOM not read: %s", dump(n))
	}
	want := []struct{ line, off int }{{4, 26}, {6, 37}, {6, 44}}
	if len(n.Links) != len(want) {
		t.Fatalf("got %s", dump(n.Links))
	}
	for i, w := range want {
		l := n.Links[i]
		if l.Line != w.line || l.Offset != w.off {
			t.Errorf("link %d (%s): line %d offset %d, want line %d offset %d", i, l.Target, l.Line, l.Offset, w.line, w.off)
		}
		if c := src[l.Offset]; c != '[' && c != '!' {
			t.Errorf("link %d: offset points at %q", i, c)
		}
	}
}

func TestParseEmptyAndPlain(t *testing.T) {
	for _, src := range []string{"", "\n", "plain text only", "\xEF\xBB\xBF"} {
		n := mustParse(t, src)
		if !reflect.DeepEqual(n, &Note{}) {
			t.Errorf("Parse(%q) = %s, want an empty note", src, dump(n))
		}
	}
}

func TestParseConcurrent(t *testing.T) {
	want := mustParse(t, dailyNote)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				n, err := Parse([]byte(dailyNote))
				if err != nil || !reflect.DeepEqual(n, want) {
					t.Errorf("concurrent Parse differs: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestParseDoesNotModifyInput(t *testing.T) {
	src := []byte(dailyNote)
	Parse(src)
	if string(src) != dailyNote {
		t.Fatal("Parse modified its input")
	}
	if !strings.Contains(dailyNote, "[[People/Bob Jones\\|Bob]]") {
		t.Fatal("fixture lost its escaped pipe")
	}
}

// Blockquotes nested past MaxQuoteDepth on a line are read as if their
// further markers were spaces: a 200 KB line of '>' parses at once (it
// took half a minute), links within the limit and after the line are
// found at their own offsets and lines.
func TestParseDeepBlockquote(t *testing.T) {
	deep := strings.Repeat(">", 200_000) + " [[Lost]]\n"
	within := strings.Repeat("> ", MaxQuoteDepth) + "[[Kept]]\n"
	src := "# Title\n" + deep + within + "after [[Next]]\n"
	start := time.Now()
	n, err := Parse([]byte(src))
	if took := time.Since(start); err != nil || took > 2*time.Second {
		t.Fatalf("Parse: %v after %s", err, took)
	}
	if n.Title != "Title" {
		t.Errorf("title %q", n.Title)
	}
	var got []string
	for _, l := range n.Links {
		got = append(got, l.Target)
		if l.Target == "Next" && (l.Line != 4 || l.Offset != strings.Index(src, "[[Next]]")) {
			t.Errorf("link after the deep line at line %d offset %d", l.Line, l.Offset)
		}
	}
	if !slices.Contains(got, "Kept") || !slices.Contains(got, "Next") {
		t.Errorf("links %v", got)
	}
}
