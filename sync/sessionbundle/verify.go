package sessionbundle

import (
	"errors"
	"fmt"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// verifyObject checks that a put of op writes an object that describes
// itself truly: a document whose "type" is an object kind (objects.Kind)
// must decode as one (objects.FromDoc: id rules, identity hash recomputed)
// and its content and metadata view hashes must be those its fields give
// (Object.VerifyHashes). A store never re-checks an object it holds, and
// readers (session state, object pages) trust these hashes, so an import
// refuses a bundle carrying a self-inconsistent object before writing
// anything, naming the op, the entity and the field. Other documents (call
// records, commits, session state) carry no self-describing hash.
func verifyObject(i int, op versionlog.Op) error {
	if op.Kind != store.OpPut || op.Doc == nil || op.Evicted {
		return nil
	}
	doc, err := store.DecodeDoc(op.Doc)
	if err != nil {
		return fmt.Errorf("%w: op %d on %s: %v", ErrCorrupt, i+1, op.ID, err)
	}
	kind, _ := doc["type"].(string)
	if !objects.Kind(kind).Valid() {
		return nil
	}
	o, err := objects.FromDoc(doc)
	if err == nil {
		err = o.VerifyHashes()
	}
	if err != nil {
		return fmt.Errorf("%w: op %d puts %s object %s whose %s does not hold: %v", ErrCorrupt, i+1, kind, op.ID, objectField(err), err)
	}
	return nil
}

// objectField names the field an objects error is about: the hash that
// differs, else the field at fault ("document" for the whole).
func objectField(err error) string {
	var hm *objects.HashMismatchError
	if errors.As(err, &hm) {
		return hm.Hash
	}
	var fe *objects.FieldError
	if errors.As(err, &fe) && fe.Field != "" {
		return fe.Field
	}
	return "document"
}
