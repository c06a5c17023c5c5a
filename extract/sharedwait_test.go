package extract_test

import (
	"fmt"
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

// TestSharedWait extracts sharedModel's traces: where the time off the
// CPU is spent at a disk or under a lock that the traces do not show, the
// operation's own time is longer where it began beside other executions
// than where it began alone, and the report warns that the model's fixed
// delay will be short beyond the observed load. Where it is a delay, on
// four cores or on one or two busy ones (where those that began beside
// others wait for the CPU, which the model makes), or a lock the
// configuration declares (whose wait the model makes), it does not.
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
		{"lock", lock, "0.5ms", "125/s", 4, false, true},
		{"delay", delay, "0.5ms", "125/s", 4, false, false},
		{"declared lock", lock, "0.5ms", "125/s", 4, true, false},
		{"delay on one busy core", delay, "3ms", "200/s", 1, false, false},
		{"delay on two busy cores", delay, "3ms", "250/s", 2, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := strings.NewReplacer("OFF", c.off, "CORES", fmt.Sprint(c.cores), "CPU", c.cpu, "RATE", c.rate).Replace(sharedModel)
			cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"box": {Cores: c.cores}}}
			if c.declared {
				cfg.Passive = map[string]extract.PassiveConfig{"mutex": {Capacity: 1, Operations: []string{"files/read"}}}
			}
			_, _, x := extractTruth(t, text, "shared", 40000, 20000, cfg)
			if got := mentions(x.Report.Warnings, "files/read: its own time grows with the executions under way"); (got > 0) != c.warned {
				t.Errorf("warned %d times, want %v: %q", got, c.warned, x.Report.Warnings)
			}
		})
	}
}
