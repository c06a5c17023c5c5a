//go:build !unix

package ingest_test

// cpuSeconds is not measured on this system.
func cpuSeconds() float64 { return 0 }
