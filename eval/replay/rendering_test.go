package replay

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/harness/transcript/transcripttest"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// updateRendering rewrites testdata/rendering.golden from the code as it is.
var updateRendering = flag.Bool("update-rendering", false, "rewrite testdata/rendering.golden")

// renderingOnly limits TestRenderingGolden to the sessions whose name
// contains it (a quick check while changing the assembler).
var renderingOnly = flag.String("rendering-only", "", "replay only the sessions whose name contains this")

// renderingRebuild turns off the Rebuild checks of TestRenderingGolden
// (the digests come from the commits; -update-rendering runs faster).
var renderingRebuild = flag.Bool("rendering-rebuild", true, "rebuild calls from their commits too")

// renderingDir is where the replays mirror the sessions' files.
const renderingDir = "/tmp/ctxstore-rendering"

// renderingGolden holds, per replayed session, the SHA-256 over the bytes
// of every one of its calls as Rebuild gives them back.
const renderingGolden = "testdata/rendering.golden"

// renderingStrategies are the ctxstore strategies whose contexts the golden
// file fixes: the stream layout at every rendering version, and the
// literal layout and the lean and bare heads at the versions that changed
// what they render (the literal layout has no live outputs and no
// rebases; a lean head's rendering is the stream's once it switches; a
// bare head's own edits render nothing from version 5). Rendering 6
// (assemble.RenderUserFirst, OpenClaw's: the prompt a message of its own,
// tool results kept as the harness sent them until a rebase) comes last:
// it changes the stream only, and its sessions open with the default head.
func renderingStrategies() []*Ctxstore {
	var out []*Ctxstore
	add := func(s Ctxstore, versions ...int) {
		for _, rv := range versions {
			x := s
			x.Render, x.Label = rv, fmt.Sprintf("%s_r%d", s.Label, rv)
			out = append(out, &x)
		}
	}
	add(Ctxstore{Layout: assemble.LayoutStream, Label: "stream"}, 1, 2, 3, 4, 5)
	add(Ctxstore{Layout: assemble.LayoutLiteral, Label: "literal"}, 1, 3, 5)
	add(Ctxstore{Layout: assemble.LayoutStream, LeanHead: true, Label: "lean"}, 5)
	add(Ctxstore{Layout: assemble.LayoutStream, BareHead: true, Label: "bare"}, 4, 5)
	add(Ctxstore{Layout: assemble.LayoutStream, Label: "stream"}, assemble.RenderUserFirst)
	if len(out) == 0 || out[len(out)-1].Render != assemble.RenderUserFirst {
		panic("renderingStrategies: add the new rendering version")
	}
	return out
}

// keptStore is a store whose Close does nothing, so that the sessions a
// replay wrote can be read after it.
type keptStore struct{ store.Store }

func (keptStore) Close() error { return nil }

