package objects

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzFromDoc checks that FromDoc never panics, fails only with this
// package's errors, and that whatever it accepts round-trips losslessly:
// Doc(FromDoc(d)) canonicalises to the same bytes as d.
func FuzzFromDoc(f *testing.F) {
	for _, o := range sampleObjects(f) {
		b, err := json.Marshal(mustDoc(f, o))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"xt/id":1}`))
	f.Add([]byte(`{"xt/id":"x","type":"toolcall","source":null}`))
	f.Add([]byte(`{"xt/id":"x","type":"file","source":{"type":"s3"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) != nil || m == nil {
			return
		}
		o, err := FromDoc(m)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrHashMismatch) {
				t.Fatalf("FromDoc error %v wraps neither ErrInvalid nor ErrHashMismatch", err)
			}
			return
		}
		in, err := Canonical(m)
		if err != nil {
			t.Fatalf("FromDoc accepted a document Canonical rejects: %v", err)
		}
		d, err := o.Doc()
		if err != nil {
			t.Fatalf("Doc after FromDoc: %v", err)
		}
		out, err := Canonical(d)
		if err != nil {
			t.Fatalf("Canonical(Doc()): %v", err)
		}
		if !bytes.Equal(in, out) {
			t.Fatalf("round trip changed the document:\n in %s\nout %s", in, out)
		}
		if _, err := FromDoc(d); err != nil {
			t.Fatalf("FromDoc(Doc()): %v", err)
		}
		_ = RenderMetadata(o)
		_, _ = NullContent(o)
		_ = o.VerifyHashes()
	})
}

// FuzzParseRef checks that every accepted reference formats back to text
// that parses to the same reference.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"toolu_01", "chat:s1@7", "a@1#c=" + HashBytes(nil) + ",i=" + HashBytes([]byte("x")), "a@", "@", "#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		back, err := ParseRef(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRef(%q) = %+v; reparse of %q = %+v, %v", s, r, r.String(), back, err)
		}
	})
}

// FuzzCanonicalJSON checks that canonicalisation is idempotent.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1e21,"a":[1.5,-0,"é\u0000"]}`, `[]`, `"x"`, `1E400`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := CanonicalJSON(data)
		if err != nil {
			return
		}
		again, err := CanonicalJSON(out)
		if err != nil || !bytes.Equal(out, again) {
			t.Fatalf("not idempotent: %s -> %s (%v)", out, again, err)
		}
	})
}
