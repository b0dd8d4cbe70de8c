package tools

import (
	"testing"

	"github.com/ctxstore/ctxstore/context/expand"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
)

func resolveLatest(e *env, id string) (*objects.Object, int64, error) {
	return expand.Resolve(e.ctx, e.st, objects.DynamicRef(id))
}

func TestMain(m *testing.M) { storetestenv.Main(m) }
