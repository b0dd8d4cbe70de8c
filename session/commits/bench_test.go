package commits

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/store"
)

var benchT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// turn returns a realistic delta: a prompt, a tool call, a tool result of
// about 1.5 kB and a response, unique to (tag, i).
func turn(tag string, i int) []events.Event {
	out := strings.Repeat(fmt.Sprintf("line %d of the output of ls -la in %s\n", i, tag), 30)
	return []events.Event{
		{Type: events.Prompt, Source: "user", Text: fmt.Sprintf("Step %d: list the files (%s).", i, tag)},
		{Type: events.ToolCall, Source: "assistant", MessageID: fmt.Sprint("m", i), Tool: &events.Tool{ID: fmt.Sprintf("toolu_%s_%d", tag, i), Name: "bash", Input: map[string]any{"command": "ls -la"}}},
		{Type: events.ToolResult, Tool: &events.Tool{ID: fmt.Sprintf("toolu_%s_%d", tag, i), Name: "bash"}, Result: &events.Result{Content: out}},
		{Type: events.Response, Source: "assistant", Text: fmt.Sprintf("There are %d files; the largest is main.go.", i)},
	}
}

// buildChain writes a chain of n commits of one session straight into the
// store, 200 commits per transaction (the documents Checkpoint writes,
// without its reads), and returns the ids, oldest first.
func buildChain(b testing.TB, st store.Store, session string, n int) []string {
	ctx := context.Background()
	var ids []string
	var ops []store.Op
	parent := ""
	for i := range n {
		content, err := events.Encode(turn(session, i))
		if err != nil {
			b.Fatal(err)
		}
		c := &Commit{Parent: parent, Type: Delta, Format: FormatEvents, Content: ContentHash(content), ContentBytes: int64(len(content)),
			Provenance: Provenance{Session: session, Principal: "bench", Trigger: TurnBoundary}, MessageCount: 4,
			TokenCount: int64(len(content) / 4), Created: benchT0.Add(time.Duration(i) * time.Second), Depth: int64(i)}
		c.ID = CommitID(c.Parent, c.Type, c.Content, c.Created, c.Template)
		ops = append(ops, store.Put(c.doc()), store.Put(contentDoc(c.Content, content)))
		if len(ops) >= 400 || i == n-1 {
			if _, err := store.SubmitWait(ctx, st, ops); err != nil {
				b.Fatal(err)
			}
			ops = nil
		}
		ids = append(ids, c.ID)
		parent = c.ID
	}
	return ids
}

// readCounter counts a store's reads (one goroutine).
type readCounter struct {
	store.Store
	reads int64
}

func (c *readCounter) Entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	c.reads++
	return c.Store.Entity(ctx, id, b)
}

func (c *readCounter) EntityTx(ctx context.Context, id string, b store.Basis) (store.EntityTx, error) {
	c.reads++
	return c.Store.EntityTx(ctx, id, b)
}

func (c *readCounter) Query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	c.reads++
	return c.Store.Query(ctx, q)
}

// BenchmarkCheckpoint: a checkpoint (a ~1.7 kB delta) on a commit at depth
// 10 and one on a commit at depth 10,000 of one chain, alternately in one
// loop; x-depth10000 is the ratio of their times (aim: within 1.2x).
// Checkpoint reads the parent, the grandparent, the new id and the
// content, whatever the depth.
//
//	go test -run '^$' -bench Checkpoint -benchtime 300x -count 3 ./session/commits/
func BenchmarkCheckpoint(b *testing.B) {
	for _, backend := range storetestenv.Backends() {
		b.Run(backend, func(b *testing.B) {
			e := storetestenv.New(b, backend)
			session := e.ID("chain")
			ids := buildChain(b, e.Store, session, 10_001)
			cs := &readCounter{Store: e.Store}
			s := New(cs, Options{})
			ctx := context.Background()
			var at [2]time.Duration
			var reads [2]int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Alternate which depth goes first: on XTDB a checkpoint
				// right after another one is slower, whatever its depth.
				order := []int{0, 1}
				if i%2 == 1 {
					order = []int{1, 0}
				}
				for _, k := range order {
					depth := []int{10, 10_000}[k]
					r0 := cs.reads
					t0 := time.Now()
					_, err := s.Checkpoint(ctx, CheckpointRequest{Parent: ids[depth], Events: turn(fmt.Sprintf("%s-%d-%d", session, depth, b.N), i),
						Provenance: Provenance{Session: session + "-b", Principal: "bench"}})
					if err != nil {
						b.Fatal(err)
					}
					at[k] += time.Since(t0)
					reads[k] += cs.reads - r0
				}
			}
			b.ReportMetric(float64(reads[0])/float64(b.N), "reads/checkpoint@10")
			b.ReportMetric(float64(reads[1])/float64(b.N), "reads/checkpoint@10000")
			b.ReportMetric(float64(at[0].Microseconds())/float64(b.N), "us/checkpoint@10")
			b.ReportMetric(float64(at[1].Microseconds())/float64(b.N), "us/checkpoint@10000")
			b.ReportMetric(float64(at[1])/float64(at[0]), "x-depth10000")
		})
	}
}

