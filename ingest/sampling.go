package ingest

import (
	"math"
	"strconv"
	"strings"
)

// Sampling says how a span's trace came to be kept, where the span says:
// the OpenTelemetry trace state's sampling threshold (`ot=th:…`, or the
// older `ot=p:…`), or the sampler tags Jaeger's SDKs put on root spans
// (`sampler.type`, `sampler.param`).
type Sampling struct {
	// Probability is the probability with which the trace was kept, in
	// (0, 1]; 0 when the span does not say.
	Probability float64
	// RateLimited is set when a rate-limiting sampler kept the trace
	// (Jaeger's `ratelimiting` and `lowerbound`): its probability depends
	// on the traffic and is unknown.
	RateLimited bool
}

// maxThreshold is 2^56: OpenTelemetry's sampling thresholds are 56-bit.
const maxThreshold = 1 << 56

// traceStateSampling reads the sampling probability from a W3C trace
// state's `ot` member: `th:T` (T up to 14 hex digits, right-padded with
// zeros; the trace was kept when its randomness was at least T, so with
// probability 1 − T/2^56) or the earlier experimental `p:N` (probability
// 2^−N). It returns 0 when the trace state holds neither, or holds one
// malformed.
func traceStateSampling(ts string) float64 {
	for ts != "" {
		var member string
		member, ts, _ = strings.Cut(ts, ",")
		v, ok := strings.CutPrefix(strings.TrimSpace(member), "ot=")
		if !ok {
			continue
		}
		for v != "" {
			var kv string
			kv, v, _ = strings.Cut(v, ";")
			switch {
			case strings.HasPrefix(kv, "th:"):
				return thresholdProbability(kv[len("th:"):])
			case strings.HasPrefix(kv, "p:"):
				n, err := strconv.Atoi(kv[len("p:"):])
				if err != nil || n < 0 || n > 62 {
					return 0
				}
				return math.Ldexp(1, -n)
			}
		}
		return 0
	}
	return 0
}

// thresholdProbability converts a `th` value to the probability of
// keeping a trace; 0 when malformed.
func thresholdProbability(hex string) float64 {
	if hex == "" || len(hex) > 14 {
		return 0
	}
	t, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return 0
	}
	t <<= 4 * uint(14-len(hex))
	return float64(maxThreshold-t) / maxThreshold
}

// samplerSampling interprets Jaeger's sampler tags.
func samplerSampling(typ string, param float64, hasParam bool) Sampling {
	switch typ {
	case "probabilistic":
		if hasParam && param > 0 && param <= 1 {
			return Sampling{Probability: param}
		}
	case "const":
		if hasParam && param == 1 {
			return Sampling{Probability: 1}
		}
	case "ratelimiting", "lowerbound":
		return Sampling{RateLimited: true}
	}
	return Sampling{}
}

// SamplingThreshold is the 56-bit rejection threshold of a probability
// sampler that keeps traces with probability p: a trace is kept when its
// randomness (see TraceRandomness) is at least the threshold.
func SamplingThreshold(p float64) uint64 {
	if !(p > 0) || p >= 1 {
		return 0
	}
	return uint64(math.Round((1 - p) * maxThreshold))
}

// SamplingTraceState is the W3C trace state a probability sampler that
// keeps traces with probability p writes: `ot=th:` and the threshold in
// hex, trailing zeros dropped.
func SamplingTraceState(p float64) string {
	t := strconv.FormatUint(SamplingThreshold(p)|1<<56, 16)[1:]
	if t = strings.TrimRight(t, "0"); t == "" {
		t = "0"
	}
	return "ot=th:" + t
}

// TraceRandomness is the randomness OpenTelemetry's consistent samplers
// compare with their threshold: the trace id's low 56 bits.
func TraceRandomness(id TraceID) uint64 {
	var r uint64
	for _, b := range id[9:] {
		r = r<<8 | uint64(b)
	}
	return r
}
