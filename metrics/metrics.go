// Package metrics reads CPU utilization measurements of hosts, the input
// that lets perfcast estimate CPU demands when spans carry no CPU time, and
// measure the CPU time spans miss when they do.
//
// Three formats are read, recognized by content (gzip included):
//
//   - CSV with the header `timestamp,host,cpu_utilization` (a fraction of
//     all the host's cores) or `timestamp,host,cpu_seconds` (cumulative CPU
//     seconds, differentiated), and optionally `cores` and `service`
//     columns; timestamps in RFC 3339 or Unix seconds;
//   - Prometheus range-query JSON (the output of /api/v1/query_range);
//   - OTLP metrics JSON (process.cpu.time, system.cpu.time,
//     system.cpu.utilization, process.cpu.utilization, jvm.cpu.time, and
//     the containers' and pods' of the Collector's kubeletstats and
//     docker_stats receivers), one ExportMetricsServiceRequest per file or
//     per line.
//
// A container or a pod is a host of its own (cAdvisor's
// container_cpu_usage_seconds_total, kubeletstats, docker_stats), named as
// its spans name it (the pod, the container's host name) and found also by
// its other names (Set.Aliases, Set.Lookup).
//
// Whatever the format, the result is one Series per host (and, where the
// readings name the service a process belongs to, one per service of the
// host: Set.Services): consecutive
// intervals, each with the mean busy cores or the mean utilization over it,
// and the number of cores when the data tell it. Cumulative counters are
// differentiated between consecutive readings (a decrease is a restart and
// its interval is skipped); a gauge reading is taken as the mean over the
// interval since the previous reading of its series. Several series of one
// host (per core, per CPU state, per process) are summed over the time they
// all cover.
//
// Damage (lines or points that do not parse, impossible values, repeated
// timestamps) is skipped, counted and sampled with its place; a file
// without a single usable reading is an error.
package metrics

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/perfcast/perfcast/ingest"
)

// Format names a metrics file format.
type Format string

// The formats Read recognizes.
const (
	FormatCSV        Format = "csv"
	FormatPrometheus Format = "prometheus-json"
	FormatOTLP       Format = "otlp-json"
)

// Unit tells what the values of a series are.
type Unit string

const (
	// Cores values are busy cores: CPU seconds per second.
	Cores Unit = "cores"
	// Fraction values are the busy fraction of all the host's cores.
	Fraction Unit = "fraction"
)

// Kinds of damage the readers report, besides ingest's unparseable,
// missing_time and bad_value.
const (
	DamageDuplicate ingest.DamageKind = "duplicate_timestamp" // a second reading of a series at one instant
	DamageNoHost    ingest.DamageKind = "no_host"             // a series that names no host
)

// Sample is the mean of a series over the interval (Start, End], in Unix
// nanoseconds.
type Sample struct {
	Start, End int64
	Value      float64
}

// Series is the CPU use of one host over time.
type Series struct {
	Host string `json:"host"`
	Unit Unit   `json:"unit"`
	// Cores is the number of cores when the data tell it (per-core
	// series, a cores column, system.cpu.logical.count), else 0.
	Cores int `json:"cores,omitempty"`
	// Samples are in time order and do not overlap.
	Samples []Sample `json:"-"`
	// Source says where the series came from: file and metric.
	Source string `json:"source"`
}

// Busy returns the CPU time, in core-seconds, the series measures within
// [from, to) (Unix nanoseconds), and the seconds of that range its samples
// cover. cores converts a Fraction series into busy cores; it is ignored
// for a Cores series.
func (s *Series) Busy(from, to int64, cores float64) (busy, covered float64) {
	i := sort.Search(len(s.Samples), func(i int) bool { return s.Samples[i].End > from })
	for ; i < len(s.Samples) && s.Samples[i].Start < to; i++ {
		sm := s.Samples[i]
		lo, hi := max(sm.Start, from), min(sm.End, to)
		if hi <= lo {
			continue
		}
		d := float64(hi-lo) / 1e9
		v := sm.Value
		if s.Unit == Fraction {
			v *= cores
		}
		busy += v * d
		covered += d
	}
	return busy, covered
}

