package metrics

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/perfcast/perfcast/ingest"
)

// otlp reads OTLP metrics JSON: one ExportMetricsServiceRequest per file,
// or one per line as the Collector's file exporter writes them. The host
// is the resource's host.name, else its service.instance.id, but for
// containers and pods. Read are:
//
//   - system.cpu.time (sum of CPU seconds by cpu and state): machine-wide,
//     preferred; its distinct cpu values give the cores;
//   - system.cpu.utilization (gauge by cpu and state: each a fraction of
//     that core; without cpu, of all cores);
//   - process.cpu.time (sum of CPU seconds by state) and
//     process.cpu.utilization (gauge, a fraction of all cores), summed
//     over the processes of a host when it has no system.cpu series;
//   - system.cpu.logical.count, the cores; where the file gives no other
//     count, the most a host's processes saw: process.cpu.count (.NET's
//     instrumentation), jvm.cpu.count, dotnet.process.cpu.count;
//   - the runtimes' own: jvm.cpu.time, process.runtime.cpython.cpu_time
//     and dotnet.process.cpu.time, read as process.cpu.time;
//     jvm.cpu.recent_utilization and process.runtime.jvm.cpu.utilization,
//     read as process.cpu.utilization; process.runtime.cpython.cpu.utilization,
//     busy cores. A process that sends several (Python sends
//     process.cpu.time and its older name both) is read under one
//     (oneMetricPerProcess); a process is named by its pid where its
//     resource gives one;
//   - go.processor.limit, a Go process's GOMAXPROCS (Set.Processors), by
//     its resource's host and service;
//   - db.client.connection.max (older db.client.connections.max) and
//     db.sql.connection.max_open, a database client's pool's size
//     (Set.Pools), by its resource's host and service and the point's
//     pool name (db.client.connection.pool.name, pool.name);
//   - db.client.connection.use_time and wait_time histograms (older
//     db.client.connections.use_time and wait_time, in ms), how long
//     a pool's connections were held and requests for one waited
//     (Set.PoolTimes), by the same names;
//   - k8s.pod.cpu.time and k8s.pod.cpu.usage (busy cores): the pod's,
//     named by k8s.pod.name; container.cpu.time and container.cpu.usage of
//     a pod's container (k8s.container.name): the pod's processes;
//     container.cpu.usage.total (docker_stats): the container's, named by
//     container.hostname and known also by its name and id;
//     k8s.node.cpu.time and k8s.node.cpu.usage: the node's, named by
//     k8s.node.name.
//
// States idle, wait, iowait and steal are left out (attribute state, or
// cpu.mode in newer conventions, or type as Python's metrics name it). Cumulative sums are differentiated,
// delta sums divided by their interval.
func (r *reader) otlp(data []byte) error {
	var u pmetric.JSONUnmarshaler
	tracks := map[string]*track{}
	first, _, _ := bytes.Cut(bytes.TrimLeft(data, " \t\r\n\xef\xbb\xbf"), []byte("\n"))
	if !json.Valid(bytes.TrimSpace(first)) || len(bytes.TrimSpace(first)) == len(bytes.TrimSpace(data)) {
		// Requests spread over lines, one after the other.
		dec := json.NewDecoder(bytes.NewReader(data))
		for n := 0; ; n++ {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if err == io.EOF {
				return nil
			}
			var md pmetric.Metrics
			if err == nil {
				md, err = u.UnmarshalMetrics(raw)
			}
			if err != nil {
				if n == 0 {
					return fmt.Errorf("%s: byte %d: OTLP metrics JSON: %s", r.name, dec.InputOffset(), oneLine(err.Error()))
				}
				r.damagef(ingest.DamageUnparseable, "byte %d: request %d: %s", dec.InputOffset(), n+1, oneLine(err.Error()))
				return nil
			}
			r.otlpMetrics(md, tracks, fmt.Sprintf("request %d: ", n+1))
		}
	}
	// One request per line.
	ok := 0
	var firstErr error
	for lineNo, rest := 0, data; len(rest) > 0; {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		lineNo++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		md, err := u.UnmarshalMetrics(line)
		if err == nil && !json.Valid(line) {
			err = errors.New("not one JSON document")
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("line %d: %s", lineNo, oneLine(err.Error()))
			}
			r.damagef(ingest.DamageUnparseable, "line %d: %s", lineNo, oneLine(err.Error()))
			continue
		}
		ok++
		r.otlpMetrics(md, tracks, fmt.Sprintf("line %d: ", lineNo))
	}
	if ok == 0 {
		return fmt.Errorf("%s: OTLP metrics JSON: %v", r.name, firstErr)
	}
	return nil
}

