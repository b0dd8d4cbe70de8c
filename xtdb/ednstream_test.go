package xtdb

import (
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// TestSeqReader: the elements of a top-level list or vector come out one
// by one, parsed as readEDN parses them, whatever they contain (brackets
// inside strings, escaped quotes, tags, nested collections, comments).
func TestSeqReader(t *testing.T) {
	elems := []string{
		`{:xtdb.api/tx-id 1, :xtdb.api/tx-time #inst "2020-01-01T00:00:00.000-00:00"}`,
		`{:a "x ) ] } \" \\", :b [1 2 (3 4)], :c #{:k}}`,
		`#xtdb/id "0123456789abcdef0123456789abcdef01234567"`,
		`"str"`, `42`, `-1.5`, `nil`, `:kw`, `[]`, `{}`,
	}
	for _, open := range []string{"(", "["} {
		closer := map[string]string{"(": ")", "[": "]"}[open]
		src := " " + open + strings.Join(elems, " ,\n; comment ]\n ") + closer + "\n"
		sr := newSeqReader(strings.NewReader(src))
		for i, e := range elems {
			got, ok, err := sr.next()
			if err != nil || !ok {
				t.Fatalf("%s element %d: %v, %v", open, i, ok, err)
			}
			want, err := readEDN([]byte(e))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s element %d = %#v, want %#v", open, i, got, want)
			}
		}
		if _, ok, err := sr.next(); ok || err != nil {
			t.Errorf("%s: after the last element: %v, %v", open, ok, err)
		}
	}
	for _, src := range []string{"()", "[]", " nil"} {
		if _, ok, err := newSeqReader(strings.NewReader(src)).next(); ok || err != nil {
			t.Errorf("%q: %v, %v", src, ok, err)
		}
	}
	// A cut answer is an error, not a short page.
	sr := newSeqReader(strings.NewReader(`({:a 1} {:b "x`))
	if _, ok, err := sr.next(); !ok || err != nil {
		t.Fatalf("first: %v %v", ok, err)
	}
	if _, _, err := sr.next(); err == nil || !strings.Contains(err.Error(), io.ErrUnexpectedEOF.Error()) && !strings.Contains(err.Error(), "EOF") {
		t.Errorf("cut answer: %v", err)
	}
	if _, _, err := newSeqReader(strings.NewReader(`{:a 1}`)).next(); err == nil {
		t.Error("a map is not a sequence")
	}
}

// TestSeqReaderStopsEarly: the reader consumes no more of the stream than
// the elements asked for (plus its buffer), so a page of a long tx log
// costs the page.
func TestSeqReaderStopsEarly(t *testing.T) {
	r := &countingReader{r: io.MultiReader(strings.NewReader("("), infinite{`{:a 1} `})}
	sr := newSeqReader(r)
	for i := 0; i < 10; i++ {
		if _, ok, err := sr.next(); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if r.n > 256<<10 {
		t.Errorf("read %d bytes for 10 elements", r.n)
	}
}

type infinite struct{ s string }

func (f infinite) Read(p []byte) (int, error) {
	n := 0
	for n+len(f.s) <= len(p) {
		n += copy(p[n:], f.s)
	}
	if n == 0 {
		n = copy(p, f.s)
	}
	return n, nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestEDNTxBody: the submit body spells keys as keywords, integers as
// longs and other numbers as doubles, and refuses (for the JSON fallback)
// a key no keyword can spell.
func TestEDNTxBody(t *testing.T) {
	vt := mustTime(t, "2020-01-02T03:04:05.006Z")
	body, err := ednTxBody([]store.Op{
		store.PutAt(store.Doc{"xt/id": "a\"b", "n": 1, "j": json.Number("7"), "f": 2.0, "g": 0.5, "e": json.Number("1e3"),
			"m": map[string]any{"ns/k": []any{nil, true}}}, vt),
		store.DeleteRange("d", vt, &vt), store.Match("m", nil), store.Evict("e"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{:tx-ops [[:xtdb.api/put {:e 1000, :f 2, :g 0.5, :j 7, :m {:ns/k [nil true]}, :n 1, :xt/id "a\"b"} #inst "2020-01-02T03:04:05.006Z"]` +
		` [:xtdb.api/delete "d" #inst "2020-01-02T03:04:05.006Z" #inst "2020-01-02T03:04:05.006Z"] [:xtdb.api/match "m" nil] [:xtdb.api/evict "e"]]}`
	if body != want {
		t.Errorf("body\n%s\nwant\n%s", body, want)
	}
	for k, ok := range map[string]bool{"a": true, "snake_case": true, "ns/name": true, "kebab-case?": true, "é": true,
		"a b": false, "1a": false, "-1": false, "a/b/c": false, "/a": false, "a:": false, "a::b": false, "a,b": false,
		"(x)": false, "": false, ":a": false, "a\"": false, "#a": false} {
		if got := ednKeywordName(k); got != ok {
			t.Errorf("ednKeywordName(%q) = %v", k, got)
		}
	}
	body, err = ednTxBody([]store.Op{store.Put(store.Doc{"xt/id": "x", "a b": 1, "/src/a.go": map[string]any{"1": 2}})})
	if err != nil || body != `{:tx-ops [[:xtdb.api/put {"/src/a.go" {"1" 2}, "a b" 1, :xt/id "x"}]]}` {
		t.Errorf("keys no keyword spells: %s, %v", body, err)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
