package httpapi

import (
	"testing"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
)

// TestMain stops the XTDB node a benchmark on XTDB started
// (CTXSTORE_BENCH_BACKEND=xtdb).
func TestMain(m *testing.M) { storetestenv.Main(m) }
