package solve

import (
	"math"
	"strconv"
	"testing"

	"github.com/perfcast/perfcast/model"
)

func mustParse(t *testing.T, src string) *model.Model {
	t.Helper()
	m, err := model.Parse([]byte(src), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBoundsUtilizationLaw(t *testing.T) {
	// Two replicas of 2 cores; 10 ms of CPU per call, 3 calls per request
	// in expectation (loop mean 3), 50 requests/s: U = 50*0.03/4 = 0.375.
	m := mustParse(t, `perfcast: 1
hosts: {app: {replicas: 2, cpu: {cores: 2}}}
components:
  svc:
    host: app
    operations:
      op: {steps: [{cpu: exp(10ms)}]}
workload:
  w:
    open: {rate: 50/s}
    steps: [{loop: {times: geometric(3), steps: [{call: svc/op}]}}]
`)
	b := Bounds(m)
	if got := b.Utilization["app.cpu"]; math.Abs(got-0.375) > 1e-12 {
		t.Errorf("utilization %g, want 0.375", got)
	}
	if !b.Stable || b.Bottleneck != "app.cpu" || b.Saturation != nil {
		t.Errorf("got %+v", b)
	}
}

func TestBoundsSaturation(t *testing.T) {
	// One core, 20 ms per request: saturates at 50/s; offered 80/s.
	m := mustParse(t, `perfcast: 1
hosts: {app: {}, db: {disks: {d: {}}}}
components:
  svc:
    host: app
    operations:
      op: {steps: [{cpu: 20ms}, {call: store/get}]}
  store:
    host: db
    operations:
      get: {steps: [{disk: 5ms}]}
workload:
  w:
    open: {rate: 80/s}
    steps: [{call: svc/op}]
`)
	b := Bounds(m)
	if b.Stable || b.Bottleneck != "app.cpu" {
		t.Fatalf("got stable=%v bottleneck=%q", b.Stable, b.Bottleneck)
	}
	if got := b.Saturation.At["workload.w.open.rate"]; math.Abs(got-50) > 1e-9 {
		t.Errorf("saturates at %g/s, want 50/s", got)
	}
	if got := b.Utilization["db.disk.d"]; math.Abs(got-0.4) > 1e-12 {
		t.Errorf("disk utilization %g, want 0.4", got)
	}
	// What a solver reports without solving: 1.6 cores asked of one, 0.4
	// of the disk, and a warning that says so.
	res := &Result{}
	b.Overload(res)
	cpu, disk := res.Resources["app.cpu"], res.Resources["db.disk.d"]
	if res.Stable || res.Bottleneck != "app.cpu" || res.Saturation != b.Saturation || cpu == nil || disk == nil || len(res.Warnings) != 1 {
		t.Fatalf("Overload wrote %+v", res)
	}
	if math.Abs(cpu.Utilization-1.6) > 1e-12 || math.Abs(cpu.Busy-1.6) > 1e-12 || math.Abs(disk.Busy-0.4) > 1e-12 {
		t.Errorf("cpu %g (busy %g), disk busy %g; want 1.6, 1.6 and 0.4", cpu.Utilization, cpu.Busy, disk.Busy)
	}
}

func TestBoundsThreadPoolAndLock(t *testing.T) {
	// A pool of 2 threads whose operation holds a thread for at least
	// 30 ms of delay: 2/0.03 = 66.7/s at most; 100/s cannot be served even
	// though the CPU is idle. A lock held around 4 ms: 250/s at most.
	m := mustParse(t, `perfcast: 1
hosts: {app: {cpu: {cores: 8}}}
components:
  svc:
    host: app
    threads: 2
    operations:
      op: {steps: [{delay: 30ms}, {hold: {resource: l, steps: [{delay: 4ms}]}}]}
passive:
  l: {capacity: 1}
workload:
  w:
    open: {rate: 100/s}
    steps: [{call: svc/op}]
`)
	b := Bounds(m)
	if got, want := b.Utilization["svc.threads"], 100*0.034/2; math.Abs(got-want) > 1e-12 {
		t.Errorf("thread pool %g, want %g", got, want)
	}
	if got, want := b.Utilization["l"], 0.4; math.Abs(got-want) > 1e-12 {
		t.Errorf("lock %g, want %g", got, want)
	}
	if b.Stable || b.Bottleneck != "svc.threads" {
		t.Errorf("want unstable at svc.threads, got %v %q", b.Stable, b.Bottleneck)
	}
}

func TestBoundsClosedIgnored(t *testing.T) {
	m := mustParse(t, `perfcast: 1
hosts: {app: {}}
components:
  svc:
    host: app
    operations:
      op: {steps: [{cpu: 1s}]}
workload:
  w:
    closed: {users: 1000, think: 0}
    steps: [{call: svc/op}]
`)
	if b := Bounds(m); !b.Stable || len(b.Utilization) != 0 {
		t.Errorf("closed workloads are always stable, got %+v", b)
	}
}

func TestBoundsFanOutIsLinear(t *testing.T) {
	// Forty layers each calling the next twice: 2^40 paths, which a walk
	// that does not remember operations would never finish.
	src := "perfcast: 1\nhosts: {h: {}}\ncomponents:\n  c:\n    host: h\n    threads: 4\n    operations:\n"
	for i := 0; i < 40; i++ {
		src += "      op" + strconv.Itoa(i) + ": {steps: [{cpu: 1us}, {call: c/op" + strconv.Itoa(i+1) + "}, {call: c/op" + strconv.Itoa(i+1) + "}]}\n"
	}
	src += "      op40: {steps: [{cpu: 1us}]}\nworkload:\n  w:\n    open: {rate: 1e-12}\n    steps: [{call: c/op0}]\n"
	m := mustParse(t, src)
	b := Bounds(m)
	// Visits of op_i are 2^i: total CPU per request (2^41 - 1) µs.
	want := 1e-12 * (math.Pow(2, 41) - 1) * 1e-6
	if got := b.Utilization["h.cpu"]; math.Abs(got-want) > 1e-9*want {
		t.Errorf("cpu %g, want %g", got, want)
	}
}
