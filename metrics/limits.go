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
