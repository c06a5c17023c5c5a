package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
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