// otlpResource is what a resource says of where its readings were taken.
type otlpResource struct {
	host    string // host.name, else service.instance.id
	process string // the process: instance, pid and service
	// identity names the process on its host however its resource is
	// written: by its pid where the resource has one (a runtime's SDK and
	// the Collector's process scraper both say it), else by process.
	identity string
	service  string // service.name
	// container is the container or pod the resource is, for container
	// metrics: k8s.pod.name, else container.hostname, else
	// container.name, else container.id.
	container string
	// containerName is k8s.container.name, one container of a pod.
	containerName string
	node          string   // k8s.node.name
	aliases       []string // the container's other names
}

func newOTLPResource(attrs pcommon.Map) otlpResource {
	res := otlpResource{
		host:          attr(attrs, "host.name"),
		service:       attr(attrs, "service.name"),
		containerName: attr(attrs, "k8s.container.name"),
		node:          attr(attrs, "k8s.node.name"),
	}
	if res.host == "" {
		res.host = attr(attrs, "service.instance.id")
	}
	res.process = attr(attrs, "service.instance.id") + "/" + attr(attrs, "process.pid") + "/" + res.service
	res.identity = res.process
	if pid := attr(attrs, "process.pid"); pid != "" {
		res.identity = "pid " + pid
	}
	names := []string{attr(attrs, "k8s.pod.name"), attr(attrs, "container.hostname"), attr(attrs, "container.name")}
	names = append(names, containerIDs(attr(attrs, "container.id"))...)
	for _, n := range names {
		switch {
		case n == "":
		case res.container == "":
			res.container = n
		default:
			res.aliases = append(res.aliases, n)
		}
	}
	return res
}

// otlpMetrics adds the CPU readings of one request to tracks, keyed by
// host, process, metric and attributes; where names the request in its
// file ("line 3: ") for damage.
func (r *reader) otlpMetrics(md pmetric.Metrics, tracks map[string]*track, where string) {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		rm := rms.At(i)
		res := newOTLPResource(rm.Resource().Attributes())
		sms := rm.ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				place := fmt.Sprintf("%sresourceMetrics[%d].scopeMetrics[%d].metrics[%d] (%s)", where, i, j, k, m.Name())
				r.otlpMetric(m, res, place, tracks)
			}
		}
	}
}

