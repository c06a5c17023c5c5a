package extract

import (
	"math"

	"github.com/perfcast/perfcast/trace"
)

// Sampled traces. A system that keeps a trace with probability p leaves
// traces whose counts are p times the system's: each request found stands
// for 1/p of them. Rates and loads are the traces' counts over the
// covered time times the fraction kept (see State.span), and the windows
// that meet utilization metrics count every execution 1/p times, so
// demands, loads and the CPU outside spans come out as the system's.
// Means and shares within requests (demands, visits, branch
// probabilities) do not depend on p. What needs every request does:
// which executions overlapped (hidden pools and locks, executions that
// ran alone) and the requests of one session; extraction leaves those
// out and says so.

// keptWith is the probability with which trace t was kept: what its spans
// say (the first that says, roots first, parents before children), else
// the configuration's sampling, else 1. It counts the sampled and the
// rate-limited traces.
func (s *State) keptWith(t *trace.Tree, cfg *Config) float64 {
	said := t.Sampling()
	p := said.Probability
	if p == 0 {
		if said.RateLimited {
			s.RateLimited++
		}
		p = cfg.sampling()
	}
	if p < 1 {
		s.Sampled++
		if s.keptMin == 0 || p < s.keptMin {
			s.keptMin = p
		}
		s.keptMax = max(s.keptMax, p)
	}
	return p
}

// Kept is the fraction of the system's requests the traces hold: 1 unless
// they were sampled, else the requests found over the requests they stand
// for (the harmonic mean of the probabilities their traces were kept
// with).
func (s *State) Kept() float64 {
	if s.weights > 0 && s.requests > 0 {
		return min(float64(s.requests)/s.weights, 1)
	}
	return 1
}

// sampling is the configured probability of keeping a trace, 1 when none
// is configured.
func (c *Config) sampling() float64 {
	if c == nil || !(c.Sampling > 0) || c.Sampling > 1 {
		return 1
	}
	return c.Sampling
}

// warnSampled says how extraction took sampled traces.
func (g *generator) warnSampled() {
	s := g.s
	if s.RateLimited > 0 && g.cfg.sampling() == 1 {
		g.rep.warnf("%d of %d traces say a rate-limiting sampler kept them (Jaeger's ratelimiting or lowerbound), whose share of the requests depends on the traffic: rates and loads are those of the traces, too low; give the share kept as sampling: P in --config",
			s.RateLimited, s.Traces)
	}
	if s.Sampled == 0 {
		return
	}
	if s.Sampled == s.Traces && s.keptMin == s.keptMax {
		g.rep.evidencef("%d traces were kept with probability %.3g: each stands for %.4g requests, and rates and loads count it so", s.Sampled, s.keptMin, 1/s.keptMin)
	} else {
		rest := ""
		if s.Sampled < s.Traces {
			rest = ", the rest with 1"
		}
		g.rep.warnf("%d of %d traces were kept with probabilities from %.3g to %.3g%s: each stands for 1/p requests, exactly so in the workloads' rates and the utilization windows; elsewhere (the loads of locks and CPU slots) by the mean, %.3g of the requests kept",
			s.Sampled, s.Traces, s.keptMin, s.keptMax, rest, s.Kept())
	}
	g.rep.warnf("with sampled traces, hidden pools and locks are not inferred, nor demand shapes from the executions that ran alone: both need every request; declare pools and locks in --config passive")
	if len(g.est.PerOp) > 0 {
		g.rep.warnf("CPU demands estimated from utilization metrics with sampled traces: a window's throughputs are its kept traces times 1/p, which scatter about the system's by 1/√(p·n) for n executions, so the regression sees less of the load's own variation and identifies fewer demands")
	}
	if g.cfg.sessionNamed() {
		g.rep.warnf("sessions (%s) are not followed in sampled traces, which hold only some of a session's requests: those requests are open workloads", g.cfg.Session)
	}
}

// thinnedCV is the interarrival cv of a renewal stream whose arrivals,
// each kept with probability p, showed cv over n gaps (see arrivalCV).
// Keeping arrivals with probability p turns squared cv c² into
// p·c² + 1 − p, so c² is (cv² − 1 + p)/p, and the standard error with it
// grows by 1/p: the value taken is the one nearest Poisson's (1) within two
// standard errors. ok is false when the kept arrivals are more regular
// than arrivals kept at random could be (a sampler that keeps every k-th
// request): then cv stands as measured.
func thinnedCV(cv, p float64, n int) (float64, bool) {
	c2 := (cv*cv - 1 + p) / p
	slack := 2 * poissonRescaledSD(arrivalWindow) / math.Sqrt(float64(max(n, 1))) / p
	switch {
	case c2+slack <= 0:
		return cv, false
	case c2 < 1:
		c2 = math.Min(c2+slack, 1)
	default:
		c2 = math.Max(c2-slack, 1)
	}
	return round(math.Min(math.Max(math.Sqrt(c2), 0.2), 5), 3), true
}
