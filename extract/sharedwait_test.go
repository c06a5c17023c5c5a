package extract_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
)

// sharedModel is a service on four cores whose requests spend OFF off the
// CPU, 125 a second: a disk of one server 50 % busy, or an equal delay,
// or a lock of one around a delay, which no span shows.
const sharedModel = `perfcast: 1
name: shared
hosts:
  box:
    cpu: {cores: CORES}
    disks:
      data: {servers: 1}
components:
  files:
    host: box
    operations:
      read:
        steps:
          - cpu: exp(CPU)
          - OFF
          - delay: exp(2ms)
passive:
  mutex: {capacity: 1}
workload:
  reads:
    open: {rate: RATE}
    steps: [{call: files/read}]
`

// TestSharedWait extracts sharedModel's traces. Where the time off the
// CPU is spent at a disk or under a lock that the traces do not show,
// the operation's own time is longer where it began beside other
// executions than where it began alone: the model gets a server on the
// host (sharedServers), about as busy as the truth's (52 and 53 % for
// 50; on two replicas behind a round-robin balancer, 55 %), the report
// warns, and the requests are predicted at 0.8 to 1.4 times the load
// (as a fixed delay, the disk's were 16 % slow at 0.8 times and 17 and
// 36 % fast at 1.2 and 1.4). Where it is a delay, on four cores or on
// one or two busy ones (where those that began beside others wait for
// the CPU, which the model makes), or a lock the configuration declares
// (whose wait the model makes), none is made. The declared lock is held
// around the whole operation in the model, a known coarseness, so its
// predictions are not checked here.
func TestSharedWait(t *testing.T) {
	const (
		disk  = "disk: exp(4ms)"
		delay = "delay: exp(4ms)"
		lock  = "hold: {resource: mutex, steps: [{delay: exp(4ms)}]}"
	)
	for _, c := range []struct {
		name, off, cpu, rate string
		cores                int
		declared, warned     bool
	}{
		{"disk", disk, "0.5ms", "125/s", 4, false, true},
		{"disk on two replicas", disk, "0.5ms", "250/s", 4, false, true},
		{"lock", lock, "0.5ms", "125/s", 4, false, true},
		{"delay", delay, "0.5ms", "125/s", 4, false, false},
		{"declared lock", lock, "0.5ms", "125/s", 4, true, false},
		{"delay on one busy core", delay, "3ms", "200/s", 1, false, false},
		{"delay on two busy cores", delay, "3ms", "250/s", 2, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := strings.NewReplacer("OFF", c.off, "CORES", fmt.Sprint(c.cores), "CPU", c.cpu, "RATE", c.rate).Replace(sharedModel)
			host := "box" // the model's host: a replicated one is named after its component
			if strings.Contains(c.name, "replicas") {
				text, host = strings.Replace(text, "  box:\n", "  box:\n    replicas: 2\n", 1), "files"
			}
			cfg := &extract.Config{Hosts: map[string]extract.HostConfig{host: {Cores: c.cores}}}
			if c.declared {
				cfg.Passive = map[string]extract.PassiveConfig{"mutex": {Capacity: 1, Operations: []string{"files/read"}}}
			}
			m, _, x := extractTruth(t, text, "shared", 40000, 40000, cfg)
			server := host + ".disk.untraced"
			if got := mentions(x.Report.Warnings, server); (got > 0) != c.warned {
				t.Errorf("warned %d times, want %v: %q", got, c.warned, x.Report.Warnings)
			}
			h := x.Model.Host(host)
			if made := h != nil && h.Disk("untraced") != nil; made != c.warned {
				t.Errorf("a server of the waits not shown: %v, want %v", made, c.warned)
			} else if made {
				// As busy as the truth's disk or lock: 4 ms at 125/s
				// on each replica. The share taken lies within the
				// estimate's 95 % interval (half-width about 0.035 here),
				// as the truth's does: they are at most its width apart.
				if u := solveSim(t, x.Model).Resources[server].Utilization; math.Abs(u-0.5) > 0.07 {
					t.Errorf("%s %.3g busy, want 0.5 ± 0.07", server, u)
				}
			}
			if !c.declared {
				check(t, loadComparisons(t, m, "reads", x.Model, x.Model.Workloads[0].Name, 0.8, 1, 1.2, 1.4))
			}
		})
	}
}

// fanOutModel is a service whose large requests call a worker four times
// in parallel, each call ten times as long as a small request's one: the
// worker's executions that begin beside others are mostly large ones,
// though nothing is shared.
const fanOutModel = `perfcast: 1
name: fan-out
hosts:
  front: {cpu: {cores: 4}}
  back: {cpu: {cores: 4}}
components:
  api:
    host: front
    operations:
      get:
        steps:
          - cpu: exp(0.3ms)
          - switch:
              on: size
              cases:
                small: [{call: worker/do}]
                large: [{parallel: [[{call: worker/do}], [{call: worker/do}], [{call: worker/do}], [{call: worker/do}]]}]
  worker:
    host: back
    operations:
      do:
        steps:
          - cpu: exp(0.3ms)
          - switch:
              on: size
              cases:
                small: [{delay: exp(1ms)}]
                large: [{delay: exp(10ms)}]
workload:
  gets:
    open: {rate: 60/s}
    params:
      size: {pmf: {small: 0.5, large: 0.5}}
    steps: [{call: api/get}]
`

// TestSharedWaitNotFanOut extracts fanOutModel: the worker's own time
// grows with the executions under way as it begins only through its own
// request's parallel calls, which the sweep leaves out, and no server is
// made (counting them, one 26 % busy was).
func TestSharedWaitNotFanOut(t *testing.T) {
	_, _, x := extractTruth(t, fanOutModel, "fan-out", 40000, 20000,
		&extract.Config{Hosts: map[string]extract.HostConfig{"front": {Cores: 4}, "back": {Cores: 4}}})
	if n := mentions(x.Report.Warnings, "untraced"); n > 0 {
		t.Errorf("a server of waits not shown: %q", x.Report.Warnings)
	}
}
