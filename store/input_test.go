package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/store"
)

func TestCheckNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "1.0", "1.5", "0.1", "-2.5e-7", "9007199254740992", "-9007199254740992",
		"1e21", "1.5e300", "1E5", "5e-324", "1.7976931348623157e308", "0.30000000000000004"} {
		if err := store.CheckNumber(s); err != nil {
			t.Errorf("CheckNumber(%s) = %v, want accepted", s, err)
		}
	}
	for s, want := range map[string]string{
		"9007199254740993":         "beyond",
		"18446744073709551616":     "beyond",
		"-9007199254740993":        "beyond",
		"1.2345678901234567e19":    "whole number beyond",
		"12345678901234567000.0":   "whole number beyond",
		"1e20":                     "whole number beyond",
		"1e400":                    "not a finite",
		"-1e400":                   "not a finite",
		"1e-400":                   "would be stored as 0",
		"0.1000000000000000000001": "would be stored as 0.1",
		"3.14159265358979323846":   "would be stored as 3.141592653589793",
	} {
		err := store.CheckNumber(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckNumber(%s) = %v, want an error saying %q", s, err, want)
		}
	}
}

func TestDecodeDocRefusesPoison(t *testing.T) {
	for in, want := range map[string][]string{
		`{"xt/id":"f","n":1.2345678901234567e19}`:      {`"n"`, "1.2345678901234567e19"},
		`{"xt/id":"f","a":{"b":[1,9007199254740993]}}`: {`"a.b[1]"`, "9007199254740993"},
		`{"xt/id":"f","xt/id":"g"}`:                    {`duplicate key "xt/id"`, "byte 13"},
		`{"xt/id":"f","o":{"k":1,"\u006b":2}}`:         {`"o.k"`, `duplicate key "k"`},
		`{"xt/id":"f","l":[{"a":1},{"a":1,"a":2}]}`:    {`"l[1].a"`, "duplicate"},
		"{\"xt/id\":\"f\",\"s\":\"ok \xff\"}":          {"invalid UTF-8 at byte 21"},
		"{\"xt/id\":\"f\xc3\"}":                        {"invalid UTF-8 at byte 11"},
	} {
		_, err := store.DecodeDoc([]byte(in))
		if err == nil {
			t.Errorf("DecodeDoc(%s) accepted it", in)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("DecodeDoc(%s) = %q, want it to name %s", in, err, w)
			}
		}
	}
	for _, in := range []string{`{"xt/id":"f","a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]}`, `{"xt/id":"f","k":"\"k\"","k\\":1}`} {
		if _, err := store.DecodeDoc([]byte(in)); err != nil {
			t.Errorf("DecodeDoc(%s) = %v", in, err)
		}
	}
}

// TestStoredFormReadable: the canonical form of every accepted document is
// accepted again, so an export can always be imported.
func TestStoredFormReadable(t *testing.T) {
	for _, in := range []string{`{"xt/id":"f","n":1e21,"m":-0,"k":0.1,"big":9007199254740992,"e":1.5e300}`} {
		doc, err := store.DecodeDoc([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		c, err := store.Canonical(doc)
		if err != nil {
			t.Fatal(err)
		}
		back, err := store.DecodeDoc(c)
		if err != nil || !store.SameDoc(doc, back) {
			t.Errorf("canonical %s: DecodeDoc = %v, %v", c, back, err)
		}
	}
}

// TestValidateGoValues: documents built from Go values follow the same
// number rule as JSON text.
func TestValidateGoValues(t *testing.T) {
	for _, v := range []any{int64(1 << 53), -int64(1 << 53), uint64(1 << 53), 1e21, 0.1, float32(1.5), 5e-324} {
		if err := store.ValidateValue(map[string]any{"n": v}); err != nil {
			t.Errorf("ValidateValue(%T %v) = %v", v, v, err)
		}
	}
	for _, v := range []any{int64(1<<53 + 1), uint64(1 << 60), uint(1 << 63), 1e20, 1.2345678901234567e19, int(-1 << 62)} {
		if err := store.ValidateValue(map[string]any{"n": v}); err == nil || !strings.Contains(err.Error(), `"n"`) {
			t.Errorf("ValidateValue(%T %v) = %v, want an error naming n", v, v, err)
		}
	}
}

func TestValidateValuePath(t *testing.T) {
	v := map[string]any{"args": map[string]any{"n": json.Number("18446744073709551616"), "ok": json.Number("2"), "l": []any{1.5, json.Number("1e400")}}}
	err := store.ValidateValue(v)
	var ve *store.ValueError
	if !errors.As(err, &ve) || (ve.Path != "args.n" && ve.Path != "args.l[1]") {
		t.Fatalf("ValidateValue = %v, want a *ValueError at args.n or args.l[1]", err)
	}
}

func TestCheckReserved(t *testing.T) {
	ctx := context.Background()
	cursor := store.Doc{store.IDKey: store.ReservedPrefix + "cursor:x"}
	for _, op := range []store.Op{store.Put(cursor), store.Delete(store.ReservedPrefix + "cursor:x"), store.Evict(store.ReservedPrefix + "x")} {
		err := store.CheckReserved(ctx, []store.Op{store.Put(store.Doc{store.IDKey: "a"}), op})
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "op 2") || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("CheckReserved(%s) = %v", op.Kind, err)
		}
		if err := store.CheckReserved(store.WithReservedWrites(ctx), []store.Op{op}); err != nil {
			t.Errorf("CheckReserved(%s) with WithReservedWrites = %v", op.Kind, err)
		}
	}
	if err := store.CheckReserved(ctx, []store.Op{store.Match(store.ReservedPrefix+"x", nil)}); err != nil {
		t.Errorf("a match of a reserved id is a read: %v", err)
	}
}

// FuzzDecodeDoc: DecodeDoc never panics, and what it accepts has a
// canonical form that DecodeDoc accepts again as the same document (so
// nothing accepted can become unreadable or unimportable).
func FuzzDecodeDoc(f *testing.F) {
	for _, s := range []string{`{"xt/id":"a","n":1}`, `{"xt/id":"a","n":1.2345678901234567e19}`, `{"xt/id":"a","xt/id":"b"}`,
		`{"xt/id":"a","o":{"k":[1,2,{"z":null}]},"s":"\u2028<>&"}`, `{"xt/id":"a","n":1e21,"m":-0.0}`, "{\"xt/id\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := store.DecodeDoc(data)
		if err != nil {
			return
		}
		c, err := store.Canonical(doc)
		if err != nil {
			t.Fatalf("accepted %q but Canonical fails: %v", data, err)
		}
		back, err := store.DecodeDoc(c)
		if err != nil {
			t.Fatalf("accepted %q but not its canonical form %s: %v", data, c, err)
		}
		if !store.SameDoc(doc, back) {
			t.Fatalf("canonical form %s of %q reads back as another document", c, data)
		}
	})
}