// Step is the median length of the series' samples, in nanoseconds (0 for
// an empty series).
func (s *Series) Step() int64 {
	if len(s.Samples) == 0 {
		return 0
	}
	d := make([]int64, len(s.Samples))
	for i, sm := range s.Samples {
		d[i] = sm.End - sm.Start
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// FileStats describes one file read.
type FileStats struct {
	Path    string        `json:"path"`
	Format  Format        `json:"format"`
	Series  int           `json:"series"`
	Samples int           `json:"samples"`
	Damage  ingest.Damage `json:"damage"`
	// Notes are the readers' interpretations the user should know of
	// (a counter restart, a series read as a fraction of the cores).
	Notes []string `json:"notes,omitempty"`
}

// Set is what the metrics files measured, per host.
type Set struct {
	Series map[string]*Series `json:"series"`
	// Services holds, by host and then by service.name, the CPU use of the
	// processes of a service, where the readings name it (the CSV service
	// column, OTLP process metrics); only series in busy cores.
	Services map[string]map[string]*Series `json:"services,omitempty"`
	// Aliases are other names of hosts, each with the host it names: a
	// container's name, id and short id, where its readings are keyed by
	// its host name or pod. Lookup finds hosts by them.
	Aliases map[string]string `json:"aliases,omitempty"`
	// Limits holds the CPU limits the readings state, by host: a pod's or
	// a container's (cAdvisor's container_spec_cpu_quota and _period,
	// kube-state-metrics' kube_pod_container_resource_limits, OTLP's
	// k8s.container.cpu_limit, the CSV column cpu_limit).
	Limits map[string]Limit `json:"limits,omitempty"`
	// Throttling holds, by host, how often its CPU limit's quota ran
	// out, where the readings count it.
	Throttling map[string]*Throttling `json:"throttling,omitempty"`
	// Processors holds, by host and then by service.name, the most
	// threads a Go process of the service ran Go code on at once
	// (GOMAXPROCS), as its runtime's metrics state: go.processor.limit,
	// Prometheus's go_sched_gomaxprocs_threads. The host is "" where the
	// readings name none.
	Processors Processors `json:"processors,omitempty"`
	// Pools holds, by host, service.name and pool name, the most
	// connections a database client's pool may open, as its
	// instrumentation states: db.client.connection.max (older
	// db.client.connections.max), db.sql.connection.max_open, and in
	// Prometheus those names' and hikaricp_connections_max,
	// go_sql_max_open_connections. The host is "" where the readings name
	// none; the pool name "" where they name no pool.
	Pools Pools `json:"pools,omitempty"`
	// PoolTimes holds, by host, service.name and pool name, how long a
	// database client's pool's connections were held and how long
	// requests for one waited, as its instrumentation measured them:
	// db.client.connection.use_time and wait_time (older
	// db.client.connections.use_time and wait_time, in ms), and in
	// Prometheus those names' and HikariCP's
	// hikaricp_connections_usage_seconds and
	// hikaricp_connections_acquire_seconds sums and counts.
	PoolTimes PoolTimes   `json:"pool_times,omitempty"`
	Files     []FileStats `json:"files"`
}

// Pools holds connection pools' sizes by host, service and pool name
// (Set.Pools).
type Pools map[string]map[string]map[string]int

// add records that a pool named pool of service svc on host may open n
// connections, keeping the most per host, service and pool.
func (p *Pools) add(host, svc, pool string, n int) {
	if *p == nil {
		*p = Pools{}
	}
	if (*p)[host] == nil {
		(*p)[host] = map[string]map[string]int{}
	}
	if (*p)[host][svc] == nil {
		(*p)[host][svc] = map[string]int{}
	}
	(*p)[host][svc][pool] = max((*p)[host][svc][pool], n)
}

// Processors holds, by host and then by service, a count of threads
// (Set.Processors).
type Processors map[string]map[string]int

// add records that a process of service svc on host ran Go code on n
// threads at once, keeping the most per host and service.
func (p *Processors) add(host, svc string, n int) {
	if *p == nil {
		*p = Processors{}
	}
	if (*p)[host] == nil {
		(*p)[host] = map[string]int{}
	}
	(*p)[host][svc] = max((*p)[host][svc], n)
}

// Hosts returns the hosts with a series, sorted.
func (s *Set) Hosts() []string { return slices.Sorted(maps.Keys(s.Series)) }

// Read reads metrics files. A host measured by several files keeps the
// readings of all of them that do not overlap in time; readings of another
// unit than the first file's for that host are left out, with a note.
func Read(paths []string) (*Set, error) {
	set := &Set{Series: map[string]*Series{}, Services: map[string]map[string]*Series{}}
	for _, p := range paths {
		f, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		fs := f.Files[0]
		for _, h := range f.Hosts() {
			s := f.Series[h]
			mine := set.Series[h]
			switch {
			case mine == nil:
				set.Series[h] = s
			case mine.Unit != s.Unit:
				fs.Notes = append(fs.Notes, fmt.Sprintf("host %s: readings in %s left out, %s has them in %s", h, s.Unit, mine.Source, mine.Unit))
			default:
				mine.Samples, _ = mergeSamples(mine.Samples, s.Samples)
				mine.Cores = max(mine.Cores, s.Cores)
				mine.Source += ", " + s.Source
			}
		}
		for _, h := range slices.Sorted(maps.Keys(f.Services)) {
			for _, svc := range slices.Sorted(maps.Keys(f.Services[h])) {
				s := f.Services[h][svc]
				if set.Services[h] == nil {
					set.Services[h] = map[string]*Series{}
				}
				if mine := set.Services[h][svc]; mine != nil {
					mine.Samples, _ = mergeSamples(mine.Samples, s.Samples)
					mine.Source += ", " + s.Source
				} else {
					set.Services[h][svc] = s
				}
			}
		}
		for _, a := range slices.Sorted(maps.Keys(f.Aliases)) {
			set.addAlias(a, f.Aliases[a])
		}
		for _, h := range slices.Sorted(maps.Keys(f.Limits)) {
			if mine, ok := set.Limits[h]; ok {
				if mine.Cores != f.Limits[h].Cores {
					fs.Notes = append(fs.Notes, fmt.Sprintf("host %s: CPU limit %s left out, %s states %s", h, f.Limits[h], mine.Source, mine))
				}
				continue
			}
			if set.Limits == nil {
				set.Limits = map[string]Limit{}
			}
			set.Limits[h] = f.Limits[h]
		}
		for _, h := range slices.Sorted(maps.Keys(f.Throttling)) {
			if set.Throttling == nil {
				set.Throttling = map[string]*Throttling{}
			}
			if mine := set.Throttling[h]; mine != nil {
				// Intervals another file already counts are left out.
				for _, s := range f.Throttling[h].Samples {
					if !slices.ContainsFunc(mine.Samples, func(o ThrottleSample) bool { return s.Start < o.End && o.Start < s.End }) {
						mine.Samples = append(mine.Samples, s)
					}
				}
				mine.Source += ", " + f.Throttling[h].Source
			} else {
				set.Throttling[h] = f.Throttling[h]
			}
		}
		for h, bySvc := range f.Processors {
			for svc, n := range bySvc {
				set.Processors.add(h, svc, n)
			}
		}
		for h, bySvc := range f.Pools {
			for svc, byPool := range bySvc {
				for pool, n := range byPool {
					set.Pools.add(h, svc, pool, n)
				}
			}
		}
		for _, h := range slices.Sorted(maps.Keys(f.PoolTimes)) {
			for _, svc := range slices.Sorted(maps.Keys(f.PoolTimes[h])) {
				for _, pool := range slices.Sorted(maps.Keys(f.PoolTimes[h][svc])) {
					if !set.PoolTimes.add(h, svc, pool, f.PoolTimes[h][svc][pool]) {
						fs.Damage.Addf(ingest.DamageBadValue, "%s: pool %q of service %s: times beyond count over the files", p, pool, svc)
					}
				}
			}
		}
		set.Files = append(set.Files, fs)
	}
	set.dropAmbiguousAliases()
	return set, nil
}

// ReadFile reads one metrics file; "-" reads standard input.
func ReadFile(path string) (*Set, error) {
	var r io.Reader
	name := path
	if path == "-" {
		r, name = os.Stdin, "<stdin>"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	return Parse(r, name)
}

// maxFileSize bounds what Parse reads of one file.
const maxFileSize = 1 << 30

// Parse reads metrics from r, name naming it in messages.
func Parse(r io.Reader, name string) (*Set, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip: %w", name, err)
		}
		defer gz.Close()
		br = bufio.NewReader(gz)
	}
	data, err := io.ReadAll(io.LimitReader(br, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, maxFileSize)
	}
	format, err := detect(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rd := &reader{name: name, stats: FileStats{Path: name, Format: format}}
	switch format {
	case FormatCSV:
		err = rd.csv(data)
	case FormatPrometheus:
		err = rd.prometheus(data)
	case FormatOTLP:
		err = rd.otlp(data)
	}
	if err != nil {
		return nil, err
	}
	return rd.build()
}

var errNotMetrics = errors.New("not a metrics file (CSV with header timestamp,host,cpu_utilization or timestamp,host,cpu_seconds; Prometheus range-query JSON; OTLP metrics JSON)")

// detect recognizes the format from the start of the data.
func detect(data []byte) (Format, error) {
	text := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	text = bytes.TrimLeft(text, " \t\r\n")
	if len(text) == 0 {
		return "", errors.New("empty")
	}
	if text[0] == '{' {
		var top map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(text))
		if err := dec.Decode(&top); err != nil {
			// The first line of a JSON-lines file, or a damaged document.
			line, _, _ := bytes.Cut(text, []byte("\n"))
			if json.Unmarshal(line, &top) != nil {
				return "", fmt.Errorf("JSON: %w", err)
			}
		}
		switch {
		case top["resourceMetrics"] != nil || top["resource_metrics"] != nil:
			return FormatOTLP, nil
		case top["data"] != nil || top["status"] != nil:
			return FormatPrometheus, nil
		}
		return "", errNotMetrics
	}
	line, _, _ := bytes.Cut(text, []byte("\n"))
	lower := strings.ToLower(string(line))
	if strings.Contains(lower, "timestamp") && strings.Contains(lower, ",") {
		return FormatCSV, nil
	}
	return "", errNotMetrics
}

// trackKind tells how a track's readings become samples.
type trackKind uint8

const (
	// gauge readings are means over the interval since the previous
	// reading.
	gauge trackKind = iota
	// counter readings are cumulative CPU seconds.
	counter
	// delta readings are CPU seconds spent since the reading's own start.
	delta
)

// point is one reading.
type point struct {
	t     int64 // Unix nanoseconds
	start int64 // for delta readings, the start of the interval
	v     float64
}

// track is one series of readings as a file has it, before conversion.
type track struct {
	host   string
	kind   trackKind
	unit   Unit
	source string
	// family orders alternatives for one host: the lowest present wins
	// (machine-wide series before per-process ones).
	family int
	// cpu names the core a per-core series measures.
	cpu string
	// cores is the core count a reading said, or 0.
	cores int
	// service is the service.name of the process a per-process track
	// measures, "" for machine-wide tracks.
	service string
	// process names the process a per-process track measures, within its
	// host ("" for machine-wide tracks), and metric the metric it reads:
	// a process that sends its CPU under several names is read under one
	// (oneMetricPerProcess).
	process, metric string
	// aliases are other names of the host (a container's name and id).
	aliases []string
	points  []point
	// computed and computedSamples memoize samples.
	computed        bool
	computedSamples []Sample
}

// reader accumulates the tracks of one file.
type reader struct {
	name   string
	stats  FileStats
	tracks []*track
	// explicitCores holds core counts stated by the file, by host;
	// processCores those a host's processes' runtimes saw (the most of
	// them), read where nothing else gives the cores.
	explicitCores, processCores map[string]int
	// processors is Set.Processors as read, pools Set.Pools, poolTimes
	// Set.PoolTimes.
	processors Processors
	pools      Pools
	poolTimes  PoolTimes
	// poolSeries are the OTLP pool time series read so far, by key in
	// the order first seen (poolSeriesOrder), for finishPoolTimes.
	poolSeries      map[string]*otlpPoolSeries
	poolSeriesOrder []string
	limits          []*limitReading
	throttle        []*throttleCounter
	notes           map[string]bool
}

// goProcessors records a Go process's GOMAXPROCS readings: the most of
// them, for its host and service; readings without a service, or of no
// whole number of threads up to maxCores, are damage.
func (r *reader) goProcessors(place, host, svc string, values []float64) {
	if svc == "" {
		r.damagef(ingest.DamageBadValue, "%s: GOMAXPROCS of no service", place)
		return
	}
	most := 0
	for _, v := range values {
		if n := math.Round(v); n >= 1 && n <= maxCores && math.Abs(v-n) < 1e-9 {
			most = max(most, int(n))
		} else {
			r.damagef(ingest.DamageBadValue, "%s: GOMAXPROCS %g", place, v)
		}
	}
	if most > 0 {
		r.processors.add(host, svc, most)
	}
}

// poolSize records a database client's pool's size readings (the most
// connections it may open): the most of them, for its host, service and
// pool. Readings without a service, or of no whole number of
// connections, are damage; a size of zero or less (Go's database/sql
// without SetMaxOpenConns) is no limit, noted.
func (r *reader) poolSize(place, host, svc, pool string, values []float64) {
	if svc == "" {
		r.damagef(ingest.DamageBadValue, "%s: a connection pool of no service", place)
		return
	}
	most := 0
	for _, v := range values {
		n := math.Round(v)
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v-n) > 1e-9 || n > maxPoolSize:
			r.damagef(ingest.DamageBadValue, "%s: a pool of %g connections", place, v)
		case n <= 0:
			r.note("service %s: connection pool %q has no limit (%g): no pool is modeled for it", svc, pool, v)
		default:
			most = max(most, int(n))
		}
	}
	if most > 0 {
		r.pools.add(host, svc, pool, most)
	}
}

