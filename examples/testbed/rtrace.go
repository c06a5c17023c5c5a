package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/trace"
	"sync"
	"time"
)

// runtimeTrace writes a Go execution trace (runtime/trace) of a window of
// the process's run to a file: from after the start for span (0: until
// stopped). The trace shows, per goroutine, when it was runnable and when
// it ran, blocked or was in a system call, which neither the spans nor the
// CPU metrics can tell apart; `go tool trace -pprof=sched|sync|syscall|net`
// reads it. Tracing costs: each system call and scheduling event is
// recorded, so a syscall-heavy handler (SQLite reading its pages) runs
// noticeably slower while the trace is on.
type runtimeTrace struct {
	f      *os.File
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// startRuntimeTrace creates path and starts the window's goroutine.
func startRuntimeTrace(path string, after, span time.Duration) (*runtimeTrace, error) {
	if after < 0 || span < 0 {
		return nil, errors.New("runtime-trace: negative window")
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("runtime-trace: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &runtimeTrace{f: f, cancel: cancel, done: make(chan error, 1)}
	go func() { t.done <- t.run(ctx, after, span) }()
	return t, nil
}

// run waits for the window, traces through it, and stops at its end or
// when ctx is done, whichever comes first.
func (t *runtimeTrace) run(ctx context.Context, after, span time.Duration) error {
	if !sleep(ctx, after) {
		return nil
	}
	if err := trace.Start(t.f); err != nil {
		return fmt.Errorf("runtime-trace: %w", err)
	}
	defer trace.Stop()
	if span > 0 {
		sleep(ctx, span)
	} else {
		<-ctx.Done()
	}
	return nil
}

// sleep waits d or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d == 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Stop ends the trace if it is still running and closes the file; it can
// be called more than once.
func (t *runtimeTrace) Stop() error {
	t.once.Do(func() {
		t.cancel()
		err := <-t.done
		if cerr := t.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("runtime-trace: %w", cerr)
		}
		t.err = err
	})
	return t.err
}
