package objects

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestRefText(t *testing.T) {
	c := strings.Repeat("a", 64)
	i := strings.Repeat("b", 64)
	m := strings.Repeat("c", 64)
	tests := []struct {
		text string
		ref  Ref
	}{
		{"toolu_01", Ref{ID: "toolu_01"}},
		{"chat:s1", Ref{ID: "chat:s1"}},
		{"toolu_01@0", Ref{ID: "toolu_01", Static: true}},
		{"toolu_01@42", Ref{ID: "toolu_01", Static: true, Tx: 42}},
		{"toolu_01@42#c=" + c, Ref{ID: "toolu_01", Static: true, Tx: 42, ContentHash: c}},
		{"chat:s1@7#c=" + c + ",i=" + i + ",m=" + m, Ref{ID: "chat:s1", Static: true, Tx: 7, ContentHash: c, IdentityHash: i, MetadataViewHash: m}},
		{"x@1#i=" + i, Ref{ID: "x", Static: true, Tx: 1, IdentityHash: i}},
	}
	for _, tt := range tests {
		got, err := ParseRef(tt.text)
		if err != nil {
			t.Fatalf("ParseRef(%q): %v", tt.text, err)
		}
		if got != tt.ref {
			t.Fatalf("ParseRef(%q) = %+v, want %+v", tt.text, got, tt.ref)
		}
		if s := tt.ref.String(); s != tt.text {
			t.Fatalf("String() = %q, want %q", s, tt.text)
		}
	}
	// Any hash order parses; String writes c, i, m.
	r, err := ParseRef("x@1#m=" + m + ",c=" + c)
	if err != nil || r.String() != "x@1#c="+c+",m="+m {
		t.Fatalf("reordered hashes: %v %v", r, err)
	}
}

func TestParseRefErrors(t *testing.T) {
	c := strings.Repeat("a", 64)
	for _, s := range []string{
		"", "@1", "a@", "a@-1", "a@01", "a@1.5", "a@99999999999999999999", "a#c=" + c,
		"a@1#", "a@1#c=", "a@1#c=xyz", "a@1#c=" + strings.ToUpper(c), "a@1#x=" + c,
		"a@1#c=" + c + ",c=" + c, "a@1@2", "a b", "a@1#c=" + c + ",",
	} {
		if _, err := ParseRef(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseRef(%q) = %v, want ErrInvalid", s, err)
		}
	}
	if err := (Ref{ID: "a", Tx: 3}).Validate(); err == nil {
		t.Error("dynamic ref with tx validated")
	}
}

func TestRefJSON(t *testing.T) {
	o := sampleObjects(t)["toolcall"]
	type holder struct{ Ref Ref }
	b, err := json.Marshal(holder{StaticRef(o, 12)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Ref":"toolu_01@12#c=` + o.ContentHash + `,i=` + o.IdentityHash() + `,m=` + o.MetadataViewHash + `"}`
	if string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var h holder
	if err := json.Unmarshal(b, &h); err != nil || h.Ref != StaticRef(o, 12) {
		t.Fatalf("unmarshal: %+v %v", h, err)
	}
	if err := json.Unmarshal([]byte(`{"Ref":"a@x"}`), &h); err == nil {
		t.Fatal("bad ref text unmarshalled")
	}
}

func TestRefVerify(t *testing.T) {
	objs := sampleObjects(t)
	o := objs["toolcall"]
	static := StaticRef(o, 5)
	changed := o.Clone()
	changed.Toolcall.Status = StatusFail
	if err := changed.Seal(); err != nil {
		t.Fatal(err)
	}
	forged := o.Clone()
	forged.Content = Str("forged output") // hashes left stale

	tests := []struct {
		name   string
		ref    Ref
		obj    *Object
		target error
		hash   string
	}{
		{"dynamic ok", DynamicRef("toolu_01"), o, nil, ""},
		{"dynamic ok on a newer version", DynamicRef("toolu_01"), changed, nil, ""},
		{"dynamic wrong id", DynamicRef("toolu_02"), o, ErrIDMismatch, ""},
		{"static ok", static, o, nil, ""},
		{"static without hashes", Ref{ID: "toolu_01", Static: true, Tx: 5}, o, nil, ""},
		{"static wrong id", StaticRef(objs["user"], 5), o, ErrIDMismatch, ""},
		{"static newer version", static, changed, ErrHashMismatch, "content_hash"},
		{"static forged object", static, forged, ErrHashMismatch, "content_hash"},
		{"static view hash only", Ref{ID: "toolu_01", Static: true, MetadataViewHash: o.MetadataViewHash}, changed, ErrHashMismatch, "metadata_view_hash"},
		{"static identity only", Ref{ID: "toolu_01", Static: true, IdentityHash: HashBytes(nil)}, o, ErrHashMismatch, "identity_hash"},
		{"nil object", static, nil, ErrInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.ref.Verify(tt.obj)
			if tt.target == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, tt.target, tt.hash)
			var hm *HashMismatchError
			if tt.hash != "" && (!errors.As(err, &hm) || hm.Hash != tt.hash || hm.ID != "toolu_01") {
				t.Fatalf("error %v does not name %s and the id", err, tt.hash)
			}
		})
	}
}
