//go:build !unix

package files

import "time"

// processCPU is not measured here: the CPU figures of the benchmark read 0.
func processCPU() time.Duration { return 0 }
