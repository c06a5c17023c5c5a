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
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
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

// Run writes the header and one sample of the process's CPU time
// (ProcessCPU) at once, then one every interval, and a last one when ctx
// ends; it returns nil then, or the first error of reading the clock or
// writing.
func Run(ctx context.Context, w io.Writer, host string, interval time.Duration) error {
	return RunClock(ctx, w, host, interval, ProcessCPU)
}

// RunClock is Run with another cumulative CPU clock, such as CPUsBusy's.
func RunClock(ctx context.Context, w io.Writer, host string, interval time.Duration, clock func() (time.Duration, error)) error {
	bw := bufio.NewWriter(w)
	if _, err := fmt.Fprintln(bw, Header); err != nil {
		return fmt.Errorf("cpusampler: write: %w", err)
	}
	sample := func(now time.Time) error {
		cpu, err := clock()
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

// clockTick is the unit of /proc/stat's CPU times, USER_HZ, which Linux
// fixes at 100 per second for user space.
const clockTick = 10 * time.Millisecond

// CPUsBusy returns the time the machine's CPUs cpus (all of them when
// empty) have been busy since boot, by /proc/stat: user, nice, system, irq
// and softirq time, not idle, I/O wait or time stolen by the hypervisor.
// Less the CPU time of the processes one knows of, it tells what else ran
// on those CPUs.
func CPUsBusy(cpus ...int) (time.Duration, error) {
	return statTime(cpus, busyColumns)
}

// CPUsStolen returns the time the hypervisor has taken from the machine's
// CPUs cpus (all of them when empty) since boot, by /proc/stat's steal
// column: time a virtual CPU wanted to run and its host ran something
// else. The guest's processes are not charged for it, so their CPU time
// does not show it, but their requests wait through it.
func CPUsStolen(cpus ...int) (time.Duration, error) {
	return statTime(cpus, stealColumns)
}

// Columns of a /proc/stat CPU line (after its name): user nice system idle
// iowait irq softirq steal ….
var (
	busyColumns  = []int{1, 2, 3, 6, 7}
	stealColumns = []int{8}
)

func statTime(cpus, columns []int) (time.Duration, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("cpusampler: %w", err)
	}
	defer f.Close()
	return sumColumns(f, cpus, columns)
}

// busy sums the busy time of the CPUs cpus (the "cpu" line when empty) in
// a /proc/stat text.
func busy(r io.Reader, cpus []int) (time.Duration, error) {
	return sumColumns(r, cpus, busyColumns)
}

// sumColumns sums the columns of the lines of the CPUs cpus (the "cpu"
// line when empty) in a /proc/stat text.
func sumColumns(r io.Reader, cpus, columns []int) (time.Duration, error) {
	want := map[string]bool{}
	for _, c := range cpus {
		want["cpu"+strconv.Itoa(c)] = true
	}
	if len(cpus) == 0 {
		want["cpu"] = true
	}
	var ticks int64
	found := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !want[f[0]] {
			continue
		}
		if len(f) <= slices.Max(columns) {
			return 0, fmt.Errorf("cpusampler: /proc/stat: short line %q", sc.Text())
		}
		for _, i := range columns {
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cpusampler: /proc/stat: %q: %w", sc.Text(), err)
			}
			ticks += v
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("cpusampler: /proc/stat: %w", err)
	}
	if found != len(want) {
		return 0, fmt.Errorf("cpusampler: /proc/stat: %d of the CPUs %v", found, cpus)
	}
	return time.Duration(ticks) * clockTick, nil
}

// RunDelay returns the time the threads of process pid have spent ready
// to run but waiting for a CPU since they started, by the second field of
// each /proc/PID/task/TID/schedstat (Linux's run-queue wait). Threads that
// ended are not counted, so the sum can fall between two readings; a Go
// process keeps the threads it made. Set against the process's CPU time it
// tells how much longer the process's work took than its CPU time because
// other threads (its own or other processes') held the CPUs.
func RunDelay(pid int) (time.Duration, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("cpusampler: %w", err)
	}
	var sum time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread ended after the listing
		}
		if err != nil {
			return 0, fmt.Errorf("cpusampler: %w", err)
		}
		d, err := schedWait(string(data))
		if err != nil {
			return 0, fmt.Errorf("cpusampler: %s/%s/schedstat: %w", dir, t.Name(), err)
		}
		sum += d
	}
	return sum, nil
}

// schedWait reads the run-queue wait, in nanoseconds, from a schedstat
// line: "CPU-time run-queue-wait timeslices".
func schedWait(line string) (time.Duration, error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0, fmt.Errorf("%q: not CPU time, wait and slices", line)
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("%q: the wait is not a count of nanoseconds", line)
	}
	return time.Duration(ns), nil
}

// The Go runtime's estimates of its processors' time.
const (
	procsTotalMetric = "/cpu/classes/total:cpu-seconds"
	procsIdleMetric  = "/cpu/classes/idle:cpu-seconds"
)

// ProcessorsBusy returns the time the Go runtime's processors in this
// process (GOMAXPROCS of them) have not been idle since it started: each
// was held by a thread running goroutines, the garbage collector or the
// runtime's own work, and stays held while that thread waits for a CPU or
// sits in a short system call. With GOMAXPROCS 1 it is the time the
// process's one processor was taken, which requests queue for. The
// runtime updates the figure at each garbage collection only; set against
// ProcessorsTotal at the same samples it gives the processors'
// utilization between two collections. The error is always nil: the
// signature is RunClock's clock's.
func ProcessorsBusy() (time.Duration, error) {
	total, idle := readProcessors()
	return time.Duration((total - idle) * 1e9), nil
}

// ProcessorsTotal returns the time the Go runtime's processors in this
// process have been there, GOMAXPROCS integrated over the time it has run,
// as of the last garbage collection (see ProcessorsBusy). The error is
// always nil.
func ProcessorsTotal() (time.Duration, error) {
	total, _ := readProcessors()
	return time.Duration(total * 1e9), nil
}

// readProcessors reads the runtime's processor time, total and idle, in
// seconds.
func readProcessors() (total, idle float64) {
	s := []metrics.Sample{{Name: procsTotalMetric}, {Name: procsIdleMetric}}
	metrics.Read(s)
	return s[0].Value.Float64(), s[1].Value.Float64()
}