// maxPoolSize bounds the connections a pool's readings may state.
const maxPoolSize = 1 << 20

func (r *reader) damagef(kind ingest.DamageKind, format string, args ...any) {
	r.stats.Damage.Addf(kind, r.name+": "+format, args...)
}

func (r *reader) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if r.notes == nil {
		r.notes = map[string]bool{}
	}
	if !r.notes[msg] {
		r.notes[msg] = true
		r.stats.Notes = append(r.stats.Notes, msg)
	}
}

// maxStep bounds the interval a gauge reading stands for.
const maxStep = int64(24 * 3600 * 1e9)

// maxCores bounds plausible busy cores: a larger rate is a unit error.
const maxCores = 1 << 14

// oneMetricPerProcess keeps, of the series one process sends under several
// metric names, those of one name: the same CPU seconds come as
// process.cpu.time and as a runtime's own metric (Python's
// process.runtime.cpython.cpu_time, Java's jvm.cpu.time, .NET's
// dotnet.process.cpu.time), and as a utilization beside them; summed, the
// process would count twice or thrice. Kept is the name preferred by
// processPreference; the others are noted.
func (r *reader) oneMetricPerProcess() {
	type key struct{ host, process string }
	best := map[key]*track{}
	for _, t := range r.tracks {
		if t.process == "" || len(t.points) == 0 {
			continue
		}
		k := key{t.host, t.process}
		if b := best[k]; b == nil || processPreference(t, b) < 0 {
			best[k] = t
		}
	}
	r.tracks = slices.DeleteFunc(r.tracks, func(t *track) bool {
		b := best[key{t.host, t.process}]
		if t.process == "" || b == nil || t.metric == b.metric {
			return false
		}
		r.note("host %s: %s left out: %s measures the same process", t.host, t.metric, b.metric)
		return true
	})
}

