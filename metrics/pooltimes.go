package metrics

import (
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/perfcast/perfcast/ingest"
)

// PoolTime is what a database client's connection pool measured of its
// connections over the readings: how many were taken back after use and
// the seconds they were held in all, how many requests for one were
// timed and the seconds they waited in all.
type PoolTime struct {
	Uses  float64 `json:"uses,omitempty"`
	Use   float64 `json:"use_seconds,omitempty"`
	Waits float64 `json:"waits,omitempty"`
	Wait  float64 `json:"wait_seconds,omitempty"`
}

// Plus is t and o together.
func (t PoolTime) Plus(o PoolTime) PoolTime {
	return PoolTime{Uses: t.Uses + o.Uses, Use: t.Use + o.Use, Waits: t.Waits + o.Waits, Wait: t.Wait + o.Wait}
}

// MeanUse is the mean time a connection was held, NaN where no use was
// counted.
func (t PoolTime) MeanUse() float64 { return ratio(t.Use, t.Uses) }

// MeanWait is the mean time a request for a connection waited, NaN where
// none was counted.
func (t PoolTime) MeanWait() float64 { return ratio(t.Wait, t.Waits) }

func ratio(sum, n float64) float64 {
	if n <= 0 {
		return math.NaN()
	}
	return sum / n
}

// PoolTimes holds connection pools' measured times by host, service and
// pool name (Set.PoolTimes).
type PoolTimes map[string]map[string]map[string]PoolTime

// add adds t to the times of pool of service svc on host; false, and
// nothing added, where a total would not be a finite number.
func (p *PoolTimes) add(host, svc, pool string, t PoolTime) bool {
	if *p == nil {
		*p = PoolTimes{}
	}
	if (*p)[host] == nil {
		(*p)[host] = map[string]map[string]PoolTime{}
	}
	if (*p)[host][svc] == nil {
		(*p)[host][svc] = map[string]PoolTime{}
	}
	sum := (*p)[host][svc][pool].Plus(t)
	if !finite(sum.Uses) || !finite(sum.Use) || !finite(sum.Waits) || !finite(sum.Wait) {
		return false
	}
	(*p)[host][svc][pool] = sum
	return true
}

// poolTimeMetric is a histogram of a pool's connections' times: of their
// use (else of the wait for one), in seconds times scale.
type poolTimeMetric struct {
	use   bool
	scale float64
}

// otlpPoolTimeMetrics are the OTLP histograms of pools' times: the
// database conventions' in seconds and their older names in
// milliseconds (as OpenTelemetry's Java agent sends them for HikariCP,
// c3p0, DBCP, Vibur, Oracle UCP).
var otlpPoolTimeMetrics = map[string]poolTimeMetric{
	"db.client.connection.use_time":   {true, 1},
	"db.client.connection.wait_time":  {false, 1},
	"db.client.connections.use_time":  {true, 1e-3},
	"db.client.connections.wait_time": {false, 1e-3},
}

// otlpPoolNameKeys are the point attributes that name a pool.
var otlpPoolNameKeys = []string{"db.client.connection.pool.name", "pool.name", "db.client.connections.pool.name"}

// otlpPoolName is the pool a point's attributes name, "" for none.
func otlpPoolName(attrs pcommon.Map) string {
	for _, key := range otlpPoolNameKeys {
		if v, found := attrs.Get(key); found {
			return v.AsString()
		}
	}
	return ""
}

// otlpPoolSeries is one series of a pool time histogram over a file's
// requests: one host, service, metric and pool, and, cumulative, one
// start time.
type otlpPoolSeries struct {
	host, service, pool, place string
	metric                     poolTimeMetric
	cumulative                 bool
	first, last                pmetric.HistogramDataPoint
	n                          int
	counts, sums               float64
}

// otlpPoolTimes adds a pool time histogram's points to their series
// (finishPoolTimes totals them). A unit of ms or s, where the metric
// states one, decides over the name's.
func (r *reader) otlpPoolTimes(m pmetric.Metric, pm poolTimeMetric, host, service, place string) {
	if m.Type() != pmetric.MetricTypeHistogram {
		r.damagef(ingest.DamageBadValue, "%s: a histogram expected, found %s", place, m.Type())
		return
	}
	if service == "" {
		r.damagef(ingest.DamageBadValue, "%s: a connection pool of no service", place)
		return
	}
	switch m.Unit() {
	case "s":
		pm.scale = 1
	case "ms":
		pm.scale = 1e-3
	}
	h := m.Histogram()
	cumulative := h.AggregationTemporality() != pmetric.AggregationTemporalityDelta
	dps := h.DataPoints()
	for d := 0; d < dps.Len(); d++ {
		dp := dps.At(d)
		sum := dp.Sum()
		if !dp.HasSum() {
			r.damagef(ingest.DamageBadValue, "%s: point %d: no sum of times", place, d)
			continue
		}
		if !finite(sum) {
			r.damagef(ingest.DamageBadValue, "%s: point %d: a sum of times of %g", place, d, sum)
			continue
		}
		pool := otlpPoolName(dp.Attributes())
		key := fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%v\x00%v", host, service, pool, m.Name(), cumulative, pm.scale)
		if cumulative {
			key += fmt.Sprintf("\x00%d", dp.StartTimestamp())
		}
		s := r.poolSeries[key]
		if s == nil {
			if r.poolSeries == nil {
				r.poolSeries = map[string]*otlpPoolSeries{}
			}
			s = &otlpPoolSeries{host: host, service: service, pool: pool, place: place, metric: pm, cumulative: cumulative, first: dp, last: dp}
			r.poolSeries[key] = s
			r.poolSeriesOrder = append(r.poolSeriesOrder, key)
		}
		s.n++
		s.counts += float64(dp.Count())
		s.sums += sum
		if dp.Timestamp() < s.first.Timestamp() {
			s.first = dp
		}
		if dp.Timestamp() >= s.last.Timestamp() {
			s.last = dp
		}
	}
}

