// Package cpusampler writes the CPU time a process has used, once an
// interval, as the CSV perfcast reads with --metrics:
//
//	timestamp,host,cpu_seconds
//	2024-05-01T12:00:00.000Z,node-1,12.345678
//
// cpu_seconds is cumulative (user plus system time since the process
// started, from getrusage); timestamps are RFC 3339 in UTC.
package cpusampler

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"time"
)

// Header is the CSV header line, without its newline.
const Header = "timestamp,host,cpu_seconds"

// TimeLayout is the layout of the timestamp column.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// ProcessCPU returns the CPU time, user plus system, that the calling
// process has used since it started.
func ProcessCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("cpusampler: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// Run writes the header and one sample at once, then one every interval,
// and a last one when ctx ends; it returns nil then, or the first error of
// reading the clock or writing.
func Run(ctx context.Context, w io.Writer, host string, interval time.Duration) error {
	bw := bufio.NewWriter(w)
	if _, err := fmt.Fprintln(bw, Header); err != nil {
		return fmt.Errorf("cpusampler: write: %w", err)
	}
	sample := func(now time.Time) error {
		cpu, err := ProcessCPU()
		if err != nil {
			return err
		}
		line := now.UTC().Format(TimeLayout) + "," + host + "," + strconv.FormatFloat(cpu.Seconds(), 'f', 6, 64) + "\n"
		if _, err := bw.WriteString(line); err != nil {
			return fmt.Errorf("cpusampler: write: %w", err)
		}
		// Flush every line: a reader may follow the file while it grows.
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("cpusampler: write: %w", err)
		}
		return nil
	}
	if err := sample(time.Now()); err != nil {
		return err
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return sample(time.Now())
		case now := <-tick.C:
			if err := sample(now); err != nil {
				return err
			}
		}
	}
}
