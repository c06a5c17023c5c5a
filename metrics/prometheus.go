package metrics

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/perfcast/perfcast/ingest"
)

// promResponse is the envelope of the Prometheus HTTP API.
type promResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      *struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	} `json:"data"`
}

// promSeries is one element of a matrix result.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values []json.RawMessage `json:"values"`
}

// hostLabels are the labels that name a host, in order of preference. The
// port of `instance` (host:port) is dropped. A pod is preferred to the
// instance scraped: in Kubernetes that is the node (cAdvisor) or the pod's
// address.
var hostLabels = []string{"host_name", "host", "hostname", "nodename", "k8s_pod_name", "pod", "pod_name", "instance", "service_instance_id"}

// idleStates are CPU states (node_exporter's mode, OpenTelemetry's state or
// cpu.mode) that are not work of the host's own: idle, waiting for I/O
// while idle, and time taken by the hypervisor.
var idleStates = map[string]bool{"idle": true, "iowait": true, "wait": true, "steal": true}

// prometheus reads range-query output: one response per file, or several
// one after the other. Each series' kind is decided by its metric name,
// else by its values:
//
//   - a name ending in _total is a cumulative counter of CPU seconds
//     (process_cpu_seconds_total, node_cpu_seconds_total,
//     container_cpu_usage_seconds_total), differentiated;
//   - a name containing utilization or ratio is a fraction of the cores;
//   - without such a name (a query of rate(...) or an expression), values
//     that never decrease over at least three readings and exceed 1 are a
//     counter; other values up to 1 are a fraction of the cores, larger
//     ones busy cores.
//
// Series with a mode or state label of idle, iowait, wait or steal are left
// out; series with a cpu label are per core: their sum over cores is the
// host's, and the number of distinct cpu values its cores.
func (r *reader) prometheus(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	for doc := 0; ; doc++ {
		var resp promResponse
		err := dec.Decode(&resp)
		if err == io.EOF {
			if doc == 0 {
				return fmt.Errorf("%s: empty", r.name)
			}
			return nil
		}
		if err != nil {
			if doc == 0 {
				return fmt.Errorf("%s: byte %d: %v", r.name, dec.InputOffset(), err)
			}
			r.damagef(ingest.DamageUnparseable, "byte %d: response %d: %v", dec.InputOffset(), doc+1, err)
			return nil
		}
		if resp.Status == "error" {
			return fmt.Errorf("%s: response %d: Prometheus error %s: %s", r.name, doc+1, resp.ErrorType, resp.Error)
		}
		if resp.Data == nil {
			return fmt.Errorf("%s: response %d: no data", r.name, doc+1)
		}
		if rt := resp.Data.ResultType; rt != "matrix" {
			return fmt.Errorf("%s: response %d: result type %q: a range query's matrix is needed (/api/v1/query_range)", r.name, doc+1, rt)
		}
		for i, raw := range resp.Data.Result {
			r.promSeries(fmt.Sprintf("response %d result[%d]", doc+1, i), raw)
		}
	}
}

