package metrics

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Limit is a host's CPU limit (Linux's CFS bandwidth control, as a
// container's or pod's CPU limit sets it) as its readings state it.
type Limit struct {
	// Cores is the CPU time the host may use per second.
	Cores float64 `json:"cores"`
	// Period is the bandwidth period in seconds; 0 where the readings do
	// not say (Linux's default is 100 ms).
	Period float64 `json:"period,omitempty"`
	Source string  `json:"source"`
}

// defaultPeriod is Linux's CFS bandwidth period, taken for a quota read
// without its period.
const defaultPeriod = 0.1

// limitKind tells what a limit reading states.
type limitKind uint8

const (
	limitCores  limitKind = iota // the limit in cores
	limitQuota                   // CPU time per period, in seconds
	limitPeriod                  // the period, in seconds
)

// limitReading is the last value of one series that states a limit, of
// a host or of one of its containers.
type limitReading struct {
	host, container string
	kind            limitKind
	value           float64
	// at is the time of value; changed is set when the series held
	// another value earlier.
	at      int64
	changed bool
	source  string
}

// addLimit records a reading of a limit series: the latest value per
// host, container and kind is kept.
func (r *reader) addLimit(host, container string, kind limitKind, at int64, v float64, source string) {
	for _, l := range r.limits {
		if l.host == host && l.container == container && l.kind == kind {
			if at >= l.at {
				l.changed = l.changed || v != l.value
				l.at, l.value = at, v
			}
			return
		}
	}
	r.limits = append(r.limits, &limitReading{host: host, container: container, kind: kind, value: v, at: at, source: source})
}

// buildLimits turns the limit readings into one limit per host: the
// host's own (a pod's cgroup, a Docker container), else the sum of its
// containers' limits when every one of them has one; a container without
// a limit leaves its pod without one. A quota of zero or less (cAdvisor's
// -1) is no limit.
func (r *reader) buildLimits() map[string]Limit {
	type key struct{ host, container string }
	type acc struct {
		cores, quota, period float64
		sources              []string
		changed              bool
	}
	accs := map[key]*acc{}
	for _, l := range r.limits {
		k := key{l.host, l.container}
		a := accs[k]
		if a == nil {
			a = &acc{cores: math.NaN(), quota: math.NaN()}
			accs[k] = a
		}
		switch l.kind {
		case limitCores:
			a.cores = l.value
		case limitQuota:
			a.quota = l.value
		case limitPeriod:
			a.period = l.value
		}
		a.changed = a.changed || l.changed
		if !slices.Contains(a.sources, l.source) {
			a.sources = append(a.sources, l.source)
		}
	}
	// of gives a series' limit in cores (0: none) and its period; ok is
	// false when nothing states the limit itself.
	of := func(a *acc) (cores, period float64, ok bool) {
		switch {
		case !math.IsNaN(a.quota):
			p := a.period
			if !(p > 0) {
				p = defaultPeriod
			}
			return max(a.quota/p, 0), a.period, true
		case !math.IsNaN(a.cores):
			return max(a.cores, 0), a.period, true
		}
		return 0, 0, false
	}
	out := map[string]Limit{}
	keys := slices.SortedFunc(maps.Keys(accs), func(a, b key) int {
		return cmp.Or(strings.Compare(a.host, b.host), strings.Compare(a.container, b.container))
	})
	hosts := map[string][]key{}
	for _, k := range keys {
		hosts[k.host] = append(hosts[k.host], k)
	}
	for _, host := range slices.Sorted(maps.Keys(hosts)) {
		var lim Limit
		var sources []string
		changed := false
		if a := accs[key{host, ""}]; a != nil {
			if c, p, ok := of(a); ok {
				lim, sources, changed = Limit{Cores: c, Period: p}, a.sources, a.changed
			}
		}
		if len(sources) == 0 {
			sum, period, all, n := 0.0, 0.0, true, 0
			for _, k := range hosts[host] {
				if k.container == "" {
					continue
				}
				a := accs[k]
				c, p, ok := of(a)
				if !ok {
					continue
				}
				n++
				if c <= 0 {
					all = false
					r.note("host %s: container %s has no CPU limit, so the host has none", host, k.container)
				}
				sum += c
				period = max(period, p)
				changed = changed || a.changed
				for _, s := range a.sources {
					if !slices.Contains(sources, s) {
						sources = append(sources, s)
					}
				}
			}
			if n == 0 {
				continue
			}
			if !all {
				sum = 0
			}
			lim = Limit{Cores: sum, Period: period}
			if n > 1 && sum > 0 {
				r.note("host %s: the CPU limits of its %d containers summed (%.4g cores); each container's own limit binds it alone", host, n, sum)
			}
		}
		if !(lim.Cores > 0) || lim.Cores > maxCores {
			continue
		}
		if changed {
			r.note("host %s: its CPU limit changed during the readings; the last one is read", host)
		}
		slices.Sort(sources)
		lim.Source = r.name + " (" + strings.Join(sources, ", ") + ")"
		out[host] = lim
	}
	return out
}

