package tests

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
)

const (
	// crashHelperEnv, set to a store path, makes the test binary a writer
	// process (see TestMain).
	crashHelperEnv = "CTXSTORE_CRASH_HELPER"
	// crashTagEnv names the writer; its document ids start with it.
	crashTagEnv = "CTXSTORE_CRASH_TAG"
)

// crashDoc is document j of transaction seq of writer tag. Transactions
// hold 1 to 3 documents of varying size.
func crashDoc(tag string, seq, j int) store.Doc {
	return store.Doc{
		"xt/id":  fmt.Sprintf("%s-%d-%d", tag, seq, j),
		"writer": tag,
		"seq":    json.Number(strconv.Itoa(seq)),
		"j":      json.Number(strconv.Itoa(j)),
		"pad":    strings.Repeat("x", 100+(seq*37+j*11)%900),
	}
}

func crashDocsPerTx(seq int) int { return 1 + seq%3 }

// crashHelper writes transactions to the store at path until it is
// killed, printing "TXID TAG SEQ" on stdout after each SubmitWait returns.
func crashHelper(path string) int {
	ctx := context.Background()
	tag := os.Getenv(crashTagEnv)
	s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		return 1
	}
	for seq := 0; ; seq++ {
		ops := make([]store.Op, crashDocsPerTx(seq))
		for j := range ops {
			ops[j] = store.Put(crashDoc(tag, seq, j))
		}
		tx, err := store.SubmitWait(ctx, s, ops)
		if err != nil {
			fmt.Fprintln(os.Stderr, "crash helper:", err)
			return 1
		}
		// One unbuffered write per acknowledgement, so a kill never leaves
		// half a line.
		if _, err := fmt.Fprintf(os.Stdout, "%d %s %d\n", tx.ID, tag, seq); err != nil {
			return 1
		}
	}
}

type ack struct {
	tx  int64
	tag string
	seq int
}

