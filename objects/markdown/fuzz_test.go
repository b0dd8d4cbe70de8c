package markdown

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzParse checks that Parse never panics and that what it returns keeps
// its promises: only *FrontmatterError as an error, always a note, positions
// inside the source and pointing at the link, clean strings, and fields the
// object model accepts.
func FuzzParse(f *testing.F) {
	seeds := []string{
		dailyNote,
		"",
		"---\n---\n",
		"---\ntitle: x\n",
		"+++\na = 1\n+++\n[[A]]",
		"---\na: [1, 2\n---\n",
		"| a |\n|---|\n| [[b\\|c]] |",
		"![[x|y]] [[#^z]] [a](b.md#^c) <http://x> www.y.z #t/u #🎉 ^id",
		"`[[x]]` ```\n[[y]]\n``` #a#b x#y",
		"\xEF\xBB\xBF---\r\ntags: [a]\r\n---\r\n[[\xff\xfe]] #\xff",
		"[[a\tb|c\x01d]] [x](a%zz.md) [y](%00.md)",
		"---\nm: {1: [a, {b: .nan}]}\nd: 2024-01-01\n---\n",
		"- [ ] task ^t1\n  > quote #q [[Q]]\n\n[^1]: foot [[F]]",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		n, err := Parse(src)
		if n == nil {
			t.Fatalf("nil note (err %v)", err)
		}
		if err != nil {
			var fe *FrontmatterError
			if !errors.As(err, &fe) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			if fe.Line < 1 || fe.Line > strings.Count(string(src), "\n")+1 {
				t.Fatalf("error line %d outside the note: %v", fe.Line, err)
			}
		}
		for _, l := range n.Links {
			checkPos(t, src, l.Offset, l.Line)
			if c := src[l.Offset]; c != '[' && c != '!' {
				t.Fatalf("link %+v offset points at %q", l, c)
			}
			for _, s := range []string{l.Target, l.Heading, l.BlockRef, l.Label} {
				checkClean(t, s)
			}
			if l.Target == "" && l.Heading == "" && l.BlockRef == "" {
				t.Fatalf("link to nothing: %+v", l)
			}
		}
		for _, l := range n.External {
			checkPos(t, src, l.Offset, l.Line)
			if !utf8.ValidString(l.URL) {
				t.Fatalf("invalid UTF-8 URL %q", l.URL)
			}
		}
		for _, s := range append(append(append([]string{n.Title}, n.Tags...), n.Aliases...), n.BlockIDs...) {
			checkClean(t, s)
		}
		for _, s := range append(append([]string(nil), n.Tags...), n.Aliases...) {
			if s == "" {
				t.Fatal("empty tag or alias")
			}
		}
		mustNewNote(t, ToNoteFields(n), "")
	})
}

func checkPos(t *testing.T, src []byte, off, line int) {
	t.Helper()
	if off < 0 || off >= len(src) {
		t.Fatalf("offset %d outside the source (%d bytes)", off, len(src))
	}
	if want := strings.Count(string(src[:off]), "\n") + 1; line != want {
		t.Fatalf("offset %d is on line %d, not %d", off, want, line)
	}
}

func checkClean(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 || strings.TrimSpace(s) != s {
		t.Fatalf("unclean string %q", s)
	}
}