// limitMetric tells whether a Prometheus metric states a CPU limit, and
// how its values become one: cAdvisor's quota and period (microseconds),
// kube-state-metrics' limits in cores.
func limitMetric(name string, labels map[string]string) (kind limitKind, scale float64, ok bool) {
	switch name {
	case "container_spec_cpu_quota":
		return limitQuota, 1e-6, true
	case "container_spec_cpu_period":
		return limitPeriod, 1e-6, true
	case "kube_pod_container_resource_limits":
		if labels["resource"] == "cpu" {
			return limitCores, 1, true
		}
	}
	return 0, 0, false
}

// String says the limit in one phrase: "1.5 cores every 100 ms".
func (l Limit) String() string {
	s := fmt.Sprintf("%.4g cores", l.Cores)
	if l.Period > 0 {
		s += fmt.Sprintf(" every %.4g ms", l.Period*1e3)
	}
	return s
}

// Throttling is what a host's CPU limit did, as its cgroup counts it
// (cAdvisor's container_cpu_cfs_periods_total and
// container_cpu_cfs_throttled_periods_total): per interval between
// readings, the bandwidth periods in which the host ran and those in
// which its quota ran out.
type Throttling struct {
	Samples []ThrottleSample `json:"samples"`
	Source  string           `json:"source"`
}

// ThrottleSample is one interval's counts.
type ThrottleSample struct {
	Start     int64   `json:"start"`
	End       int64   `json:"end"`
	Periods   float64 `json:"periods"`
	Throttled float64 `json:"throttled"`
}

// Over sums the counts of the intervals within [from, to) (by their
// midpoints).
func (t *Throttling) Over(from, to int64) (periods, throttled float64) {
	for _, s := range t.Samples {
		if mid := s.Start + (s.End-s.Start)/2; mid >= from && mid < to {
			periods += s.Periods
			throttled += s.Throttled
		}
	}
	return periods, throttled
}

// throttleCounter is one counter series of a host's throttling.
type throttleCounter struct {
	host, container string
	throttled       bool // nr_throttled, else nr_periods
	points          []point
}

// throttleMetric tells whether a Prometheus metric counts a cgroup's
// bandwidth periods, and which count.
func throttleMetric(name string) (throttled, ok bool) {
	switch name {
	case "container_cpu_cfs_periods_total":
		return false, true
	case "container_cpu_cfs_throttled_periods_total":
		return true, true
	}
	return false, false
}

// buildThrottling pairs each host's period and throttled-period counters
// into interval counts: the host's own cgroup's (a pod's, a Docker
// container's), else its only container's that has them. Intervals where
// a counter went back (a restart) are skipped.
func (r *reader) buildThrottling() map[string]*Throttling {
	type key struct{ host, container string }
	pairs := map[key][2]*throttleCounter{}
	for _, c := range r.throttle {
		k := key{c.host, c.container}
		p := pairs[k]
		if c.throttled {
			p[1] = c
		} else {
			p[0] = c
		}
		pairs[k] = p
	}
	byHost := map[string][]key{}
	for k, p := range pairs {
		if p[0] != nil && p[1] != nil {
			byHost[k.host] = append(byHost[k.host], k)
		}
	}
	out := map[string]*Throttling{}
	for _, host := range slices.Sorted(maps.Keys(byHost)) {
		keys := byHost[host]
		var k key
		switch {
		case slices.Contains(keys, key{host, ""}):
			k = key{host, ""}
		case len(keys) == 1:
			k = keys[0]
		default:
			r.note("host %s: its containers' throttling counted apart, and not the pod's, is left out", host)
			continue
		}
		p := pairs[k]
		at := map[int64]float64{}
		for _, pt := range p[1].points {
			at[pt.t] = pt.v
		}
		periods := slices.Clone(p[0].points)
		slices.SortFunc(periods, func(a, b point) int { return cmp.Compare(a.t, b.t) })
		th := &Throttling{Source: r.name + " (container_cpu_cfs_periods_total, container_cpu_cfs_throttled_periods_total)"}
		for i := 1; i < len(periods); i++ {
			a, b := periods[i-1], periods[i]
			ta, okA := at[a.t]
			tb, okB := at[b.t]
			dp, dt := b.v-a.v, tb-ta
			if !okA || !okB || b.t <= a.t || dp < 0 || dt < 0 || dt > dp {
				continue
			}
			th.Samples = append(th.Samples, ThrottleSample{Start: a.t, End: b.t, Periods: dp, Throttled: dt})
		}
		if len(th.Samples) > 0 {
			out[host] = th
		}
	}
	return out
}
