package main

import (
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// hostInfo describes the machine: CPU model and count, Go version.
func hostInfo() string {
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d × %s, %s", runtime.NumCPU(), cpu, runtime.Version())
}

// baseSlice is Linux's scheduler slice before it is scaled to the CPUs:
// EEVDF's sched_base_slice, as CFS's sched_min_granularity before it.
const baseSlice = 750 * time.Microsecond

// schedulerSlice returns how long Linux lets a thread run on a CPU before
// a thread that woke there takes it, and where the figure came from:
// debugfs's sched/base_slice_ns where it can be read, else the kernel's
// default, baseSlice × (1 + log₂ of the online CPUs, at most 8), its
// logarithmic scaling (SCHED_TUNABLESCALING_LOG).
func schedulerSlice() (time.Duration, string) {
	if data, err := os.ReadFile("/sys/kernel/debug/sched/base_slice_ns"); err == nil {
		if ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && ns > 0 {
			return time.Duration(ns), "/sys/kernel/debug/sched/base_slice_ns"
		}
	}
	cpus, from := runtime.NumCPU(), "the CPUs Go sees"
	if data, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		if n, err := countCPUs(string(data)); err == nil && n > 0 {
			cpus, from = n, "/sys/devices/system/cpu/online"
		}
	}
	return scaledSlice(cpus), fmt.Sprintf("the kernel's default for %d online CPUs (%s): %s × (1 + log₂ %d)", cpus, from, baseSlice, min(cpus, 8))
}

// scaledSlice is baseSlice scaled to cpus online CPUs as Linux scales it.
func scaledSlice(cpus int) time.Duration {
	// 1 + ⌊log₂ n⌋ is the bit length of n.
	return baseSlice * time.Duration(bits.Len(uint(min(max(cpus, 1), 8))))
}

// countCPUs counts the CPUs of a Linux CPU list ("0-3,8,10-11").
func countCPUs(list string) (int, error) {
	n := 0
	for part := range strings.SplitSeq(strings.TrimSpace(list), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("CPU list %q: %w", list, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, fmt.Errorf("CPU list %q: %w", list, err)
			}
		}
		if a < 0 || b < a {
			return 0, fmt.Errorf("CPU list %q: bad range %q", list, part)
		}
		n += b - a + 1
	}
	return n, nil
}