// processPreference orders two series of one process: one that names its
// service (it also gives the service its own series) before one that does
// not, CPU seconds before utilizations, process.cpu.time before a runtime's
// own name, and then by name.
func processPreference(a, b *track) int {
	rank := func(t *track) (int, int, int) {
		named, gauged, own := 0, 0, 0
		if t.service == "" {
			named = 1
		}
		if t.kind == gauge {
			gauged = 1
		}
		if runtimeMetrics[metricKey(t.metric)] {
			own = 1
		}
		return named, gauged, own
	}
	an, ag, ao := rank(a)
	bn, bg, bo := rank(b)
	return cmp.Or(cmp.Compare(an, bn), cmp.Compare(ag, bg), cmp.Compare(ao, bo), strings.Compare(a.metric, b.metric))
}

// runtimeMetrics are the names under which language runtimes report their
// process's CPU (as metricKey writes them): they measure what
// process.cpu.time measures, or, Node.js's event loop's active time, the
// time its one thread ran JavaScript (what its CPU slot holds, less the
// CPU of its other threads: the collector's, libuv's pool), which is
// read where the process sends nothing else.
var runtimeMetrics = map[string]bool{
	"jvm_cpu_time": true, "jvm_cpu_recent_utilization": true, "process_runtime_jvm_cpu_utilization": true,
	"process_runtime_cpython_cpu_time": true, "process_runtime_cpython_cpu_utilization": true,
	"dotnet_process_cpu_time": true,
	"nodejs_eventloop_time":   true, "nodejs_eventloop_utilization": true,
}