// finishPoolTimes totals the file's pool time series: a cumulative one
// by what it gained from its first reading to its last (its only
// reading's whole where it has one), a delta one by its points' sum.
func (r *reader) finishPoolTimes() {
	for _, key := range r.poolSeriesOrder {
		s := r.poolSeries[key]
		n, sum := s.counts, s.sums
		if s.cumulative {
			n, sum = float64(s.last.Count()), s.last.Sum()
			if s.n > 1 {
				n -= float64(s.first.Count())
				sum -= s.first.Sum()
			}
			if n < 0 || sum < -1e-9*math.Abs(s.last.Sum()) {
				r.damagef(ingest.DamageBadValue, "%s: pool %q: a cumulative histogram that fell (%.6g uses, %.6g s)", s.place, s.pool, n, sum)
				continue
			}
		}
		t := PoolTime{Waits: n, Wait: math.Max(sum, 0) * s.metric.scale}
		if s.metric.use {
			t = PoolTime{Uses: t.Waits, Use: t.Wait}
		}
		r.addPoolTime(s.place, s.host, s.service, s.pool, t)
	}
	r.poolSeries, r.poolSeriesOrder = nil, nil
}

// addPoolTime adds t to the times of a pool; totals beyond a float's
// range are damage.
func (r *reader) addPoolTime(place, host, svc, pool string, t PoolTime) {
	if !r.poolTimes.add(host, svc, pool, t) {
		r.damagef(ingest.DamageBadValue, "%s: pool %q: times beyond count (%+v)", place, pool, t)
	}
}

// promPoolTimeMetric is a Prometheus series of a pool's times: a
// counter of seconds (times scale) or of counts, and the label that
// names the pool.
type promPoolTimeMetric struct {
	poolTimeMetric
	count bool
	label string
}

// promPoolTimeMetrics are the Prometheus names of pools' time
// histograms' and summaries' sums and counts: HikariCP's (its own
// Prometheus tracker and Micrometer's), and the OpenTelemetry names as
// its Prometheus exporters write them.
var promPoolTimeMetrics = func() map[string]promPoolTimeMetric {
	out := map[string]promPoolTimeMetric{}
	for _, m := range []struct {
		base  string
		use   bool
		scale float64
		label string
	}{
		{"hikaricp_connections_usage_seconds", true, 1, "pool"},
		{"hikaricp_connections_acquire_seconds", false, 1, "pool"},
		{"db_client_connection_use_time_seconds", true, 1, "db_client_connection_pool_name"},
		{"db_client_connection_wait_time_seconds", false, 1, "db_client_connection_pool_name"},
		{"db_client_connections_use_time_milliseconds", true, 1e-3, "pool_name"},
		{"db_client_connections_wait_time_milliseconds", false, 1e-3, "pool_name"},
	} {
		out[m.base+"_sum"] = promPoolTimeMetric{poolTimeMetric{m.use, m.scale}, false, m.label}
		out[m.base+"_count"] = promPoolTimeMetric{poolTimeMetric{m.use, 1}, true, m.label}
	}
	return out
}()

// promPoolTime records what a pool time counter gained over its
// readings (counterGain), for its host, service and pool.
func (r *reader) promPoolTime(place string, s promSeries, pm promPoolTimeMetric) {
	svc := promService(s.Metric)
	if svc == "" {
		r.damagef(ingest.DamageBadValue, "%s: a connection pool of no service", place)
		return
	}
	pts := r.promPoints(place, s.Values, false)
	if len(pts) == 0 {
		return
	}
	pool := s.Metric[pm.label]
	if pool == "" {
		// Another exporter's label.
		for _, l := range []string{"pool", "pool_name", "db_client_connection_pool_name"} {
			if pool = s.Metric[l]; pool != "" {
				break
			}
		}
	}
	gain := counterGain(pts)
	t := PoolTime{Waits: gain}
	switch {
	case pm.use && pm.count:
		t = PoolTime{Uses: gain}
	case pm.use:
		t = PoolTime{Use: gain * pm.scale}
	case !pm.count:
		t = PoolTime{Wait: gain * pm.scale}
	}
	r.addPoolTime(place, promHost(s.Metric), svc, pool, t)
}

// counterGain is what a cumulative counter gained from its first reading
// to its last, a fall read as a restart from zero; a single reading's
// value where it has one.
func counterGain(pts []point) float64 {
	pts = inTimeOrder(pts)
	if len(pts) == 1 {
		return pts[0].v
	}
	gain := 0.0
	for i := 1; i < len(pts); i++ {
		if d := pts[i].v - pts[i-1].v; d >= 0 {
			gain += d
		} else {
			gain += pts[i].v
		}
	}
	return gain
}
