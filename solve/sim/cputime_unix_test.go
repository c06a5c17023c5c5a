//go:build unix

package sim

import (
	"syscall"
	"time"
)

// cpuTime is the processor time the test process has used, which, unlike
// the wall clock, does not count time lost to other processes on a busy
// machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