// BenchmarkMaterialize: the conversation at the tip of a 1,000-commit
// chain (1.7 MB), cold (walk, contents, concatenation; the cache neither
// read nor written) and from its snapshot (two reads), alternately in one
// loop; x-cold is cold over snapshot.
//
//	go test -run '^$' -bench Materialize -benchtime 10x -count 3 ./session/commits/
func BenchmarkMaterialize(b *testing.B) {
	for _, backend := range storetestenv.Backends() {
		b.Run(backend, func(b *testing.B) {
			e := storetestenv.New(b, backend)
			ids := buildChain(b, e.Store, e.ID("m"), 1000)
			tip := ids[len(ids)-1]
			s := New(e.Store, Options{})
			ctx := context.Background()
			if _, err := s.Materialize(ctx, MaterializeRequest{ID: tip}); err != nil {
				b.Fatal(err)
			}
			var at [2]time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k, cold := range []bool{true, false} {
					t0 := time.Now()
					m, err := s.Materialize(ctx, MaterializeRequest{ID: tip, NoCache: cold})
					if err != nil {
						b.Fatal(err)
					}
					at[k] += time.Since(t0)
					if m.Cached == cold || m.Commits != 1000 && cold {
						b.Fatalf("cached %v, %d commits", m.Cached, m.Commits)
					}
				}
			}
			b.ReportMetric(float64(at[0].Milliseconds())/float64(b.N), "ms/cold")
			b.ReportMetric(float64(at[1].Microseconds())/float64(b.N)/1000, "ms/snapshot")
			b.ReportMetric(float64(at[0])/float64(at[1]), "x-cold")
		})
	}
}

// BenchmarkStorageTranscript reports the SQLite file's growth against the
// bytes of a real Pi session (../shared/datasets, pi-mono__before-compaction,
// 2.37 MB), checkpointed as pi-v3 byte ranges, one commit per model call
// (the entries up to and including each assistant message), then the same
// bytes again as a second session (content stored once).
//
//	go test -run '^$' -bench StorageTranscript -benchtime 1x ./session/commits/
func BenchmarkStorageTranscript(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(datasets.Dir(b), "pi", "pi-mono__before-compaction.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	var deltas [][]byte
	start := 0
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			j = len(data) - i - 1
		}
		line := data[i : i+j+1]
		i += j + 1
		if bytes.Contains(line, []byte(`"role":"assistant"`)) || i >= len(data) {
			deltas = append(deltas, data[start:i])
			start = i
		}
	}
	for i := 0; i < b.N; i++ {
		ctx := context.Background()
		path := filepath.Join(b.TempDir(), "s.db")
		st, err := bitemporal.Open(ctx, path, bitemporal.Options{})
		if err != nil {
			b.Fatal(err)
		}
		size := func() int64 {
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			if st, err = bitemporal.Open(ctx, path, bitemporal.Options{}); err != nil {
				b.Fatal(err)
			}
			return fi.Size()
		}
		write := func(session string, at time.Time) {
			s := New(st, Options{})
			parent := ""
			for j, d := range deltas {
				c, err := s.Checkpoint(ctx, CheckpointRequest{Parent: parent, Format: FormatPi, Content: d, Created: at.Add(time.Duration(j) * time.Second),
					Provenance: Provenance{Session: session, Principal: "bench", Machine: "host", Harness: "pi 0.73.1", Trigger: TurnBoundary}})
				if err != nil {
					b.Fatal(err)
				}
				parent = c.ID
			}
		}
		s0 := size()
		write("first", benchT0)
		s1 := size()
		write("second", benchT0.Add(24*time.Hour))
		s2 := size()
		st.Close()
		b.ReportMetric(float64(len(deltas)), "commits")
		b.ReportMetric(float64(len(data))/float64(len(deltas)), "delta-B/commit")
		b.ReportMetric(float64(s1-s0)/float64(len(data)), "store/transcript")
		b.ReportMetric(float64(s2-s1)/float64(len(deltas)), "shared-store-B/commit")
	}
}

// BenchmarkStorage reports the SQLite file's growth per commit against the
// bytes of the commit's delta (aim: within 1.5x), for a chain of 500
// realistic turns written through Checkpoint, then for a second session
// checkpointing the same deltas (its content is stored once: only the
// commits' metadata is new).
//
//	go test -run '^$' -bench Storage -benchtime 1x ./session/commits/
func BenchmarkStorage(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ctx := context.Background()
		path := filepath.Join(b.TempDir(), "s.db")
		size := func() int64 {
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			return fi.Size()
		}
		st, err := bitemporal.Open(ctx, path, bitemporal.Options{})
		if err != nil {
			b.Fatal(err)
		}
		const n = 500
		var delta int64
		var parts [][]events.Event
		for j := range n {
			parts = append(parts, turn("storage", j))
			enc, _ := events.Encode(parts[j])
			delta += int64(len(enc))
		}
		write := func(session string, at time.Time) {
			s := New(st, Options{})
			parent := ""
			for j := range n {
				c, err := s.Checkpoint(ctx, CheckpointRequest{Parent: parent, Events: parts[j], Created: at.Add(time.Duration(j) * time.Second),
					Provenance: Provenance{Session: session, Principal: "bench", Machine: "host", Harness: "pi 0.73.1", Trigger: TurnBoundary}})
				if err != nil {
					b.Fatal(err)
				}
				parent = c.ID
			}
		}
		reopen := func() {
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			if st, err = bitemporal.Open(ctx, path, bitemporal.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		reopen()
		s0 := size()
		write("first", benchT0)
		reopen()
		s1 := size()
		write("second", benchT0.Add(24*time.Hour))
		reopen()
		s2 := size()
		st.Close()
		b.ReportMetric(float64(delta)/n, "delta-B/commit")
		b.ReportMetric(float64(s1-s0)/n, "store-B/commit")
		b.ReportMetric(float64(s1-s0)/float64(delta), "store/delta")
		b.ReportMetric(float64(s2-s1)/n, "shared-store-B/commit")
	}
}
