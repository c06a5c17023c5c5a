//go:build unix

package trace

import "syscall"

// cpuSeconds is the processor time the process has used, user and system.
// Benchmarks divide work by it to report rates per core that do not depend
// on how busy the machine is.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
