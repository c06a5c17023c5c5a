//go:build linux

package cputime

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Thread returns the CPU time the calling thread has used so far
// (CLOCK_THREAD_CPUTIME_ID). Lock the goroutine to its thread around two
// readings that are to be compared.
func Thread() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("cputime: clock_gettime(CLOCK_THREAD_CPUTIME_ID): %w", err)
	}
	return time.Duration(ts.Nano()), nil
}