// otlpMetric adds the readings of one metric, if it is one of those read.
func (r *reader) otlpMetric(m pmetric.Metric, res otlpResource, place string, tracks map[string]*track) {
	var family int
	var perProcess, cumulative bool
	var dps pmetric.NumberDataPointSlice
	var unit Unit
	kind := gauge
	host, service := res.host, res.service
	var aliases []string
	name := m.Name()
	switch name {
	case "system.cpu.time", "process.cpu.time", "jvm.cpu.time", "process.runtime.cpython.cpu_time", "dotnet.process.cpu.time",
		"nodejs.eventloop.time",
		"container.cpu.time", "container.cpu.usage.total", "k8s.pod.cpu.time", "k8s.node.cpu.time":
		if m.Type() != pmetric.MetricTypeSum {
			r.damagef(ingest.DamageBadValue, "%s: a sum expected, found %s", place, m.Type())
			return
		}
		dps = m.Sum().DataPoints()
		cumulative = m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityDelta
		kind, unit = counter, Cores
		if !cumulative {
			kind = delta
		}
	case "system.cpu.utilization", "process.cpu.utilization", "process.runtime.cpython.cpu.utilization",
		"jvm.cpu.recent_utilization", "process.runtime.jvm.cpu.utilization", "nodejs.eventloop.utilization",
		"container.cpu.usage", "k8s.pod.cpu.usage", "k8s.node.cpu.usage":
		if m.Type() != pmetric.MetricTypeGauge {
			r.damagef(ingest.DamageBadValue, "%s: a gauge expected, found %s", place, m.Type())
			return
		}
		dps = m.Gauge().DataPoints()
		// Utilizations are fractions of the cores; usages busy cores, and
		// so is Python's older utilization.
		unit = Fraction
		if strings.HasSuffix(name, ".usage") || busyCoresGauge(name) {
			unit = Cores
		}
	case "container.cpu.utilization", "k8s.pod.cpu.utilization", "k8s.node.cpu.utilization":
		r.note("%s left out: receivers differ in what it measures (a percentage, busy cores); %s.cpu.time or %s.cpu.usage are read",
			name, strings.TrimSuffix(name, ".cpu.utilization"), strings.TrimSuffix(name, ".cpu.utilization"))
		return
	case "system.cpu.logical.count":
		r.explicitCores = r.logicalCount(r.explicitCores, m, host)
		return
	case "process.cpu.count", "jvm.cpu.count", "dotnet.process.cpu.count":
		r.processCores = r.logicalCount(r.processCores, m, host)
		return
	case "go.processor.limit":
		if dps, ok := numberPoints(m); ok {
			values := make([]float64, 0, dps.Len())
			for d := 0; d < dps.Len(); d++ {
				values = append(values, numberValue(dps.At(d)))
			}
			r.goProcessors(place, host, service, values)
		}
		return
	case "db.client.connection.max", "db.client.connections.max", "db.sql.connection.max_open":
		r.otlpPools(m, host, service, place)
		return
	case "db.client.connection.use_time", "db.client.connection.wait_time", "db.client.connections.use_time", "db.client.connections.wait_time":
		r.otlpPoolTimes(m, otlpPoolTimeMetrics[name], host, service, place)
		return
	case "k8s.container.cpu_limit", "k8s.container.cpu.limit":
		r.otlpLimit(m, res, place)
		return
	default:
		return
	}
	switch {
	case perProcessMetric(name):
		family, perProcess = 1, true
	case strings.HasPrefix(name, "k8s.node."):
		host, service = res.node, ""
	case strings.HasPrefix(name, "k8s.pod.") || strings.HasPrefix(name, "container."):
		// A pod or a container is a host of its own: its readings are
		// of its processes alone. A container of a pod is one of the
		// pod's processes, named by the container.
		if res.container != "" {
			host = res.container
		}
		service, aliases = "", res.aliases
		if strings.HasPrefix(name, "container.") && res.containerName != "" {
			family, perProcess, service = 1, true, res.containerName
		}
	default:
		service = ""
	}
	scale := 1.0
	if kind != gauge {
		switch m.Unit() {
		case "", "s":
		case "ms":
			scale = 1e-3
		case "us":
			scale = 1e-6
		case "ns":
			scale = 1e-9
		default:
			r.damagef(ingest.DamageBadValue, "%s: unit %q, seconds expected", place, abbrev(m.Unit()))
			return
		}
	}
	if host == "" {
		r.damagef(DamageNoHost, "%s: resource without host.name, service.instance.id, k8s.pod.name or container name", place)
		return
	}
	process := res.process
	if service != res.service {
		process += "/" + service
	}
	for d := 0; d < dps.Len(); d++ {
		dp := dps.At(d)
		// Python's system metrics name the state type; Node.js's event
		// loop is active or idle.
		state := cmp.Or(attr(dp.Attributes(), "state"), attr(dp.Attributes(), "cpu.mode"), attr(dp.Attributes(), "type"),
			attr(dp.Attributes(), "nodejs.eventloop.state"))
		if idleStates[state] {
			continue
		}
		cpu := attr(dp.Attributes(), "cpu")
		if cpu == "" {
			cpu = attr(dp.Attributes(), "cpu.logical_number")
		}
		var v float64
		switch dp.ValueType() {
		case pmetric.NumberDataPointValueTypeDouble:
			v = dp.DoubleValue()
		case pmetric.NumberDataPointValueTypeInt:
			v = float64(dp.IntValue())
		default:
			r.damagef(ingest.DamageBadValue, "%s: data point %d without a value", place, d)
			continue
		}
		v *= scale
		ts := int64(dp.Timestamp())
		if dp.Timestamp() == 0 || ts <= 0 || ts/1e9 > maxUnixSeconds {
			r.damagef(ingest.DamageMissingTime, "%s: data point %d: time %d", place, d, uint64(dp.Timestamp()))
			continue
		}
		if !finite(v) || (unit == Fraction || name == "nodejs.eventloop.utilization") && v > maxUtilization {
			r.damagef(ingest.DamageBadValue, "%s: data point %d: value %v", place, d, v)
			continue
		}
		key := strings.Join([]string{host, name, cpu, state}, "\x00")
		if perProcess {
			key += "\x00" + process
		}
		t := tracks[key]
		if t == nil {
			t = &track{host: host, kind: kind, unit: unit, source: name, family: family, aliases: aliases}
			if perProcess {
				t.service, t.process, t.metric = service, res.identity, name
				if service != res.service {
					t.process += "/" + service
				}
			}
			if cpu != "" {
				t.cpu = cpu
				if unit == Fraction {
					// A fraction of one core is that core's busy cores.
					t.unit = Cores
				}
			}
			tracks[key] = t
			r.tracks = append(r.tracks, t)
		}
		p := point{t: ts, v: v}
		if kind == delta {
			p.start = int64(dp.StartTimestamp())
		}
		t.points = append(t.points, p)
	}
}

