package tracegen

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve/sim"
)

// Metrics accumulates the CPU time of simulated spans per machine and
// interval and writes it as a metrics file perfcast reads (--metrics): the
// CPU utilization a host agent would have sampled while the traced system
// ran. Each span's CPU time is spread evenly over its duration. The CPU of
// requests still running when the recording stopped is left out, as their
// spans are. It is not safe for concurrent use.
type Metrics struct {
	interval float64
	base     int64
	cpu      map[string][]float64 // per machine, per interval, CPU seconds
	end      float64              // the latest span end, simulated seconds
}

// DefaultMetricsInterval is the interval between readings, in seconds: a
// common scrape interval.
const DefaultMetricsInterval = 5.0

// NewMetrics returns an accumulator of readings every interval seconds
// (DefaultMetricsInterval if not positive), timed as spans are with opts.
func NewMetrics(interval float64, opts Options) *Metrics {
	if !(interval > 0) {
		interval = DefaultMetricsInterval
	}
	return &Metrics{interval: interval, base: opts.base(), cpu: map[string][]float64{}}
}

// Add counts the CPU time of one span on its machine.
func (m *Metrics) Add(s *sim.Span) {
	m.end = math.Max(m.end, s.End)
	if !(s.CPU > 0) || s.Host == "" {
		return
	}
	bins := m.cpu[s.Host]
	last := int(s.End / m.interval)
	for len(bins) <= last {
		bins = append(bins, 0)
	}
	m.cpu[s.Host] = bins
	d := s.End - s.Start
	if !(d > 0) {
		bins[last] += s.CPU
		return
	}
	for i := int(s.Start / m.interval); i <= last; i++ {
		lo := math.Max(s.Start, float64(i)*m.interval)
		hi := math.Min(s.End, float64(i+1)*m.interval)
		if hi > lo {
			bins[i] += s.CPU * (hi - lo) / d
		}
	}
}

// Write writes the readings as CSV with the header
// timestamp,host,cpu_seconds,cores: per machine the cumulative CPU seconds
// at the start of the recording and at the end of every interval up to the
// last span's end, timestamps in Unix seconds. machines gives the CPU of
// each machine (see Machines): its cores, and where some machine's limit
// binds, the columns cpu_limit (cores, empty for none) and cpu_period
// follow, as a container's metrics would state them. Machines without CPU
// time are left out.
func (m *Metrics) Write(w io.Writer, machines map[string]model.CPU) error {
	bw := bufio.NewWriter(w)
	limited := false
	for _, c := range machines {
		limited = limited || c.Limited()
	}
	bw.WriteString("timestamp,host,cpu_seconds,cores")
	if limited {
		bw.WriteString(",cpu_limit,cpu_period")
	}
	bw.WriteString("\n")
	n := int(math.Ceil(m.end / m.interval))
	hosts := slices.Sorted(maps.Keys(m.cpu))
	sums := make([]float64, len(hosts))
	for i := 0; i <= n; i++ {
		t := float64(m.base)/1e9 + float64(i)*m.interval
		for j, host := range hosts {
			if bins := m.cpu[host]; i > 0 && i-1 < len(bins) {
				sums[j] += bins[i-1]
			}
			c := machines[host]
			fmt.Fprintf(bw, "%s,%s,%s,%d", strconv.FormatFloat(t, 'f', -1, 64), host,
				strconv.FormatFloat(sums[j], 'g', 9, 64), c.Cores)
			switch {
			case c.Limited():
				fmt.Fprintf(bw, ",%s,%s", strconv.FormatFloat(c.Limit, 'g', -1, 64), model.FormatDuration(c.LimitPeriod()))
			case limited:
				bw.WriteString(",,")
			}
			bw.WriteString("\n")
		}
	}
	return bw.Flush()
}

// Machines gives the CPU of every machine of m by the name its recorded
// spans carry (sim.ReplicaHost).
func Machines(m *model.Model) map[string]model.CPU {
	out := map[string]model.CPU{}
	for _, h := range m.Hosts {
		for i := range max(h.Replicas, 1) {
			out[sim.ReplicaHost(h.Name, max(h.Replicas, 1), i)] = h.CPU
		}
	}
	return out
}
