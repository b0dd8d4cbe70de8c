package sessionbundle

import (
	"fmt"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// verifyObject checks that a put of op writes an object that describes
// itself truly (objects.VerifyDoc): a store never re-checks an object it
// holds, and readers (session state, object pages) trust its hashes, so an
// import refuses a bundle carrying a self-inconsistent object before
// writing anything, naming the op, the entity and the field. Other
// documents (call records, commits, session state) pass.
func verifyObject(i int, op versionlog.Op) error {
	if op.Kind != store.OpPut || op.Doc == nil || op.Evicted {
		return nil
	}
	doc, err := store.DecodeDoc(op.Doc)
	if err != nil {
		return fmt.Errorf("%w: op %d on %s: %v", ErrCorrupt, i+1, op.ID, err)
	}
	if err := objects.VerifyDoc(doc); err != nil {
		return fmt.Errorf("%w: op %d puts %v object %s whose %s does not hold: %v", ErrCorrupt, i+1, doc["type"], op.ID, objects.ErrorField(err), err)
	}
	return nil
}
