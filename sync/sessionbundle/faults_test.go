package sessionbundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/sessionbundle/sessionbundletest"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// splitLines splits a bundle into its lines, newlines kept.
func splitLines(b []byte) [][]byte {
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

// rewriteManifest rebuilds a bundle's manifest after edit changed its
// header or entities, with consistent counts and checksum.
func rewriteManifest(t *testing.T, b []byte, edit func(h *Header, ents []Entity) []Entity) []byte {
	t.Helper()
	ls := splitLines(b)
	h, err := parseHeader(bytes.TrimSuffix(ls[0], nl))
	if err != nil {
		t.Fatal(err)
	}
	var ents []Entity
	i := 1
	for ; lineType(ls[i]) == "entity"; i++ {
		e, err := parseEntity(bytes.TrimSuffix(ls[i], nl))
		if err != nil {
			t.Fatal(err)
		}
		ents = append(ents, e)
	}
	ents = edit(&h, ents)
	h.Entities = int64(len(ents))
	var out []byte
	out = appendHeader(out, h)
	for _, e := range ents {
		out = appendEntity(out, e)
	}
	sum := sha256.Sum256(out)
	out = appendManifestEnd(out, manifestEnd{Lines: int64(len(ents) + 1), Entities: int64(len(ents)), SHA256: hex.EncodeToString(sum[:])})
	return append(out, bytes.Join(ls[i+1:], nil)...)
}

// Damaged or foreign input is refused before anything is written, with an
// error naming the line.
func TestBadBundles(t *testing.T) {
	src := openSQLite(t, "src.db")
	s := sessionbundletest.New(t, src, "s1", "")
	s.Turns(3)
	good, _ := exportBytes(t, src, "s1")
	ls := splitLines(good)
	info, err := Verify(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	m := info.ManifestLines
	join := func(parts ...[][]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, bytes.Join(p, nil)...)
		}
		return out
	}
	replaceLine := func(n int, f func(string) string) []byte {
		c := make([][]byte, len(ls))
		copy(c, ls)
		c[n-1] = []byte(f(string(ls[n-1])))
		return join(c)
	}
	var vlog bytes.Buffer
	if _, err := versionlog.Export(ctx, src, &vlog, versionlog.ExportOptions{After: -1}); err != nil {
		t.Fatal(err)
	}
	firstDoc := 0 // the first doc line of the log
	for i := int(m) + 1; i < len(ls); i++ {
		if lineType(ls[i]) == "doc" {
			firstDoc = i + 1
			break
		}
	}
	var txLine int // the first tx line that writes toolcall toolu_s1_0001
	for i := int(m) + 1; i < len(ls); i++ {
		if lineType(ls[i]) == "tx" && bytes.Contains(ls[i], []byte(`"id":"toolu_s1_0001"`)) {
			txLine = i + 1
			break
		}
	}
	cases := []struct {
		name string
		b    []byte
		kind error
		line int64
		want string
	}{
		{"empty", nil, versionlog.ErrTruncated, 1, "empty"},
		{"a version log", vlog.Bytes(), versionlog.ErrVersion, 1, "not a session bundle"},
		{"another version", replaceLine(1, func(s string) string { return strings.Replace(s, `"version":1`, `"version":2`, 1) }), versionlog.ErrVersion, 1, "version 2"},
		{"cut in the manifest", join(ls[:3]), versionlog.ErrTruncated, 4, ""},
		{"a line cut in the manifest", append(join(ls[:3]), ls[3][:10]...), versionlog.ErrTruncated, 4, ""},
		{"cut in the log", join(ls[:len(ls)-3]), versionlog.ErrTruncated, int64(len(ls) - 2), ""},
		{"unknown role", replaceLine(2, func(s string) string { return strings.Replace(s, `"role":"`, `"role":"x`, 1) }), versionlog.ErrCorrupt, 2, "unknown role"},
		{"manifest checksum", replaceLine(int(m), func(s string) string { return strings.Replace(s, `"sha256":"`, `"sha256":"0`, 1)[:len(s)-3] + "\"}\n" }), versionlog.ErrChecksum, m, ""},
		{"entity left out", rewriteManifest(t, good, func(h *Header, ents []Entity) []Entity {
			var out []Entity
			for _, e := range ents {
				if e.ID != "system_prompt:s1" {
					out = append(out, e)
				}
			}
			return out
		}), versionlog.ErrCorrupt, m - 1, "does not list system_prompt:s1"},
		{"extra commit announced", rewriteManifest(t, good, func(h *Header, ents []Entity) []Entity { h.Commits++; return ents }),
			versionlog.ErrCorrupt, m, "announces 4 context commits"},
		{"op on an unlisted entity", rewriteManifest(t, good, func(h *Header, ents []Entity) []Entity {
			for i := range ents {
				if ents[i].ID == "toolu_s1_0001" {
					ents[i].ID = "toolu_s1_0001x"
				}
			}
			return ents
		}), versionlog.ErrCorrupt, 0, `on "toolu_s1_0001", which the manifest does not list`},
		{"a document changed", replaceLine(firstDoc, func(s string) string { return strings.Replace(s, `"doc":{`, `"doc":{"a":1,`, 1) }), versionlog.ErrCorrupt, int64(firstDoc), ""},
		{"data after the end", append(append([]byte(nil), good...), "{}\n"...), versionlog.ErrCorrupt, int64(len(ls)), "after the end"},
		{"another log", join(ls[:m], splitLines(vlog.Bytes())), versionlog.ErrCorrupt, m + 1, "source"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "op on an unlisted entity" {
				c.line = int64(txLine)
			}
			dst := openSQLite(t, "dst.db")
			_, err := ImportFile(ctx, dst, writeFile(t, c.b), ImportOptions{})
			var le *versionlog.LineError
			if !errors.Is(err, c.kind) || !errors.As(err, &le) || le.Line != c.line || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %v at line %d (%q)", err, c.kind, c.line, c.want)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("line %d", c.line)) {
				t.Fatalf("%v does not name line %d", err, c.line)
			}
			if n := latestTx(t, dst); n != -1 {
				t.Fatalf("the refused import wrote up to tx %d", n)
			}
			if _, err := Verify(bytes.NewReader(c.b)); !errors.Is(err, c.kind) {
				t.Fatalf("Verify: %v", err)
			}
		})
	}
}

