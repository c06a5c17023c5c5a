//go:build !linux

package cputime

import (
	"errors"
	"time"
)

// Thread returns the CPU time the calling thread has used so far. This
// system has no per-thread CPU clock support here: it always fails.
func Thread() (time.Duration, error) {
	return 0, errors.New("cputime: no thread CPU clock on this system")
}
