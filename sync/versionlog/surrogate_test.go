package versionlog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// A lone surrogate escape anywhere in a log line (an id, a document) is
// refused naming the line and the byte: encoding/json would decode \ud800
// and \udfff alike as U+FFFD, making two ids one. A pair is accepted.
func TestLoneSurrogateRefused(t *testing.T) {
	ctx := context.Background()
	src := openSQLite(t, "src.db")
	if _, err := store.SubmitWait(ctx, src, []store.Op{{Kind: store.OpPut, Doc: store.Doc{"xt/id": "kX", "v": "vY"}}}); err != nil {
		t.Fatal(err)
	}
	log := exportBytes(t, src, -1)
	lines := logLines(log)
	for _, c := range []struct{ old, new string }{{`"kX"`, `"k\ud800"`}, {`"vY"`, `"v\udfff"`}} {
		i := lineIndex(t, lines, c.old, 0)
		bad := bytes.Replace(lines[i], []byte(c.old), []byte(c.new), 1)
		at := bytes.Index(bad, []byte(`\ud`))
		damaged := bytes.Join(append(append(append([][]byte{}, lines[:i]...), bad), lines[i+1:]...), nil)
		dst := openSQLite(t, fmt.Sprintf("dst-%d.db", i))
		_, err := versionlog.Import(ctx, dst, bytes.NewReader(damaged), versionlog.ImportOptions{})
		var le *versionlog.LineError
		if !errors.As(err, &le) || le.Line != int64(i+1) || !errors.Is(err, versionlog.ErrCorrupt) ||
			!strings.Contains(err.Error(), fmt.Sprintf("byte %d of line %d", at, i+1)) {
			t.Fatalf("%s: import error %v, want a corrupt line %d at byte %d", c.new, err, i+1, at)
		}
		if n := txCount(t, dst); n != 0 {
			t.Fatalf("%s: the refused log wrote %d transactions", c.new, n)
		}
	}
	// A surrogate pair is one character, accepted.
	i := lineIndex(t, lines, `"vY"`, 0)
	good := bytes.Replace(lines[i], []byte(`"vY"`), []byte(`"v\ud83d\ude00"`), 1)
	ok := bytes.Join(append(append(append([][]byte{}, lines[:i]...), good), lines[i+1:]...), nil)
	if _, err := versionlog.Import(ctx, openSQLite(t, "pair.db"), bytes.NewReader(ok), versionlog.ImportOptions{}); err != nil && strings.Contains(err.Error(), "surrogate") {
		t.Fatalf("a surrogate pair refused: %v", err)
	}
}

// store.DecodeDoc refuses a lone surrogate escape naming its byte.
func TestDecodeDocLoneSurrogate(t *testing.T) {
	for _, s := range []string{`{"xt/id":"k\ud800"}`, `{"xt/id":"k","v":["\udfff"]}`, `{"xt/id":"k","v":"\ud800\u0041"}`} {
		_, err := store.DecodeDoc([]byte(s))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("byte %d:", strings.Index(s, `\ud`))) {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := store.DecodeDoc([]byte(`{"xt/id":"k\ud83d\ude00"}`)); err != nil {
		t.Errorf("a pair: %v", err)
	}
}
