package importer

import (
	"context"

	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// deriveCalls derives and stores the model calls and chat of the sessions
// an import of a file added commits to (harness/recorded; a sub-agent's
// lane is a session of its own), once, so that the inspector, search and
// query_session read them instead of decoding the transcript on every
// page. A failure is a problem of the file: the commits written stand,
// and the calls are derived again on read.
func (im *Importer) deriveCalls(ctx context.Context, res *FileResult) {
	if res == nil || len(res.Commits) == 0 {
		return
	}
	ids := make([]any, len(res.Commits))
	for i, id := range res.Commits {
		ids[i] = id
	}
	docs, err := im.st.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", commits.DocCommit),
		{Field: store.IDKey, Op: store.In, Values: ids}}, Find: []string{"session"}})
	if err != nil {
		res.Problems = append(res.Problems, Problem{Path: res.Path, Msg: "deriving the recorded calls: " + err.Error()})
		return
	}
	seen := map[string]bool{}
	for _, d := range docs {
		sid, _ := d["session"].(string)
		if sid == "" || seen[sid] {
			continue
		}
		seen[sid] = true
		if _, err := recorded.Update(ctx, im.svc, sid); err != nil {
			res.Problems = append(res.Problems, Problem{Path: res.Path, Msg: "deriving the recorded calls of " + sid + ": " + err.Error()})
		}
	}
}
