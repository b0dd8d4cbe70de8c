package objects

import "testing"

func TestParseSource(t *testing.T) {
	fs := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name  string
		in    any
		err   error
		field string
	}{
		{"null is unsourced", nil, nil, ""},
		{"valid", fs("type", "filesystem", "filesystemId", "fs1", "path", "/a/b.go"), nil, ""},
		{"root path", fs("type", "filesystem", "filesystemId", "fs1", "path", "/"), nil, ""},
		{"not an object", "filesystem", ErrInvalid, `"source"`},
		{"missing type", fs("filesystemId", "fs1", "path", "/a"), ErrInvalid, `"source.type"`},
		{"non-string type", fs("type", 7.0, "filesystemId", "fs1", "path", "/a"), ErrInvalid, `"source.type"`},
		{"unknown type", fs("type", "s3", "bucket", "b", "key", "k"), ErrUnknownSourceType, `"s3"`},
		{"missing filesystemId", fs("type", "filesystem", "path", "/a"), ErrInvalid, `"source.filesystemId"`},
		{"empty filesystemId", fs("type", "filesystem", "filesystemId", "", "path", "/a"), ErrInvalid, `"source.filesystemId"`},
		{"missing path", fs("type", "filesystem", "filesystemId", "fs1"), ErrInvalid, `"source.path"`},
		{"non-string path", fs("type", "filesystem", "filesystemId", "fs1", "path", []any{}), ErrInvalid, `"source.path"`},
		{"relative path", fs("type", "filesystem", "filesystemId", "fs1", "path", "a/b"), ErrInvalid, "not absolute"},
		{"unclean path", fs("type", "filesystem", "filesystemId", "fs1", "path", "/a/../b"), ErrInvalid, "not clean"},
		{"trailing slash", fs("type", "filesystem", "filesystemId", "fs1", "path", "/a/"), ErrInvalid, "not clean"},
		{"invalid utf-8 path", fs("type", "filesystem", "filesystemId", "fs1", "path", "/\xff"), ErrInvalidUTF8, `"source.path"`},
		{"control char", fs("type", "filesystem", "filesystemId", "fs\x00", "path", "/a"), ErrInvalid, "control"},
		{"extra field", fs("type", "filesystem", "filesystemId", "fs1", "path", "/a", "mode", "rw"), ErrInvalid, `"source.mode"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSource(tt.in)
			if tt.err != nil {
				wantErr(t, err, tt.err, tt.field)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.in == nil {
				if s != nil {
					t.Fatal("null gave a source")
				}
				return
			}
			if got := canon(t, s.Doc()); got != canon(t, tt.in) {
				t.Fatalf("Doc() = %s, want %s", got, canon(t, tt.in))
			}
		})
	}
}

func TestFileTypeOf(t *testing.T) {
	tests := map[string]string{
		"/a/main.go": "go", "/a/README.MD": "md", "/a/Makefile": "", "/a/.bashrc": "",
		"/a/x.tar.gz": "gz", "/a.b/c": "", "/": "",
	}
	for p, want := range tests {
		if got := FileTypeOf(p); got != want {
			t.Errorf("FileTypeOf(%q) = %q, want %q", p, got, want)
		}
	}
}