// A target that holds the session already (not from this bundle's
// source), or that the bundle came from, refuses it and is left as it
// was.
func TestImportRefused(t *testing.T) {
	src := openSQLite(t, "src.db")
	s := sessionbundletest.New(t, src, "s1", "")
	s.Turns(2)
	b, _ := exportBytes(t, src, "s1")

	dst := openSQLite(t, "dst.db")
	if _, err := session.Create(ctx, dst, "s1", session.CreateOptions{SystemPrompt: "mine"}); err != nil {
		t.Fatal(err)
	}
	before := latestTx(t, dst)
	if _, err := ImportFile(ctx, dst, writeFile(t, b), ImportOptions{}); !errors.Is(err, ErrSessionExists) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("import over an existing session: %v", err)
	}
	if latestTx(t, dst) != before {
		t.Fatal("the refused import wrote")
	}
	before = latestTx(t, src)
	if _, err := ImportFile(ctx, src, writeFile(t, b), ImportOptions{}); !errors.Is(err, versionlog.ErrNotContinuing) || !strings.Contains(err.Error(), "exported from the target itself") {
		t.Fatalf("import into the source: %v", err)
	}
	if latestTx(t, src) != before {
		t.Fatal("the refused import wrote")
	}
	if _, err := Export(ctx, src, "nope", &bytes.Buffer{}, ExportOptions{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("exporting a missing session: %v", err)
	}

	// A session that never made a call moves too.
	if _, err := session.Create(ctx, src, "quiet", session.CreateOptions{SystemPrompt: "hush"}); err != nil {
		t.Fatal(err)
	}
	q, _ := exportBytes(t, src, "quiet")
	if sum := importBytes(t, dst, q, ImportOptions{Rebuild: true}); sum.Commits != 0 || sum.Entities != 3 || !sum.Complete {
		t.Fatalf("a session without calls: %+v", sum)
	}
	if got, err := session.Open(ctx, dst, "quiet"); err != nil || got.Info().SystemPromptID != "system_prompt:quiet" {
		t.Fatalf("opening the imported session without calls: %v", err)
	}
}

// An import stopped part way leaves a consistent target that says it is
// incomplete; running it again finishes it.
func TestInterruptedImport(t *testing.T) {
	src := openSQLite(t, "src.db")
	s := sessionbundletest.New(t, src, "s1", "")
	s.Turns(8)
	b, _ := exportBytes(t, src, "s1")
	path := writeFile(t, b)
	dst := openSQLite(t, "dst.db")

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sum, err := ImportFile(cctx, dst, path, ImportOptions{Progress: func(phase string, done, total int64) {
		if phase == "import" && done > total/2 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || sum.Applied == 0 || sum.Complete {
		t.Fatalf("interrupted import: %+v %v", sum, err)
	}
	list, err := ListImported(ctx, dst)
	if err != nil || len(list) != 1 || list[0].Complete || list[0].Cursor == nil {
		t.Fatalf("imported after the interruption: %+v %v", list, err)
	}
	rest, err := ImportFile(ctx, dst, path, ImportOptions{Rebuild: true})
	if err != nil || rest.Skipped != sum.Applied || !rest.Complete || rest.Rebuilt != 8 {
		t.Fatalf("resumed import: %+v %v", rest, err)
	}
	checkImported(t, dst, s)
}

// A later bundle of the same session continues an earlier import when the
// target already has what it holds up to the earlier one; one whose older
// history the target never got (an object another session used before)
// is refused, and goes into a fresh store.
func TestLaterBundle(t *testing.T) {
	src := openSQLite(t, "src.db")
	dir := t.TempDir()
	o := sessionbundletest.New(t, src, "o", dir)
	cgo := o.File("c.go", "package c\n")
	o.Read(cgo)
	o.Call()
	s := sessionbundletest.New(t, src, "s1", dir)
	s.Turns(6)
	b1, _ := exportBytes(t, src, "s1")
	dst := openSQLite(t, "dst.db")
	first := importBytes(t, dst, b1, ImportOptions{})

	s.Turns(4)
	b2, _ := exportBytes(t, src, "s1")
	second := importBytes(t, dst, b2, ImportOptions{Rebuild: true})
	if second.Skipped != first.Applied || second.Applied == 0 || !second.Complete || second.Rebuilt != 10 {
		t.Fatalf("later bundle: %+v after %+v", second, first)
	}
	checkImported(t, dst, s)

	s.Read(cgo) // c.go has history from before the first bundle
	s.Call()
	b3, _ := exportBytes(t, src, "s1")
	before := latestTx(t, dst)
	_, err := ImportFile(ctx, dst, writeFile(t, b3), ImportOptions{})
	cID := fileID(t, s, "c.go")
	if !errors.Is(err, versionlog.ErrNotContinuing) || !strings.Contains(err.Error(), cID) {
		t.Fatalf("bundle with older history of a new entity: %v", err)
	}
	if latestTx(t, dst) != before {
		t.Fatal("the refused import wrote")
	}
	fresh := openSQLite(t, "fresh.db")
	importBytes(t, fresh, b3, ImportOptions{})
	checkImported(t, fresh, s)
}