// otlpLimit records a container's CPU limit in cores, of the pod (or
// container) its resource names.
func (r *reader) otlpLimit(m pmetric.Metric, res otlpResource, place string) {
	dps, ok := numberPoints(m)
	if !ok {
		r.damagef(ingest.DamageBadValue, "%s: a gauge expected, found %s", place, m.Type())
		return
	}
	if res.container == "" {
		r.damagef(DamageNoHost, "%s: resource without k8s.pod.name or container name", place)
		return
	}
	for d := 0; d < dps.Len(); d++ {
		dp := dps.At(d)
		v := numberValue(dp)
		if !finite(v) {
			r.damagef(ingest.DamageBadValue, "%s: data point %d: value %v", place, d, v)
			continue
		}
		r.addLimit(res.container, res.containerName, limitCores, int64(dp.Timestamp()), v, m.Name())
	}
}

// numberPoints returns the data points of a gauge or a sum; ok is false
// for other kinds of metric.
func numberPoints(m pmetric.Metric) (dps pmetric.NumberDataPointSlice, ok bool) {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints(), true
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints(), true
	}
	return dps, false
}

// otlpPools records the pool sizes a metric's points state, by the
// points' pool names.
func (r *reader) otlpPools(m pmetric.Metric, host, service, place string) {
	dps, ok := numberPoints(m)
	if !ok {
		r.damagef(ingest.DamageBadValue, "%s: a gauge or sum expected, found %s", place, m.Type())
		return
	}
	byPool := map[string][]float64{}
	var names []string
	for d := 0; d < dps.Len(); d++ {
		dp := dps.At(d)
		pool := otlpPoolName(dp.Attributes())
		if _, seen := byPool[pool]; !seen {
			names = append(names, pool)
		}
		byPool[pool] = append(byPool[pool], numberValue(dp))
	}
	for _, pool := range names {
		r.poolSize(place, host, service, pool, byPool[pool])
	}
}

// numberValue is a data point's value, NaN where it has none.
func numberValue(dp pmetric.NumberDataPoint) float64 {
	switch dp.ValueType() {
	case pmetric.NumberDataPointValueTypeDouble:
		return dp.DoubleValue()
	case pmetric.NumberDataPointValueTypeInt:
		return float64(dp.IntValue())
	}
	return math.NaN()
}

// logicalCount records in cores, by host, the most cores a count of them
// states (system.cpu.logical.count, process.cpu.count), and returns it.
func (r *reader) logicalCount(cores map[string]int, m pmetric.Metric, host string) map[string]int {
	dps, ok := numberPoints(m)
	if !ok {
		return cores
	}
	for d := 0; d < dps.Len(); d++ {
		v := math.Round(numberValue(dps.At(d)))
		if host != "" && v > 0 && v <= maxCores {
			if cores == nil {
				cores = map[string]int{}
			}
			cores[host] = max(cores[host], int(v))
		}
	}
	return cores
}

// attr returns an attribute as a string, or "".
func attr(m pcommon.Map, key string) string {
	v, ok := m.Get(key)
	if !ok {
		return ""
	}
	return v.AsString()
}

// oneLine keeps the first line of a message.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return abbrev2(s)
}

func abbrev2(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
