package recorded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// ReplayType is the document of what a recorded session would have cost
// with ctxstore managing its context ("recorded-replay:{session}"),
// computed on demand (explain/inspect.Replay, `ctxstore session show
// --replay`) and stored, so that pages read it instead of replaying.
const ReplayType = "recorded_replay"

// ReplayID is the id of a session's replay document.
func ReplayID(sid string) string { return "recorded-replay:" + sid }

// Replay is a recorded session replayed under what its harness recorded
// and under ctxstore's strategy (eval/replay): both priced by the
// replay's cost model, in base input tokens, so their ratio is what
// ctxstore would have changed.
type Replay struct {
	// Commits is the chain's commit count the replay read (a grown chain
	// makes it stale).
	Commits  int       `json:"commits"`
	Computed time.Time `json:"computed"`
	// Strategy is ctxstore's strategy replayed; CacheModel the provider
	// cache model both were priced under.
	Strategy   string `json:"strategy"`
	CacheModel string `json:"cache_model"`
	Calls      int    `json:"calls"`
	// RecordedCost and Cost are the harness's recorded requests' and
	// ctxstore's costs; RecordedContext and Context the tokens they sent.
	RecordedCost    float64 `json:"recorded_cost"`
	Cost            float64 `json:"cost"`
	RecordedContext int64   `json:"recorded_context"`
	Context         int64   `json:"context"`
	RecordedShare   float64 `json:"recorded_cache_share"`
	CacheShare      float64 `json:"cache_share"`
}

// PutReplay stores r as session sid's replay.
func PutReplay(ctx context.Context, st store.Store, sid string, r Replay) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	d := store.Doc{store.IDKey: ReplayID(sid), "type": ReplayType, "session_id": sid, "replay": m}
	if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(d)}); err != nil {
		return fmt.Errorf("session %s: storing its replay: %w", sid, err)
	}
	return nil
}

// ReadReplay reads session sid's stored replay; ok is false when there is
// none, or when it read another number of commits than commits (-1: do not
// compare).
func ReadReplay(ctx context.Context, st store.Store, sid string, commits int) (r Replay, ok bool, err error) {
	d, err := st.Entity(ctx, ReplayID(sid), store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	b, err := json.Marshal(d["replay"])
	if err != nil {
		return r, false, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, fmt.Errorf("%s: %w", ReplayID(sid), err)
	}
	return r, commits < 0 || r.Commits == commits, nil
}

// Transcript returns session sid's transcript as its harness wrote it:
// the lines of its file chain's commits, in order (Claude Code, Pi and
// Codex sessions are imported as their own lines). A session imported
// as neutral events (a SWE-agent trajectory) has none: ErrNoTranscript.
func Transcript(ctx context.Context, svc *commits.Service, sid string) (format string, data []byte, commitCount int, err error) {
	cs, all, _, err := commitsOf(ctx, svc, sid)
	if err != nil {
		return "", nil, 0, err
	}
	var buf bytes.Buffer
	for _, c := range cs {
		if c.Format == commits.FormatEvents {
			return "", nil, all, ErrNoTranscript
		}
		if format == "" {
			format = c.Format
		}
		b, err := svc.Content(ctx, c)
		if err != nil {
			return "", nil, all, fmt.Errorf("session %s: %w", sid, err)
		}
		buf.Write(b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			buf.WriteByte('\n')
		}
	}
	if buf.Len() == 0 {
		return "", nil, all, ErrNoTranscript
	}
	return format, buf.Bytes(), all, nil
}

// ErrNoTranscript: the session's commits hold no harness lines to replay.
var ErrNoTranscript = errors.New("the session was not imported as its harness's lines (a SWE-agent trajectory is stored as events): nothing to replay")
