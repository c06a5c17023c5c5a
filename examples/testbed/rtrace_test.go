package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// traceHeader is how a Go execution trace begins ("go 1.NN trace").
var traceHeader = []byte("go 1.")

func TestRuntimeTraceWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svc.trace")
	rt, err := startRuntimeTrace(path, 0, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// Work for the trace to show, and a wait past the window's end.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { time.Sleep(5 * time.Millisecond) })
	}
	wg.Wait()
	time.Sleep(60 * time.Millisecond)
	if err := rt.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := rt.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, traceHeader) || len(b) < 100 {
		t.Fatalf("not an execution trace: %d bytes, starting %q", len(b), b[:min(len(b), 16)])
	}
}

// A service stopped before the window opens leaves an empty file and no
// trace running, so that a later trace can start.
func TestRuntimeTraceStoppedBeforeWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svc.trace")
	rt, err := startRuntimeTrace(path, time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Stop(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("file: %v, %v", fi, err)
	}
	// Until stopped (no span): the trace runs, and stops with the service.
	rt, err = startRuntimeTrace(path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if err := rt.Stop(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !bytes.HasPrefix(b, traceHeader) {
		t.Fatalf("no trace after a run until stopped: %d bytes", len(b))
	}
}

func TestRuntimeTraceBadWindow(t *testing.T) {
	if _, err := startRuntimeTrace(filepath.Join(t.TempDir(), "x"), -time.Second, 0); err == nil {
		t.Fatal("a negative window was accepted")
	}
	if _, err := startRuntimeTrace(filepath.Join(t.TempDir(), "no", "such", "dir"), 0, 0); err == nil {
		t.Fatal("an unwritable path was accepted")
	}
}