// TestCrashDurability kills writer processes with SIGKILL at random
// moments and checks that every acknowledged transaction survived, that
// tx ids have no gaps and that the database is intact.
func TestCrashDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crash.db")
	// Create the store first, so every kill hits a store that exists.
	s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	const runs = 12
	var acks []ack
	runsWithAcks := 0
	for run := range runs {
		writers := 1 + run%2 // every other run has two writers racing
		got := crashRun(t, path, run, writers, time.Duration(100+rand.IntN(200))*time.Millisecond)
		if len(got) > 0 {
			runsWithAcks++
		}
		acks = append(acks, got...)
	}
	t.Logf("%d runs, %d with acknowledged writes, %d transactions acknowledged", runs, runsWithAcks, len(acks))
	if runsWithAcks < runs/2 {
		t.Fatalf("only %d of %d runs acknowledged a write; the helper is too slow to start to test anything", runsWithAcks, runs)
	}

	checkIntegrity(t, path)

	s, err = bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	log, err := s.TxLog(ctx, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Every document visible now, in one query (each id is written once).
	all, err := s.Query(ctx, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	visible := make(map[string]store.Doc, len(all))
	for _, d := range all {
		visible[d["xt/id"].(string)] = d
	}
	// Every logged transaction committed (TxLog leaves out aborted ones),
	// their ids run 0, 1, 2... and each wrote all of its documents.
	puts := 0
	for i, tx := range log {
		if tx.ID != int64(i) {
			t.Fatalf("tx ids are not contiguous: position %d holds tx %d", i, tx.ID)
		}
		for _, op := range tx.Ops {
			puts++
			if op.Kind != store.OpPut || op.Doc == nil {
				t.Errorf("tx %d: unexpected op %+v", tx.ID, op)
			} else if !store.SameDoc(visible[op.ID], op.Doc) {
				t.Errorf("tx %d: document %s is %v, want %v", tx.ID, op.ID, visible[op.ID], op.Doc)
			}
		}
	}
	if len(visible) != puts {
		t.Errorf("%d documents visible, the log put %d", len(visible), puts)
	}
	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := int64(len(log)); n > 0 && (st.LatestCompleted == nil || st.LatestCompleted.ID != n-1) {
		t.Errorf("status latest %+v, log has %d transactions", st.LatestCompleted, n)
	}

	// Every acknowledged transaction is there, committed, with its
	// documents. The last one of each writer is also read back one
	// document at a time.
	seen := map[int64]bool{}
	last := map[string]ack{}
	for _, a := range acks {
		if seen[a.tx] {
			t.Errorf("tx %d acknowledged twice", a.tx)
		}
		seen[a.tx] = true
		last[a.tag] = a
		if a.tx >= int64(len(log)) {
			t.Errorf("acknowledged tx %d (%s seq %d) is lost: the log ends at tx %d", a.tx, a.tag, a.seq, len(log)-1)
			continue
		}
		ok, err := s.TxCommitted(ctx, a.tx)
		if err != nil || !ok {
			t.Errorf("acknowledged tx %d: committed %v, %v", a.tx, ok, err)
		}
		ops := log[a.tx].Ops
		if len(ops) != crashDocsPerTx(a.seq) {
			t.Errorf("acknowledged tx %d has %d ops, want %d", a.tx, len(ops), crashDocsPerTx(a.seq))
			continue
		}
		for j, op := range ops {
			if want := crashDoc(a.tag, a.seq, j); !store.SameDoc(op.Doc, want) {
				t.Errorf("acknowledged tx %d op %d put %v, want %v", a.tx, j, op.Doc, want)
			}
		}
	}
	for _, a := range last {
		if a.tx >= int64(len(log)) {
			continue
		}
		for j := range crashDocsPerTx(a.seq) {
			want := crashDoc(a.tag, a.seq, j)
			id := want["xt/id"].(string)
			got, err := s.Entity(ctx, id, store.Basis{})
			if err != nil || !store.SameDoc(got, want) {
				t.Errorf("acknowledged tx %d: document %s = %v, %v", a.tx, id, got, err)
			}
			etx, err := s.EntityTx(ctx, id, store.Basis{})
			if err != nil || etx.TxID != a.tx {
				t.Errorf("document %s: entity tx %+v, %v; want tx %d", id, etx, err, a.tx)
			}
		}
	}
}

// crashRun starts writers on the store at path, kills them all with
// SIGKILL after d and returns what they acknowledged.
func crashRun(t *testing.T, path string, run, writers int, d time.Duration) []ack {
	t.Helper()
	var (
		mu   sync.Mutex
		acks []ack
		wg   sync.WaitGroup
	)
	cmds := make([]*exec.Cmd, writers)
	stderrs := make([]*strings.Builder, writers)
	for w := range writers {
		tag := fmt.Sprintf("r%dw%d", run, w)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashHelperEnv+"="+path, crashTagEnv+"="+tag)
		stderrs[w] = &strings.Builder{}
		cmd.Stderr = stderrs[w]
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[w] = cmd
		wg.Go(func() {
			r := bufio.NewReader(out)
			lastSeq := -1
			for {
				line, err := r.ReadString('\n')
				if err != nil { // EOF, or a partial line at the kill: not acknowledged
					if err != io.EOF {
						t.Errorf("reading writer %s: %v", tag, err)
					}
					return
				}
				var a ack
				if _, err := fmt.Sscanf(line, "%d %s %d", &a.tx, &a.tag, &a.seq); err != nil || a.tag != tag || a.seq != lastSeq+1 {
					t.Errorf("writer %s printed %q (after seq %d)", tag, line, lastSeq)
					return
				}
				lastSeq = a.seq
				mu.Lock()
				acks = append(acks, a)
				mu.Unlock()
			}
		})
	}
	time.Sleep(d)
	for _, cmd := range cmds {
		if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("kill: %v", err)
		}
	}
	wg.Wait()
	for w, cmd := range cmds {
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != -1 { // -1: killed by a signal
			t.Errorf("writer %d of run %d ended by itself (%v) before the kill: %s", w, run, err, stderrs[w])
		}
	}
	return acks
}

// checkIntegrity runs PRAGMA integrity_check on the file with the SQLite
// driver directly.
func checkIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0] != "ok" {
		t.Fatalf("PRAGMA integrity_check: %q", msgs)
	}
}