// metricKey writes a metric's name alike whether OTLP or a Prometheus
// exporter names it: dots as underscores, without the unit suffixes
// Prometheus adds (process.runtime.cpython.cpu_time and
// process_runtime_cpython_cpu_time_seconds_total are one).
func metricKey(name string) string {
	k := strings.ReplaceAll(name, ".", "_")
	for _, suffix := range []string{"_seconds_total", "_total", "_ratio"} {
		if t, ok := strings.CutSuffix(k, suffix); ok {
			return t
		}
	}
	return k
}

// perProcessMetric reports whether a metric measures one process (or a
// runtime's process) rather than a machine.
func perProcessMetric(name string) bool {
	k := metricKey(name)
	return strings.HasPrefix(k, "process_") || strings.HasPrefix(k, "jvm_") || strings.HasPrefix(k, "dotnet_") || strings.HasPrefix(k, "nodejs_")
}

// busyCoresGauge reports whether a utilization is in busy cores, not a
// fraction of all of them: Python's older one, psutil's percent of one
// core over 100 (process.cpu.utilization also divides by the cores), and
// Node.js's event loop's, the share of the time its one thread ran.
func busyCoresGauge(name string) bool {
	switch metricKey(name) {
	case "process_runtime_cpython_cpu_utilization", "nodejs_eventloop_utilization":
		return true
	}
	return false
}