func (r *reader) promSeries(place string, raw json.RawMessage) {
	var s promSeries
	if err := json.Unmarshal(raw, &s); err != nil {
		r.damagef(ingest.DamageUnparseable, "%s: %v", place, err)
		return
	}
	name := s.Metric["__name__"]
	desc := describe(s.Metric)
	place += " " + desc
	t := &track{source: desc, cpu: s.Metric["cpu"], family: 1}
	if t.cpu == "" {
		t.cpu = s.Metric["cpu_logical_number"]
	}
	if t.cpu == "total" {
		t.cpu = "" // cAdvisor's older label for all cores
	}
	if strings.HasPrefix(name, "node_") || strings.HasPrefix(name, "system_") || s.Metric["mode"] != "" {
		t.family = 0
	}
	if kind, scale, ok := limitMetric(name, s.Metric); ok {
		r.promLimit(place, s, kind, scale)
		return
	}
	if throttled, ok := throttleMetric(name); ok {
		t := &track{}
		if r.cgroup(s.Metric, t) && t.host != "" && t.family != 2 {
			r.throttle = append(r.throttle, &throttleCounter{host: t.host, container: t.service, throttled: throttled,
				points: r.promPoints(place, s.Values, false)})
		}
		return
	}
	if name == "go_sched_gomaxprocs_threads" {
		r.goProcessors(place, promHost(s.Metric), promService(s.Metric), r.promValues(place, s.Values))
		return
	}
	if pm, ok := promPoolTimeMetrics[name]; ok {
		r.promPoolTime(place, s, pm)
		return
	}
	if poolLabel, ok := promPoolMetrics[name]; ok {
		r.poolSize(place, promHost(s.Metric), promService(s.Metric), s.Metric[poolLabel], r.promValues(place, s.Values))
		return
	}
	if strings.HasPrefix(name, "container_") && name != "container_cpu_usage_seconds_total" {
		// user and system split the usage; throttled time is not CPU use.
		r.note("%s left out: of cAdvisor's CPU metrics container_cpu_usage_seconds_total is read", name)
		return
	}
	if strings.HasPrefix(name, "container_") || strings.HasPrefix(s.Metric["id"], "/") {
		if !r.cgroup(s.Metric, t) {
			return
		}
	} else {
		t.host = promHost(s.Metric)
	}
	if t.host == "" {
		r.damagef(DamageNoHost, "%s: no host label (%s)", place, strings.Join(hostLabels, ", "))
		return
	}
	if t.family == 1 && t.service == "" && perProcessMetric(name) {
		// A process's series: what names it apart from the metric and
		// the state tells its CPU under one name from the same under
		// another.
		t.process, t.metric = processLabels(s.Metric), name
	}
	for _, l := range []string{"mode", "state", "cpu_mode", "type", "nodejs_eventloop_state"} {
		if idleStates[s.Metric[l]] {
			return
		}
	}
	t.points = r.promPoints(place, s.Values, false)
	if len(t.points) == 0 {
		return
	}
	switch {
	case strings.HasSuffix(name, "_total"):
		t.kind, t.unit = counter, Cores
	case busyCoresGauge(name):
		t.kind, t.unit = gauge, Cores
	case strings.Contains(name, "utilization") || strings.Contains(name, "ratio"):
		t.kind, t.unit = gauge, Fraction
	default:
		t.kind, t.unit = byValues(t.points)
		what := "a fraction of all cores"
		switch {
		case t.kind == counter:
			what = "a cumulative counter of CPU seconds (never decreases, exceeds 1)"
		case t.unit == Cores:
			what = "busy cores (exceeds 1)"
		}
		label := "series " + desc
		if name != "" {
			label = "metric " + name
		}
		r.note("%s read as %s", label, what)
	}
	if t.kind == gauge && t.unit == Fraction {
		if t.cpu != "" {
			// A fraction of one core is that core's busy cores.
			t.unit = Cores
		}
		kept := t.points[:0]
		for _, p := range t.points {
			if p.v > maxUtilization {
				r.damagef(ingest.DamageBadValue, "%s: utilization %v above 1 at %s", place, p.v, when(p.t))
				continue
			}
			kept = append(kept, p)
		}
		t.points = kept
	}
	r.tracks = append(r.tracks, t)
}

// promPoints reads the [time, "value"] pairs of a series, skipping
// and counting the damaged ones; negative values are damage unless signed.
func (r *reader) promPoints(place string, values []json.RawMessage, signed bool) []point {
	var pts []point
	for j, v := range values {
		var pair []json.RawMessage
		if err := json.Unmarshal(v, &pair); err != nil || len(pair) != 2 {
			r.damagef(ingest.DamageUnparseable, "%s: values[%d]: not a [time, \"value\"] pair", place, j)
			continue
		}
		ts, err := parseTime(strings.Trim(string(pair[0]), `"`))
		if err != nil {
			r.damagef(ingest.DamageMissingTime, "%s: values[%d]: time %s: %v", place, j, abbrev(string(pair[0])), err)
			continue
		}
		var text string
		if err := json.Unmarshal(pair[1], &text); err != nil {
			r.damagef(ingest.DamageUnparseable, "%s: values[%d]: value %s is not a string", place, j, abbrev(string(pair[1])))
			continue
		}
		x, err := strconv.ParseFloat(text, 64)
		if err != nil {
			r.damagef(ingest.DamageUnparseable, "%s: values[%d]: value %q is not a number", place, j, abbrev(text))
			continue
		}
		if !finite(x) && !(signed && finite(-x)) {
			r.damagef(ingest.DamageBadValue, "%s: values[%d]: value %v", place, j, x)
			continue
		}
		pts = append(pts, point{t: ts, v: x})
	}
	return pts
}

// promLimit records a series that states a CPU limit (limitMetric), of a
// pod, a container or a Docker container, placed as cgroup places usage.
func (r *reader) promLimit(place string, s promSeries, kind limitKind, scale float64) {
	t := &track{}
	if !r.cgroup(s.Metric, t) || t.host == "" {
		return
	}
	if t.family == 2 {
		return // the root cgroup has no limit
	}
	desc := s.Metric["__name__"]
	// cAdvisor states a quota of -1 where there is none.
	for _, p := range r.promPoints(place, s.Values, true) {
		r.addLimit(t.host, t.service, kind, p.t, p.v*scale, desc)
	}
}

