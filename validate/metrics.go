package validate

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/metrics"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// minMetricsCoverage is the share of the measured time a host's metrics
// must cover for its utilization to be taken from them.
const minMetricsCoverage = 0.9

// useMetrics sets the measured CPU utilization of every host of c whose
// machines all have a series in set covering the measured time: busy cores
// averaged over that time, summed over the machines, over the host's cores
// and replicas, with a 95 % interval from the spread of the readings.
// Metrics take precedence over span CPU times: they see all the work on
// the machine, the instrumentation's included. It returns warnings.
func useMetrics(c *model.Model, st *extract.State, measured *solve.Result, set *metrics.Set) []string {
	from, to := st.First, st.Last
	if set == nil || to <= from {
		return nil
	}
	window := float64(to-from) / 1e9
	machines := map[string]map[string]bool{}
	for _, comp := range c.Components {
		for _, mach := range st.Windows.HostsOf(comp.Name) {
			if machines[comp.Host] == nil {
				machines[comp.Host] = map[string]bool{}
			}
			machines[comp.Host][mach] = true
		}
	}
	var used, skipped []string
	for _, h := range c.Hosts {
		names := slices.Sorted(maps.Keys(machines[h.Name]))
		if len(names) == 0 {
			names = []string{h.Name}
		}
		var busy, variance float64
		ok := true
		for _, name := range names {
			s := st.Windows.HostSeries(name, set)
			if s == nil {
				ok = false
				break
			}
			cores := float64(h.CPU.Cores)
			if s.Cores > 0 {
				cores = float64(s.Cores)
			}
			b, covered := s.Busy(from, to, cores)
			if covered < minMetricsCoverage*window {
				ok = false
				break
			}
			busy += b / covered
			variance += readingVariance(s, from, to, cores)
		}
		res := model.CPUResource(h.Name)
		if !ok {
			if measured.Resources[res] == nil && len(machines[h.Name]) > 0 {
				skipped = append(skipped, h.Name)
			}
			continue
		}
		u := busy / float64(h.CPU.Cores*h.Replicas)
		hw := z95 * math.Sqrt(variance) / float64(h.CPU.Cores*h.Replicas)
		rr := &solve.ResourceResult{Utilization: u, Busy: busy}
		if hw > 0 {
			rr.UtilizationCI95 = &[2]float64{u - hw, u + hw}
		}
		if h.CPU.Limited() {
			lu := busy / (h.CPU.Limit * float64(h.Replicas))
			rr.LimitUtilization = &lu
			rr.Throttled = throttledOver(set, names, from, to)
		}
		if prev := measured.Resources[res]; prev != nil {
			used = append(used, fmt.Sprintf("%s (spans' CPU time: %.3g %%)", h.Name, 100*prev.Utilization))
		} else {
			used = append(used, h.Name)
		}
		measured.Resources[res] = rr
	}
	var out []string
	if len(used) > 0 {
		out = append(out, "CPU utilization from metrics on "+strings.Join(used, ", "))
	}
	if len(skipped) > 0 {
		out = append(out, fmt.Sprintf("no metrics covering %.0f %% of the measured time for %s", 100*minMetricsCoverage, strings.Join(skipped, ", ")))
	}
	return out
}

// throttledOver is the share of the bandwidth periods of machines in
// which their CPU limit's quota ran out over [from, to), where the
// metrics count it for every one of them; nil otherwise.
func throttledOver(set *metrics.Set, machines []string, from, to int64) *float64 {
	var periods, throttled float64
	for _, name := range machines {
		th := set.Throttling[name]
		if th == nil {
			th = set.Throttling[set.Lookup(name)]
		}
		if th == nil {
			return nil
		}
		p, n := th.Over(from, to)
		periods += p
		throttled += n
	}
	if !(periods > 0) {
		return nil
	}
	f := throttled / periods
	return &f
}

// readingVariance is the variance of the mean busy cores of a series over
// [from, to) estimated from the spread of its readings there, taken as
// independent: s² / k.
func readingVariance(s *metrics.Series, from, to int64, cores float64) float64 {
	var n, sum, sq float64
	for _, sm := range s.Samples {
		if sm.End <= from || sm.Start >= to {
			continue
		}
		v := sm.Value
		if s.Unit == metrics.Fraction {
			v *= cores
		}
		n++
		sum += v
		sq += v * v
	}
	if n < 2 {
		return 0
	}
	mean := sum / n
	return math.Max(sq-n*mean*mean, 0) / (n - 1) / n
}
