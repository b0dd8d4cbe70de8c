package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

// FuzzParseValid checks that parseValid decodes every valid JSON text as
// encoding/json does with UseNumber.
func FuzzParseValid(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[true,false,null,"x"],"c":{"d":-1.5e+3}}`,
		`{"s":"q\"b\\s\/n\nt\tr\rb\bf\fu\u00e9\ud83d\ude00 lone \ud800 x \udfff \ud800\u0041 end"}`,
		` [ 1 , "" , {} , [] ] `, `"\ud800\ud800\udc00"`, `{"a":1,"a":2}`, `0`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || !utf8.Valid(b) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if got := parseValid(b); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", b, got, want)
		}
	})
}
