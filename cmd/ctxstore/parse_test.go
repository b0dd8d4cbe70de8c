package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/store"
)

func TestParseWhere(t *testing.T) {
	n := func(s string) json.Number { return json.Number(s) }
	good := []struct {
		in   string
		want store.Pred
	}{
		{"name=Ada", store.Pred{Field: "name", Op: store.Eq, Value: "Ada"}},
		{`name="42"`, store.Pred{Field: "name", Op: store.Eq, Value: "42"}},
		{"age=42", store.Pred{Field: "age", Op: store.Eq, Value: n("42")}},
		{"ok=true", store.Pred{Field: "ok", Op: store.Eq, Value: true}},
		{"code=007", store.Pred{Field: "code", Op: store.Eq, Value: "007"}},
		{"title=a=b", store.Pred{Field: "title", Op: store.Eq, Value: "a=b"}},
		{"empty=", store.Pred{Field: "empty", Op: store.Eq, Value: ""}},
		{`tag=["a",2]`, store.Pred{Field: "tag", Op: store.In, Values: []any{"a", n("2")}}},
		{"n<5", store.Pred{Field: "n", Op: store.Lt, Value: n("5")}},
		{"n<-5", store.Pred{Field: "n", Op: store.Lt, Value: n("-5")}},
		{"n<=5.5", store.Pred{Field: "n", Op: store.Lte, Value: n("5.5")}},
		{"n>5", store.Pred{Field: "n", Op: store.Gt, Value: n("5")}},
		{"s>=m", store.Pred{Field: "s", Op: store.Gte, Value: "m"}},
		{"n?", store.Pred{Field: "n", Op: store.Exists}},
		{"links@=doc-1", store.Pred{Field: "links", Op: store.RefBy, Value: "doc-1"}},
		{`links@="doc 1"`, store.Pred{Field: "links", Op: store.RefBy, Value: "doc 1"}},
		{"a/b.c=1", store.Pred{Field: "a/b.c", Op: store.Eq, Value: n("1")}},
	}
	for _, g := range good {
		got, err := parseWhere(g.in)
		if err != nil || !reflect.DeepEqual(got, g.want) {
			t.Errorf("parseWhere(%q) = %#v, %v; want %#v", g.in, got, err, g.want)
		}
	}
	for _, in := range []string{"", "name", "=x", "n?x", "n@x", "n@=", "n!=3", "n=null", `n={"a":1}`, "n<[1]", "n=[]", "tags=[a,b]", "m={x}"} {
		_, err := parseWhere(in)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("parseWhere(%q): %v, want a usage error", in, err)
		}
	}
}

func TestParseOrder(t *testing.T) {
	for in, want := range map[string]store.Order{
		"n": {Field: "n"}, "n:desc": {Field: "n", Desc: true}, "n:ASC": {Field: "n"},
		"a:b": {Field: "a:b"}, "a:b:desc": {Field: "a:b", Desc: true},
	} {
		if got, err := parseOrder(in); err != nil || got != want {
			t.Errorf("parseOrder(%q) = %+v, %v", in, got, err)
		}
	}
	if _, err := parseOrder(":desc"); err == nil {
		t.Error("parseOrder(:desc) succeeded")
	}
}