// services sums the per-process tracks in busy cores by host and service.
func (r *reader) services() map[string]map[string]*Series {
	type key struct{ host, service string }
	byService := map[key][]*track{}
	for _, t := range r.tracks {
		if t.service != "" && t.unit == Cores && len(t.points) > 0 {
			k := key{t.host, t.service}
			byService[k] = append(byService[k], t)
		}
	}
	out := map[string]map[string]*Series{}
	keys := slices.SortedFunc(maps.Keys(byService), func(a, b key) int {
		return strings.Compare(a.host+"\x00"+a.service, b.host+"\x00"+b.service)
	})
	for _, k := range keys {
		var tracks [][]Sample
		var sources []string
		for _, t := range byService[k] {
			if s := r.samples(t); len(s) > 0 {
				tracks = append(tracks, s)
				if !slices.Contains(sources, t.source) {
					sources = append(sources, t.source)
				}
			}
		}
		samples := sumTracks(tracks)
		if len(samples) == 0 {
			continue
		}
		if out[k.host] == nil {
			out[k.host] = map[string]*Series{}
		}
		sort.Strings(sources)
		out[k.host][k.service] = &Series{Host: k.host, Unit: Cores, Samples: samples,
			Source: r.name + " (" + strings.Join(sources, ", ") + ")"}
	}
	return out
}