// TestRenderingGolden replays every session of the shared datasets, and a
// synthetic one, through the ctxstore strategies (renderingStrategies:
// every rendering version) and compares, per session, a digest of the
// bytes of every call, as the live calls recorded them in their context
// commits, with testdata/rendering.golden; rebuilding every call from
// the store (Rebuilder) must give those bytes back (it fails otherwise). A change to the assembler that changes any byte
// any session was sent at any rendering version fails here. The bytes
// also follow how transcripts are read and ingested and what the tools
// record: a change there that is meant to change what the model sees
// rewrites the file (-update-rendering, and the commit says why). A
// refactoring of the assembler never does.
func TestRenderingGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every dataset session 12 times")
	}
	dir := datasets(t)
	if err := os.MkdirAll(renderingDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var rels []string
	for _, sub := range []string{"claude-code", "claude-code/raw", "pi", "swe-agent"} {
		es, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".jsonl") || strings.HasSuffix(e.Name(), ".traj")) {
				rels = append(rels, sub+"/"+e.Name())
			}
		}
	}
	size := func(rel string) int64 {
		fi, err := os.Stat(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	slices.SortFunc(rels, func(a, b string) int { return int(size(a) - size(b)) }) // the quick ones first
	if len(rels) < 20 {
		t.Fatalf("%d dataset sessions found in %s", len(rels), dir)
	}
	if *renderingOnly != "" {
		if *updateRendering {
			t.Fatal("-update-rendering rewrites the whole file: give no -rendering-only")
		}
		rels = slices.DeleteFunc(rels, func(r string) bool { return !strings.Contains(r, *renderingOnly) })
	}
	got := map[string]string{}
	var mu sync.Mutex
	record := func(t *testing.T, rel string, s *transcript.Session) {
		for k, v := range renderingDigests(t, rel, s) {
			mu.Lock()
			got[k] = v
			mu.Unlock()
		}
	}
	if strings.Contains("synthetic", *renderingOnly) {
		record(t, "synthetic", synth(40, 3000))
	}
	// Sessions replay side by side (go test's -parallel, GOMAXPROCS by
	// default): each has its own stores and its own locked directory.
	t.Run("sessions", func(t *testing.T) {
		for _, rel := range rels {
			t.Run(rel, func(t *testing.T) {
				t.Parallel()
				s, err := transcripttest.ReadFile(filepath.Join(dir, rel))
				if err != nil {
					t.Fatal(err)
				}
				record(t, rel, s)
			})
		}
	})
	if t.Failed() {
		return
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range got {
			if !yield(k) {
				return
			}
		}
	})
	if *updateRendering {
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s %s\n", k, got[k])
		}
		if err := os.WriteFile(renderingGolden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readGolden(t)
	for _, k := range keys {
		if want[k] != got[k] {
			t.Errorf("%s: got %s, golden %q", k, got[k], want[k])
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok && *renderingOnly == "" {
			t.Errorf("%s: in the golden file, not replayed", k)
		}
	}
}

// renderingDigests replays s through renderingStrategies and returns, for
// each, "rel strategy" -> "calls digest": the number of calls and a
// SHA-256 over the SHA-256 of each call's bytes.
func renderingDigests(t *testing.T, rel string, s *transcript.Session) map[string]string {
	t.Helper()
	ctx := context.Background()
	s.Path = rel // the replay's directory is named after it
	var stores []store.Store
	t.Cleanup(func() {
		for _, st := range stores {
			st.Close()
		}
	})
	open := func(ctx context.Context, _ string) (store.Store, error) {
		st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "store.db"), bitemporal.Options{})
		if err != nil {
			return nil, err
		}
		stores = append(stores, st)
		return keptStore{st}, nil
	}
	var strats []Strategy
	for _, x := range renderingStrategies() {
		strats = append(strats, x)
	}
	t0 := time.Now()
	// The mirrored files' paths, and so their ids, are under Dir: a fixed
	// one, so that every run shows the same ids (replayDir locks it).
	if _, err := Run(ctx, s, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: renderingDir, OpenStore: open, Strategies: strats}); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	t1 := time.Now()
	defer func() {
		t.Logf("%s: replayed in %v, rebuilt in %v", rel, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	}()
	out := map[string]string{}
	for _, st := range stores {
		ids, err := session.List(ctx, st)
		if err != nil || len(ids) != 1 {
			t.Fatalf("%s: sessions %v, %v", rel, ids, err)
		}
		name := "" // the session id ends with the strategy's (Run)
		for _, x := range strats {
			if strings.HasSuffix(ids[0], "-"+sanitize(x.Name())) {
				name = x.Name()
			}
		}
		if name == "" {
			t.Fatalf("%s: session %s of no strategy", rel, ids[0])
		}
		n, err := assemble.Calls(ctx, st, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		// Every call's bytes as the live call recorded them, and every call
		// rebuilt from the store in one forward pass (Rebuilder), which
		// fails unless it gives those bytes back; Rebuild of the last call
		// on its own too.
		h := sha256.New()
		b := assemble.NewRebuilder(st, ids[0])
		for k := 1; k <= n; k++ {
			c, err := b.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			h.Write([]byte(c.BytesSHA256 + "\n"))
			if *renderingRebuild {
				if _, err := b.Context(ctx); err != nil {
					t.Fatalf("%s %s: %v", rel, name, err)
				}
			}
		}
		if _, err := assemble.Rebuild(ctx, st, ids[0], n); *renderingRebuild && err != nil {
			t.Fatalf("%s %s: %v", rel, name, err)
		}
		out[rel+" "+name] = fmt.Sprintf("%d %s", n, hex.EncodeToString(h.Sum(nil))[:32])
		t.Logf("%s %s %s", rel, name, out[rel+" "+name])
	}
	return out
}

// readGolden reads testdata/rendering.golden: "rel strategy calls digest".
func readGolden(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(renderingGolden)
	if err != nil {
		t.Fatalf("%v (write it with -update-rendering)", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			t.Fatalf("%s: bad line %q", renderingGolden, sc.Text())
		}
		out[fs[0]+" "+fs[1]] = fs[2] + " " + fs[3]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