func TestParseLocation(t *testing.T) {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	good := map[string]location{
		"":                                       {backend: backendSQLite, path: abs(".ctxstore/store.db"), isDefault: true},
		":memory:":                               {backend: backendSQLite, path: ":memory:"},
		"sqlite::memory:":                        {backend: backendSQLite, path: ":memory:"},
		"x.db":                                   {backend: backendSQLite, path: abs("x.db")},
		"dir/X.DB":                               {backend: backendSQLite, path: abs("dir/X.DB")},
		"sqlite:rel/s.sqlite":                    {backend: backendSQLite, path: abs("rel/s.sqlite")},
		"file:/abs/s":                            {backend: backendSQLite, path: "/abs/s"},
		"file:///abs/s.db":                       {backend: backendSQLite, path: "/abs/s.db"},
		"sqlite://localhost/a.db":                {backend: backendSQLite, path: "/a.db"},
		"http://localhost:3000/":                 {backend: backendXTDB, url: "http://localhost:3000"},
		"postgres://u@db:5432/ctx":               {backend: backendPostgres, url: "postgres://u@db:5432/ctx"},
		"postgresql:///ctx?host=/run/postgresql": {backend: backendPostgres, url: "postgresql:///ctx?host=/run/postgresql"},
		"HTTPS://xt.example:443":                 {backend: backendXTDB, url: "HTTPS://xt.example:443"},
	}
	for in, want := range good {
		if got, err := parseLocation(in); err != nil || got != want {
			t.Errorf("parseLocation(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"store", "x.sqlite", "ftp://h/x.db", "sqlite:", "file://remote/x.db", "sqlite:x.db?mode=ro", "http://", "postgres:///ctx"} {
		_, err := parseLocation(in)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("parseLocation(%q): %v, want a usage error", in, err)
		}
	}
}

func TestDecodeLines(t *testing.T) {
	docs, err := decodeLines("d.jsonl", []byte("\uFEFF{\"xt/id\":\"a\"}\r\n\n  \n{\"xt/id\":\"b\"}"))
	if err != nil || len(docs) != 2 || docs[1]["xt/id"] != "b" {
		t.Fatalf("decodeLines = %v, %v", docs, err)
	}
	var b strings.Builder
	for range 15 {
		b.WriteString("{}\n")
	}
	_, err = decodeLines("d.jsonl", []byte(b.String()))
	msg := err.Error()
	if !strings.Contains(msg, "d.jsonl:1: ") || !strings.Contains(msg, "d.jsonl:10: ") || strings.Contains(msg, "d.jsonl:11: ") || !strings.Contains(msg, "5 more") {
		t.Errorf("decodeLines error:\n%s", msg)
	}
}

// put refuses the ids the documented limits forbid, naming the field, and
// a lone surrogate escape (which would make "k\ud800" and "k\udfff" one
// id), naming the byte; nothing is decoded from such a file.
func TestPutIDLimits(t *testing.T) {
	long := strings.Repeat("x", 600)
	for _, c := range []struct{ doc, want string }{
		{`{"xt/id":"a\u0000b"}`, `field "xt/id"`},
		{`{"xt/id":"a\u001bb"}`, `field "xt/id"`},
		{`{"xt/id":"a\u007f"}`, `field "xt/id"`},
		{`{"xt/id":"` + long + `"}`, `field "xt/id": the id is 600 bytes`},
		{`{"xt/id":"k\ud800"}`, `byte 11: the escape \ud800`},
		{`{"xt/id":"k\udfff"}`, `\udfff`},
		{`{"xt/id":"k","v":"\ud800x"}`, `\ud800`},
	} {
		if _, err := decodeOne("d.json", []byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("put %.40s: %v, want an error with %q", c.doc, err, c.want)
		}
		if _, err := decodeLines("d.jsonl", []byte(`{"xt/id":"ok"}`+"\n"+c.doc+"\n")); err == nil || !strings.Contains(err.Error(), "d.jsonl:2: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("put --lines %.40s: %v, want line 2 and %q", c.doc, err, c.want)
		}
	}
	for _, ok := range []string{`{"xt/id":"k\ud83d\ude00"}`, `{"xt/id":"` + long[:512] + `"}`, `{"xt/id":"caf\u00e9 x@y"}`} {
		if _, err := decodeOne("d.json", []byte(ok)); err != nil {
			t.Errorf("put %.40s: %v", ok, err)
		}
	}
}

func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	st := "--store=" + filepath.Join(dir, "s.db")
	cases := []struct {
		args  []string
		stdin string
		code  int
	}{
		{[]string{"help"}, "", exitOK},
		{[]string{"put", "--help"}, "", exitOK},
		{nil, "", exitUsage},
		{[]string{"nope"}, "", exitUsage},
		{[]string{st, "put", "--nope"}, "", exitUsage},
		{[]string{st, "get", "a"}, "", exitError}, // no store yet
		{[]string{st, "put"}, `{"xt/id": "a"}`, exitOK},
		{[]string{st, "get", "a"}, "", exitOK},
		{[]string{st, "get", "b"}, "", exitError},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, strings.NewReader(c.stdin), &out, &errb)
		if code != c.code {
			t.Errorf("run %q: exit %d, want %d\nstdout: %s\nstderr: %s", c.args, code, c.code, out.String(), errb.String())
		}
		if code != exitOK && !strings.HasPrefix(errb.String(), "ctxstore: ") {
			t.Errorf("run %q: stderr %q", c.args, errb.String())
		}
	}
}

func TestTermSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text é ✓":         "plain text é ✓",
		"a\x1b[2Jb":              `a\u001b[2Jb`,
		"tab\there":              `tab\u0009here`,
		"rtl\u202eevil":          `rtl\u202eevil`,
		"c1\u009bx":              `c1\u009bx`,
		"bad\xffbyte":            `bad\xffbyte`,
		"line\nbreak\x07":        `line\u000abreak\u0007`,
		"del\x7f and ls \u2028.": `del\u007f and ls \u2028.`,
	} {
		if got := termSafe(in, false); got != want {
			t.Errorf("termSafe(%q) = %q, want %q", in, got, want)
		}
	}
	if got := termSafe("a\n\tb\x1b", true); got != "a\n\tb\\u001b" {
		t.Errorf("termSafe keeping newlines = %q", got)
	}
	var b bytes.Buffer
	fmt.Fprintf(termSafeWriter{&b}, "name %s\n", "x\x1b]0;t\x07")
	if b.String() != "name x\\u001b]0;t\\u0007\n" {
		t.Errorf("termSafeWriter wrote %q", b.String())
	}
}
