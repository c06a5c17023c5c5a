package metrics

import (
	"bytes"
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
// is the resource's host.name, else its service.instance.id. Read are:
//
//   - system.cpu.time (sum of CPU seconds by cpu and state): machine-wide,
//     preferred; its distinct cpu values give the cores;
//   - system.cpu.utilization (gauge by cpu and state: each a fraction of
//     that core; without cpu, of all cores);
//   - process.cpu.time (sum of CPU seconds by state) and
//     process.cpu.utilization (gauge, a fraction of all cores), summed
//     over the processes of a host when it has no system.cpu series;
//   - system.cpu.logical.count, the cores.
//
// States idle, wait, iowait and steal are left out (attribute state, or
// cpu.mode in newer conventions). Cumulative sums are differentiated,
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
			r.otlpMetrics(md, tracks)
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
		r.otlpMetrics(md, tracks)
	}
	if ok == 0 {
		return fmt.Errorf("%s: OTLP metrics JSON: %v", r.name, firstErr)
	}
	return nil
}

// otlpMetrics adds the CPU readings of one request to tracks, keyed by
// host, process, metric and attributes.
func (r *reader) otlpMetrics(md pmetric.Metrics, tracks map[string]*track) {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		rm := rms.At(i)
		attrs := rm.Resource().Attributes()
		host := attr(attrs, "host.name")
		if host == "" {
			host = attr(attrs, "service.instance.id")
		}
		process := attr(attrs, "service.instance.id") + "/" + attr(attrs, "process.pid") + "/" + attr(attrs, "service.name")
		service := attr(attrs, "service.name")
		sms := rm.ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				place := fmt.Sprintf("resourceMetrics[%d].scopeMetrics[%d].metrics[%d] (%s)", i, j, k, m.Name())
				r.otlpMetric(m, host, process, service, place, tracks)
			}
		}
	}
}

func (r *reader) otlpMetric(m pmetric.Metric, host, process, service, place string, tracks map[string]*track) {
	var family int
	var perProcess, cumulative bool
	var dps pmetric.NumberDataPointSlice
	var unit Unit
	kind := gauge
	switch m.Name() {
	case "system.cpu.time", "process.cpu.time":
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
	case "system.cpu.utilization", "process.cpu.utilization":
		if m.Type() != pmetric.MetricTypeGauge {
			r.damagef(ingest.DamageBadValue, "%s: a gauge expected, found %s", place, m.Type())
			return
		}
		dps = m.Gauge().DataPoints()
		unit = Fraction
	case "system.cpu.logical.count":
		r.logicalCount(m, host)
		return
	default:
		return
	}
	if strings.HasPrefix(m.Name(), "process.") {
		family, perProcess = 1, true
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
		r.damagef(DamageNoHost, "%s: resource without host.name or service.instance.id", place)
		return
	}
	for d := 0; d < dps.Len(); d++ {
		dp := dps.At(d)
		state := attr(dp.Attributes(), "state")
		if state == "" {
			state = attr(dp.Attributes(), "cpu.mode")
		}
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
		if !finite(v) || (unit == Fraction && v > maxUtilization) {
			r.damagef(ingest.DamageBadValue, "%s: data point %d: value %v", place, d, v)
			continue
		}
		key := strings.Join([]string{host, m.Name(), cpu, state}, "\x00")
		if perProcess {
			key += "\x00" + process
		}
		t := tracks[key]
		if t == nil {
			src := m.Name()
			t = &track{host: host, kind: kind, unit: unit, source: src, family: family}
			if perProcess {
				t.service = service
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

// logicalCount records the cores system.cpu.logical.count states.
func (r *reader) logicalCount(m pmetric.Metric, host string) {
	var dps pmetric.NumberDataPointSlice
	switch m.Type() {
	case pmetric.MetricTypeSum:
		dps = m.Sum().DataPoints()
	case pmetric.MetricTypeGauge:
		dps = m.Gauge().DataPoints()
	default:
		return
	}
	for d := 0; d < dps.Len(); d++ {
		dp := dps.At(d)
		n := dp.IntValue()
		if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble {
			n = int64(math.Round(dp.DoubleValue()))
		}
		if host != "" && n > 0 && n <= maxCores {
			if r.explicitCores == nil {
				r.explicitCores = map[string]int{}
			}
			r.explicitCores[host] = max(r.explicitCores[host], int(n))
		}
	}
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
