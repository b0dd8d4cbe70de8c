package canonjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// reference is what Append must equal: encoding/json, then jcs.
func reference(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(raw)
}

func check(t *testing.T, v any) {
	t.Helper()
	want, werr := reference(v)
	got, gerr := Append(nil, v)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%#v: error %v, reference error %v", v, gerr, werr)
	}
	if werr == nil && !bytes.Equal(got, want) {
		t.Fatalf("%#v:\n got %s\nwant %s", v, got, want)
	}
	if werr != nil {
		return
	}
	var b bytes.Buffer
	if err := Write(&b, v); err != nil || !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("Write %#v: %s, %v", v, b.Bytes(), err)
	}
	if s, err := String(v); err != nil || s != string(want) {
		t.Fatalf("String %#v: %s, %v", v, s, err)
	}
}

func TestSameAsMarshalAndTransform(t *testing.T) {
	for _, v := range []any{
		nil, true, false, "", "a\"b\\c\n\t\r\b\f\x01\x1f\x7f <>& \u2028\u2029 é 😀",
		"bad \xff utf8 \xe2\x82 end", "\xed\xa0\x80",
		json.Number("1"), json.Number("-0"), json.Number("1.50"), json.Number("1e21"), json.Number("1E-7"),
		json.Number("123456789012345678901234567890"), json.Number(""), json.Number("01"), json.Number("1e400"), json.Number("abc"),
		1.0, 0.1, -1e-7, 1e21, 1e300, 123456789.125, int(7), int64(-3), int32(4), uint64(1) << 60,
		float32(0.1), []string{"x"}, map[string]int{"b": 1, "a": 2}, json.RawMessage(`{"b":1,"a":[1.0,2e0]}`),
		map[string]any{}, []any{}, map[string]any(nil), []any(nil),
		map[string]any{"b": 1.0, "a": []any{"x", nil, map[string]any{"\U0001F600": 1.0, "\uFFFD": 2.0, "\uE000": 3.0, "z": 4.0}}},
		map[string]any{"\U0001F600": 1.0, "\U0001F601": 2.0, "\U00010000": 3.0, "\uFFFF": 4.0, "\uD7FF": 5.0, "": 6.0, "a": 7.0, "ab": 8.0},
		map[string]any{"k\xff": 1.0, "k\xfe": 2.0},       // both become k\uFFFD: duplicate
		map[string]any{"k\xff\xfe": 1.0, "k\uFFFD": 2.0}, // two characters against one
		map[string]any{"x": json.Number("NaN")},
	} {
		check(t, v)
	}
}

func TestLongStringStreams(t *testing.T) {
	long := strings.Repeat("line of output with a \"quote\" and a tab\t\n", 10000)
	v := map[string]any{"content": long, "id": "x", "n": json.Number("3")}
	check(t, v)
	h := sha256.New()
	if err := Write(h, v); err != nil {
		t.Fatal(err)
	}
	want, _ := reference(v)
	if sum := sha256.Sum256(want); !bytes.Equal(h.Sum(nil), sum[:]) {
		t.Fatal("hash of Write differs")
	}
}

// FuzzSameAsMarshalAndTransform decodes arbitrary JSON (numbers kept as
// text) and compares the two encodings.
func FuzzSameAsMarshalAndTransform(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x\u0001"]}`, `{"\ud83d\ude00":1,"\ue000":2}`, `[1e21,0.1,-0,1E400]`, `"\u2028<>"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		check(t, v)
	})
}