// cgroup places a series of a control group, as cAdvisor (and the
// kubelet's /metrics/cadvisor) writes them: container_cpu_usage_seconds_total
// with the labels id (the cgroup), pod and container in Kubernetes (a
// standalone cAdvisor: the Docker labels io.kubernetes.pod.name and
// io.kubernetes.container.name), name for a Docker container, known also
// by its Docker Compose service. A pod is a host: the series without a container
// label (the pod's cgroup) is the pod's, its containers' series are its
// processes, named by the container, and the pause container (POD) is
// left out. A Docker container is a host named by its name, also known by
// its id. The root cgroup (id "/") is the machine's, behind the machine's
// own series. Other cgroups (system services, the kubepods slices that hold
// the pods) are left out: their CPU is also their members'. It reports
// whether the series is kept.
func (r *reader) cgroup(labels map[string]string, t *track) bool {
	// The kubelet's labels, older ones, and a standalone cAdvisor's, which
	// exports the containers' Docker labels.
	pod := cmp.Or(labels["pod"], labels["pod_name"], labels["container_label_io_kubernetes_pod_name"])
	container := cmp.Or(labels["container"], labels["container_name"], labels["container_label_io_kubernetes_container_name"])
	switch {
	case pod != "" && container == "POD":
		return false
	case pod != "" && container != "":
		t.host, t.family, t.service = pod, 1, container
	case pod != "":
		t.host, t.family = pod, 0
	case labels["name"] != "":
		// A Docker Compose service's containers answer to its name on
		// their network: the peer name their clients' spans give.
		t.host, t.family = labels["name"], 0
		t.aliases = append(containerIDs(labels["id"]), labels["container_label_com_docker_compose_service"])
	case labels["id"] == "/":
		t.family = 2
		t.host = promHost(labels)
	default:
		r.note("cgroup series that are neither a pod, a container nor the machine's left out (system services, the slices that hold the pods): their CPU is their members'")
		return false
	}
	return true
}

// notProcess are the labels of a process's series that do not tell one
// process from another: the metric, the core and the state, and the
// instrumentation scope the OpenTelemetry exporters add.
var notProcess = map[string]bool{"__name__": true, "cpu": true, "cpu_logical_number": true, "mode": true, "state": true,
	"cpu_mode": true, "type": true, "nodejs_eventloop_state": true, "otel_scope_name": true, "otel_scope_version": true, "otel_scope_schema_url": true}

// processLabels renders the labels that name a process.
func processLabels(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if !notProcess[k] {
			fmt.Fprintf(&b, "%s=%q,", k, labels[k])
		}
	}
	return b.String()
}

// inTimeOrder is a copy of pts in the order of their times, those of
// one time in the order they came.
func inTimeOrder(pts []point) []point {
	sorted := slices.Clone(pts)
	slices.SortStableFunc(sorted, func(a, b point) int { return cmp.Compare(a.t, b.t) })
	return sorted
}

// byValues decides what an unnamed series measures from its values.
func byValues(pts []point) (trackKind, Unit) {
	sorted := inTimeOrder(pts)
	monotone := len(sorted) >= 3
	hi := 0.0
	for i, p := range sorted {
		hi = max(hi, p.v)
		if i > 0 && p.v < sorted[i-1].v {
			monotone = false
		}
	}
	switch {
	case monotone && hi > 1 && sorted[len(sorted)-1].v > sorted[0].v:
		return counter, Cores
	case hi <= maxUtilization:
		return gauge, Fraction
	}
	return gauge, Cores
}

// describe renders a label set as name{k="v",...}, sorted.
func describe(labels map[string]string) string {
	var b strings.Builder
	b.WriteString(labels["__name__"])
	b.WriteByte('{')
	first := true
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if k == "__name__" {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%s=%q", k, abbrev(labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// stripPort drops the :port of host:port, and the brackets of [v6]:port.
// promHost is the host a series' labels name (hostLabels, the first
// given; an instance without its port), "" where none does.
func promHost(labels map[string]string) string {
	for _, l := range hostLabels {
		if v := labels[l]; v != "" {
			if l == "instance" {
				return stripPort(v)
			}
			return v
		}
	}
	return ""
}

func stripPort(s string) string {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s
	}
	if _, err := strconv.Atoi(s[i+1:]); err != nil {
		return s
	}
	h := s[:i]
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		return h[1 : len(h)-1]
	}
	if strings.Contains(h, ":") {
		// A bare IPv6 address without a port.
		return s
	}
	return h
}

// promPoolMetrics are the Prometheus series that state a database
// client's pool's size, each with the label that names the pool:
// OpenTelemetry's names as its Prometheus exporter writes them,
// Micrometer's HikariCP gauge, and client_golang's database/sql
// collector.
var promPoolMetrics = map[string]string{
	"db_client_connection_max":    "db_client_connection_pool_name",
	"db_client_connections_max":   "pool_name",
	"db_sql_connection_max_open":  "pool_name",
	"hikaricp_connections_max":    "pool",
	"go_sql_max_open_connections": "db_name",
}

// promService names the service of a series: its service_name label,
// else the last part of its job (an OpenTelemetry exporter's job is
// service.namespace/service.name; a scrape's, its configuration's job
// name).
func promService(labels map[string]string) string {
	if svc := labels["service_name"]; svc != "" {
		return svc
	}
	svc := labels["job"]
	if i := strings.LastIndexByte(svc, '/'); i >= 0 {
		svc = svc[i+1:]
	}
	return svc
}

// promValues are the values of a series' points, in their order.
func (r *reader) promValues(place string, values []json.RawMessage) []float64 {
	var out []float64
	for _, p := range r.promPoints(place, values, false) {
		out = append(out, p.v)
	}
	return out
}
