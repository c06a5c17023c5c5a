package cpusampler

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRunDelay spins two threads on one CPU until each has used 100 ms of
// it: each waits while the other runs, 100 ms in all if one runs to the
// end first, 200 ms if they take turns, and RunDelay must see it.
func TestRunDelay(t *testing.T) {
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/schedstat"); err != nil {
		t.Skip("the kernel keeps no schedstat:", err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Skip("affinity:", err)
	}
	cpu := 0
	for !set.IsSet(cpu) {
		cpu++
	}
	before, err := RunDelay(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var spun sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		spun.Add(1)
		go func() {
			// RunDelay counts live threads: this one goes back to the
			// runtime unpinned instead of ending with the goroutine.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			defer spun.Done()
			var one unix.CPUSet
			one.Set(cpu)
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				errs <- err
				return
			}
			defer unix.SchedSetaffinity(0, &set)
			// A thread the runtime reuses has used CPU before.
			var start, used unix.Timespec
			if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &start); err != nil {
				errs <- err
				return
			}
			for used.Nano()-start.Nano() < int64(100*time.Millisecond) {
				if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &used); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	spun.Wait()
	after, err := RunDelay(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Skip("pinning a thread:", err)
	}
	// 50 ms leaves room for a thread that started spinning late.
	if got := after - before; got < 50*time.Millisecond {
		t.Errorf("run-queue wait grew by %v while two threads shared a CPU for 200 ms", got)
	}
}