// build turns the tracks into one series per host.
func (r *reader) build() (*Set, error) {
	r.oneMetricPerProcess()
	byHost := map[string][]*track{}
	for _, t := range r.tracks {
		if len(t.points) > 0 {
			byHost[t.host] = append(byHost[t.host], t)
		}
	}
	set := &Set{Series: map[string]*Series{}, Services: r.services()}
	for _, host := range slices.Sorted(maps.Keys(byHost)) {
		ts := byHost[host]
		// The best family present; within it, cores before fractions.
		best := ts[0].family
		for _, t := range ts {
			best = min(best, t.family)
		}
		var kept []*track
		hasCores, hasCounts := false, false
		for _, t := range ts {
			if t.family == best {
				kept = append(kept, t)
				hasCores = hasCores || t.unit == Cores
				hasCounts = hasCounts || t.kind != gauge
			} else {
				r.note("host %s: %s left out for the machine-wide series", host, t.source)
			}
		}
		if hasCounts {
			// Gauges beside CPU seconds (k8s.pod.cpu.usage beside
			// k8s.pod.cpu.time) measure the same CPU less exactly; a
			// process's gauge is another process's CPU, its own CPU
			// seconds having left it out (oneMetricPerProcess).
			kept = slices.DeleteFunc(kept, func(t *track) bool {
				if t.kind == gauge && t.process == "" {
					r.note("host %s: %s left out: the host's CPU seconds are read", host, t.source)
					return true
				}
				return false
			})
		}
		unit := Fraction
		if hasCores {
			unit = Cores
		}
		var tracks [][]Sample
		cpus := map[string]bool{}
		var sources []string
		cores := r.explicitCores[host]
		for _, t := range kept {
			if t.unit != unit {
				r.note("host %s: %s left out: the host has readings in busy cores", host, t.source)
				continue
			}
			s := r.samples(t)
			if len(s) == 0 {
				continue
			}
			tracks = append(tracks, s)
			if t.cpu != "" {
				cpus[t.cpu] = true
			}
			cores = max(cores, t.cores)
			if !slices.Contains(sources, t.source) {
				sources = append(sources, t.source)
			}
		}
		samples := sumTracks(tracks)
		if unit == Fraction && len(tracks) > 1 {
			kept := samples[:0]
			for _, sm := range samples {
				if sm.Value > maxUtilization {
					r.damagef(ingest.DamageBadValue, "host %s: utilization summed over its series %.4g above 1 at %s", host, sm.Value, when(sm.End))
					continue
				}
				kept = append(kept, sm)
			}
			samples = kept
		}
		if len(samples) == 0 {
			continue
		}
		if len(cpus) > 0 && cores == 0 {
			cores = len(cpus)
		}
		if cores == 0 {
			// What the processes' runtimes saw, the machine saying nothing.
			cores = r.processCores[host]
		}
		sort.Strings(sources)
		set.Series[host] = &Series{Host: host, Unit: unit, Cores: cores, Samples: samples,
			Source: r.name + " (" + strings.Join(sources, ", ") + ")"}
		r.stats.Series++
		r.stats.Samples += len(samples)
	}
	set.Limits = r.buildLimits()
	set.Throttling = r.buildThrottling()
	set.Processors = r.processors
	set.Pools = r.pools
	r.finishPoolTimes()
	set.PoolTimes = r.poolTimes
	if len(set.Series) == 0 && len(set.Limits) == 0 && len(set.Throttling) == 0 && len(set.Processors) == 0 && len(set.Pools) == 0 && len(set.PoolTimes) == 0 {
		msg := "no usable CPU readings"
		if n := r.stats.Damage.Total(); n > 0 {
			for _, k := range r.stats.Damage.Kinds() {
				msg += fmt.Sprintf("; %d %s", r.stats.Damage.Counts[k], k)
				if s := r.stats.Damage.Samples[k]; len(s) > 0 {
					msg += " (first: " + strings.TrimPrefix(s[0], r.name+": ") + ")"
				}
			}
		}
		return nil, fmt.Errorf("%s: %s", r.name, msg)
	}
	for _, t := range r.tracks {
		if set.Series[t.host] != nil || set.Services[t.host] != nil {
			for _, a := range t.aliases {
				set.addAlias(a, t.host)
			}
		}
	}
	set.dropAmbiguousAliases()
	r.stats.Notes = slices.Clip(r.stats.Notes)
	set.Files = []FileStats{r.stats}
	return set, nil
}

// samples is computeSamples of t, once: the damage it finds is counted
// once however many series use the track.
func (r *reader) samples(t *track) []Sample {
	if !t.computed {
		t.computed, t.computedSamples = true, r.computeSamples(t)
	}
	return t.computedSamples
}

