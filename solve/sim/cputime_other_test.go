//go:build !unix

package sim

import "time"

// cpuTime is not measured on this system; benchmarks report wall time only.
func cpuTime() time.Duration { return 0 }
