package importer

import (
	"context"
	"fmt"
	"os"
)

// importTraj imports a SWE-agent trajectory. Not yet: the reader comes
// from context/harness/sweagent (docs/import.md).
func (im *Importer) importTraj(ctx context.Context, path string, f *os.File, size int64) (*FileResult, error) {
	return nil, fmt.Errorf("import %s: SWE-agent trajectories are not imported yet", path)
}