// computeSamples converts a track's readings into intervals.
func (r *reader) computeSamples(t *track) []Sample {
	pts := t.points
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].t < pts[j].t })
	// Repeated instants: the first reading is kept.
	out := pts[:0]
	for i, p := range pts {
		if i > 0 && p.t == pts[i-1].t {
			r.damagef(DamageDuplicate, "%s: second reading at %s", t.source, when(p.t))
			continue
		}
		out = append(out, p)
	}
	pts = out
	var s []Sample
	switch t.kind {
	case counter:
		resets := 0
		for i := 1; i < len(pts); i++ {
			dc := pts[i].v - pts[i-1].v
			dt := float64(pts[i].t-pts[i-1].t) / 1e9
			if dc < 0 {
				resets++
				continue
			}
			v := dc / dt
			if v > maxCores {
				r.damagef(ingest.DamageBadValue, "%s: %.4g CPU seconds per second at %s: not plausible", t.source, v, when(pts[i].t))
				continue
			}
			s = append(s, Sample{Start: pts[i-1].t, End: pts[i].t, Value: v})
		}
		if resets > 0 {
			r.note("%s: %d counter restarts (a decrease): their intervals skipped", t.source, resets)
		}
		if len(pts) == 1 {
			r.note("%s: a single reading of a cumulative counter measures nothing", t.source)
		}
	case delta:
		for _, p := range pts {
			if p.start <= 0 || p.start >= p.t {
				r.damagef(ingest.DamageMissingTime, "%s: delta reading at %s without a valid start time", t.source, when(p.t))
				continue
			}
			v := p.v / (float64(p.t-p.start) / 1e9)
			if v > maxCores {
				r.damagef(ingest.DamageBadValue, "%s: %.4g CPU seconds per second at %s: not plausible", t.source, v, when(p.t))
				continue
			}
			s = append(s, Sample{Start: p.start, End: p.t, Value: v})
		}
		s, _ = mergeSamples(nil, s)
	case gauge:
		if len(pts) < 2 {
			if len(pts) == 1 {
				r.note("%s: a single reading: its interval is unknown, left out", t.source)
			}
			return nil
		}
		d := make([]int64, len(pts)-1)
		for i := 1; i < len(pts); i++ {
			d[i-1] = pts[i].t - pts[i-1].t
		}
		slices.Sort(d)
		step := min(d[len(d)/2], maxStep)
		for i, p := range pts {
			start := p.t - step
			if i > 0 {
				if gap := p.t - pts[i-1].t; gap <= 3*step {
					start = pts[i-1].t
				} else {
					start = max(start, pts[i-1].t)
				}
			}
			s = append(s, Sample{Start: start, End: p.t, Value: p.v})
		}
	}
	return s
}

// mergeSamples merges two time-ordered, non-overlapping sample lists,
// leaving out samples of b that overlap one of a. It returns the merged
// list and the number left out.
func mergeSamples(a, b []Sample) ([]Sample, int) {
	all := append(slices.Clone(a), b...)
	fromA := len(a)
	idx := make([]int, len(all))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool {
		si, sj := all[idx[i]], all[idx[j]]
		if si.Start != sj.Start {
			return si.Start < sj.Start
		}
		return idx[i] < idx[j]
	})
	var out []Sample
	dropped := 0
	for _, k := range idx {
		s := all[k]
		if n := len(out); n > 0 && s.Start < out[n-1].End {
			if k < fromA {
				// a's own samples never overlap each other; one of b's
				// came first: a's wins.
				for n > 0 && out[n-1].End > s.Start {
					out = out[:n-1]
					n--
					dropped++
				}
			} else {
				dropped++
				continue
			}
		}
		out = append(out, s)
	}
	return out, dropped
}

// sumTracks adds several series of one host: over each stretch of time,
// the sum of the tracks, where every track that has begun and not yet
// ended covers the stretch.
func sumTracks(tracks [][]Sample) []Sample {
	switch len(tracks) {
	case 0:
		return nil
	case 1:
		return tracks[0]
	}
	var bounds []int64
	for _, t := range tracks {
		for _, s := range t {
			bounds = append(bounds, s.Start, s.End)
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	pos := make([]int, len(tracks))
	var out []Sample
	for b := 0; b+1 < len(bounds); b++ {
		lo, hi := bounds[b], bounds[b+1]
		sum, ok, seen := 0.0, true, false
		for i, t := range tracks {
			if lo < t[0].Start || hi > t[len(t)-1].End {
				continue // not alive over the stretch
			}
			for pos[i] < len(t) && t[pos[i]].End <= lo {
				pos[i]++
			}
			if pos[i] >= len(t) || t[pos[i]].Start > lo || t[pos[i]].End < hi {
				ok = false
				break
			}
			sum += t[pos[i]].Value
			seen = true
		}
		if ok && seen {
			out = append(out, Sample{Start: lo, End: hi, Value: sum})
		}
	}
	return out
}

// when renders Unix nanoseconds for a message.
func when(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// finite reports whether v is a usable reading: finite and not negative.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
