package metrics

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfcast/perfcast/ingest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// dump renders everything read from a file: its statistics, damage and
// notes, and every series with its samples.
func dump(s *Set) string {
	var b strings.Builder
	for _, f := range s.Files {
		fmt.Fprintf(&b, "file %s format=%s series=%d samples=%d\n", filepath.Base(f.Path), f.Format, f.Series, f.Samples)
		for _, k := range f.Damage.Kinds() {
			fmt.Fprintf(&b, "damage %s %d\n", k, f.Damage.Counts[k])
			for _, m := range f.Damage.Samples[k] {
				fmt.Fprintf(&b, "  %s\n", m)
			}
		}
		for _, n := range f.Notes {
			fmt.Fprintf(&b, "note %s\n", n)
		}
	}
	for _, h := range s.Hosts() {
		sr := s.Series[h]
		fmt.Fprintf(&b, "host %s unit=%s cores=%d source=%s\n", h, sr.Unit, sr.Cores, sr.Source)
		for _, sm := range sr.Samples {
			fmt.Fprintf(&b, "  %s %s %.6g\n", stamp(sm.Start), stamp(sm.End), sm.Value)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(s.Limits)) {
		fmt.Fprintf(&b, "limit %s %s source=%s\n", h, s.Limits[h], s.Limits[h].Source)
	}
	for _, h := range slices.Sorted(maps.Keys(s.Throttling)) {
		th := s.Throttling[h]
		fmt.Fprintf(&b, "throttling %s source=%s\n", h, th.Source)
		for _, sm := range th.Samples {
			fmt.Fprintf(&b, "  %s %s %g of %g periods\n", stamp(sm.Start), stamp(sm.End), sm.Throttled, sm.Periods)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(s.Processors)) {
		for _, svc := range slices.Sorted(maps.Keys(s.Processors[h])) {
			fmt.Fprintf(&b, "gomaxprocs host=%q service=%s %d\n", h, svc, s.Processors[h][svc])
		}
	}
	for _, h := range slices.Sorted(maps.Keys(s.Pools)) {
		for _, svc := range slices.Sorted(maps.Keys(s.Pools[h])) {
			for _, pool := range slices.Sorted(maps.Keys(s.Pools[h][svc])) {
				fmt.Fprintf(&b, "pool host=%q service=%s pool=%q %d\n", h, svc, pool, s.Pools[h][svc][pool])
			}
		}
	}
	for _, h := range slices.Sorted(maps.Keys(s.PoolTimes)) {
		for _, svc := range slices.Sorted(maps.Keys(s.PoolTimes[h])) {
			for _, pool := range slices.Sorted(maps.Keys(s.PoolTimes[h][svc])) {
				pt := s.PoolTimes[h][svc][pool]
				fmt.Fprintf(&b, "pool times host=%q service=%s pool=%q uses=%g use=%.6gs waits=%g wait=%.6gs\n", h, svc, pool, pt.Uses, pt.Use, pt.Waits, pt.Wait)
			}
		}
	}
	return b.String()
}

func stamp(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*")
	n := 0
	for _, path := range files {
		if strings.HasSuffix(path, ".golden") || strings.Contains(path, "fuzz") {
			continue
		}
		n++
		t.Run(filepath.Base(path), func(t *testing.T) {
			s, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := dump(s)
			golden := path + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s:\n%s", path, golden, got)
			}
		})
	}
	if n < 7 {
		t.Fatalf("only %d test files", n)
	}
}

// want is one expected sample: start and end in seconds relative to a base,
// and the value.
type want struct {
	start, end float64
	value      float64
}

// TestValues checks the samples of every test file against values worked
// out by hand from the readings (see the comments), independently of the
// golden files.
func TestValues(t *testing.T) {
	rfc := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixNano()
	}
	for _, c := range []struct {
		file, host string
		unit       Unit
		cores      int
		base       int64
		samples    []want
	}{
		// Gauge readings every 10 s: each the mean since the previous
		// reading, the first over one step before it; the 12:01:20 reading
		// follows a 50 s gap (more than three steps): one step only. The
		// second reading at 12:00:30, the percentage 45 and the unparseable
		// lines are skipped.
		{"csv_utilization.csv", "web-1", Fraction, 0, rfc("2024-05-01T12:00:00Z"), []want{
			{-10, 0, 0.20}, {0, 10, 0.30}, {10, 20, 0.40}, {20, 30, 0.35}, {70, 80, 0.10}}},
		{"csv_utilization.csv", "db-1", Fraction, 0, rfc("2024-05-01T12:00:00Z"), []want{
			{-10, 0, 0.50}, {0, 10, 0.55}, {10, 20, 0.60}}},
		// Cumulative seconds: 5/5, 7.5/5, 11/5.5; the decrease to 3 is a
		// restart, skipped; then 5/5.
		{"csv_seconds.csv", "app-1", Cores, 4, 1714564800e9, []want{
			{0, 5, 1}, {5, 10, 1.5}, {10, 15.5, 2}, {20, 25, 1}}},
		// 6/15, 9/15; the NaN reading is skipped: 12/30 across it.
		{"prom_process.json", "checkout-1", Cores, 0, 1435781430781e6, []want{
			{0, 15, 0.4}, {15, 30, 0.6}, {30, 60, 0.4}}},
		{"prom_process.json", "catalog-1", Cores, 0, 1435781430781e6, []want{
			{0, 15, 0.2}, {15, 30, 0.2}}},
		// cpu0 user 9 + system 1.5 + cpu1 user 3 = 13.5 s in 15 s; then
		// 7 + 0.5 + 3 = 10.5 s; idle and iowait left out; two cpus.
		{"prom_node.json", "db-1", Cores, 2, 1700000000e9, []want{
			{0, 15, 0.9}, {15, 30, 0.7}}},
		// Unnamed series: values up to 1 are fractions, others busy cores.
		{"prom_rate.json", "web-1", Fraction, 0, 1700000000e9, []want{
			{-15, 0, 0.25}, {0, 15, 0.5}, {15, 30, 0.4}, {30, 45, 0.45}}},
		{"prom_rate.json", "web-2", Cores, 0, 1700000000e9, []want{
			{-15, 0, 1.5}, {0, 15, 2.5}, {15, 30, 1.75}}},
		// cpu0 user 6/10 + cpu1 system 2/10; then 3/10 + 5/10; the process
		// series of the same host is left out for the machine-wide one; four
		// cores by system.cpu.logical.count.
		{"otlp_system.json", "db-1", Cores, 4, 1700000000e9, []want{
			{10, 20, 0.8}, {20, 30, 0.8}}},
		// user 3/5 + system 0.5/5; then user 2.5/5 + system 0.5/5 across
		// the damaged line.
		{"otlp_process.jsonl", "cart-7f9c", Cores, 0, 1700000000e9, []want{
			{5, 10, 0.7}, {10, 15, 0.6}}},
		// Utilization of all cores (no cpu attribute): user + system.
		{"otlp_process.jsonl", "edge-1", Fraction, 0, 1700000000e9, []want{
			{0, 5, 0.3}, {5, 10, 0.4}}},
	} {
		s, err := ReadFile("testdata/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		sr := s.Series[c.host]
		if sr == nil {
			t.Errorf("%s: no series for %s (hosts %v)", c.file, c.host, s.Hosts())
			continue
		}
		if sr.Unit != c.unit || sr.Cores != c.cores {
			t.Errorf("%s %s: unit %s cores %d, want %s %d", c.file, c.host, sr.Unit, sr.Cores, c.unit, c.cores)
		}
		if len(sr.Samples) != len(c.samples) {
			t.Errorf("%s %s: %d samples, want %d", c.file, c.host, len(sr.Samples), len(c.samples))
			continue
		}
		for i, w := range c.samples {
			got := sr.Samples[i]
			ws, we := c.base+int64(w.start*1e9), c.base+int64(w.end*1e9)
			if got.Start != ws || got.End != we || math.Abs(got.Value-w.value) > 1e-9 {
				t.Errorf("%s %s sample %d: (%d, %d] %v, want (%d, %d] %v", c.file, c.host, i, got.Start-c.base, got.End-c.base, got.Value, ws-c.base, we-c.base, w.value)
			}
		}
	}
}

func TestDamageCounted(t *testing.T) {
	s, err := ReadFile("testdata/csv_utilization.csv")
	if err != nil {
		t.Fatal(err)
	}
	d := s.Files[0].Damage
	for kind, n := range map[string]int64{"bad_value": 1, "unparseable": 1, "missing_time": 1, "no_host": 1, "duplicate_timestamp": 1} {
		if got := d.Counts[ingest.DamageKind(kind)]; got != n {
			t.Errorf("damage %s: %d, want %d (%v)", kind, got, n, d.Counts)
		}
	}
	for _, msgs := range d.Samples {
		for _, m := range msgs {
			if !strings.HasPrefix(m, "testdata/csv_utilization.csv: ") || strings.Contains(m, "\n") {
				t.Errorf("damage message does not name the file on one line: %q", m)
			}
		}
	}
	s, err = ReadFile("testdata/otlp_process.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Files[0].Damage.Counts["unparseable"]; got != 1 {
		t.Errorf("OTLP damaged lines: %d, want 1", got)
	}
}

func TestBusy(t *testing.T) {
	s := &Series{Unit: Fraction, Samples: []Sample{{0, 10e9, 0.5}, {10e9, 20e9, 0.25}, {30e9, 40e9, 1}}}
	busy, cov := s.Busy(5e9, 35e9, 4)
	// 5 s at 0.5·4 + 10 s at 0.25·4 + 5 s at 4 = 10 + 10 + 20.
	if math.Abs(busy-40) > 1e-9 || math.Abs(cov-20) > 1e-9 {
		t.Errorf("Busy = %v over %v s, want 40 over 20", busy, cov)
	}
	c := &Series{Unit: Cores, Samples: s.Samples}
	if busy, _ := c.Busy(0, 20e9, 99); math.Abs(busy-7.5) > 1e-9 {
		t.Errorf("busy cores: %v, want 7.5", busy)
	}
}

func TestGzipAndErrors(t *testing.T) {
	data, err := os.ReadFile("testdata/prom_node.json")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(data)
	w.Close()
	s, err := Parse(&gz, "node.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	if s.Series["db-1"] == nil {
		t.Errorf("gzip: hosts %v", s.Hosts())
	}
	for _, c := range []struct{ in, msg string }{
		{"", "empty"},
		{"hello\n", "not a metrics file"},
		{"timestamp,host,cpu\n1,a,2\n", "x.csv:1: header"},
		{"timestamp,host,cpu_utilization\n1,a,7\n", "no usable CPU readings; 1 bad_value"},
		{`{"status":"error","errorType":"bad_data","error":"parse error"}`, "Prometheus error bad_data: parse error"},
		{`{"status":"success","data":{"resultType":"vector","result":[]}}`, "range query"},
		{`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]]}]}}`, "no host label"},
		{`{"resourceMetrics":[{"resource":{}}]}`, "no usable CPU readings"},
		{`{"resourceMetrics":[`, "x.csv: "},
	} {
		_, err := Parse(strings.NewReader(c.in), "x.csv")
		if err == nil || !strings.Contains(err.Error(), c.msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): %v, want one line containing %q", c.in, err, c.msg)
		}
	}
}

func TestReadMergesFiles(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.csv")
	b := filepath.Join(dir, "b.csv")
	os.WriteFile(a, []byte("timestamp,host,cpu_utilization\n10,h,0.1\n20,h,0.2\n30,h,0.3\n"), 0o644)
	os.WriteFile(b, []byte("timestamp,host,cpu_utilization\n30,h,0.9\n40,h,0.4\n50,h,0.5\n"), 0o644)
	s, err := Read([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	sr := s.Series["h"]
	// b's first sample (20, 30] overlaps a's: left out.
	var got []float64
	for _, sm := range sr.Samples {
		got = append(got, sm.Value)
	}
	if fmt.Sprint(got) != "[0.1 0.2 0.3 0.4 0.5]" {
		t.Errorf("merged values %v", got)
	}
}

func TestSumTracksMisaligned(t *testing.T) {
	a := []Sample{{0, 10, 1}, {10, 20, 2}}
	b := []Sample{{5, 15, 10}, {15, 25, 20}}
	got := sumTracks([][]Sample{a, b})
	// [0,5): only a alive → 1; [5,10) 11; [10,15) 12; [15,20) 22;
	// [20,25): only b alive → 20.
	want := []Sample{{0, 5, 1}, {5, 10, 11}, {10, 15, 12}, {15, 20, 22}, {20, 25, 20}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sumTracks = %v, want %v", got, want)
	}
	// A gap inside a live track leaves the stretch uncovered.
	c := []Sample{{0, 10, 1}, {20, 30, 1}}
	d := []Sample{{0, 30, 5}}
	if got := sumTracks([][]Sample{c, d}); len(got) != 2 || got[1].Start != 20 {
		t.Errorf("gap: %v", got)
	}
}

// TestServices reads per-process CPU seconds of two services of one host
// (the CSV service column): the host's series is their sum, and each
// service keeps its own; a machine-wide reading of another host is no
// service.
func TestServices(t *testing.T) {
	csv := "timestamp,host,service,cpu_seconds\n" +
		"10,h,a,1\n10,h,b,5\n20,h,a,2\n20,h,b,7\n30,h,a,4\n30,h,b,8\n" +
		"10,g,,0\n20,g,,3\n"
	s, err := Parse(strings.NewReader(csv), "svc.csv")
	if err != nil {
		t.Fatal(err)
	}
	values := func(sr *Series) string {
		if sr == nil {
			return "<nil>"
		}
		var v []string
		for _, sm := range sr.Samples {
			v = append(v, fmt.Sprintf("%.2f", sm.Value))
		}
		return strings.Join(v, " ")
	}
	if got := values(s.Series["h"]); got != "0.30 0.30" {
		t.Errorf("host h: %s, want 0.30 0.30 (the services summed)", got)
	}
	if got := values(s.Services["h"]["a"]); got != "0.10 0.20" {
		t.Errorf("service a: %s", got)
	}
	if got := values(s.Services["h"]["b"]); got != "0.20 0.10" {
		t.Errorf("service b: %s", got)
	}
	if len(s.Services["g"]) != 0 || s.Series["g"] == nil {
		t.Errorf("host g: services %v, series %v", s.Services["g"], s.Series["g"])
	}
}

// TestOTLPServices reads process.cpu.time of resources with a service.name
// as that service's series too.
func TestOTLPServices(t *testing.T) {
	s, err := ReadFile("testdata/otlp_process.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for h, svcs := range s.Services {
		for svc, sr := range svcs {
			if len(sr.Samples) == 0 || sr.Unit != Cores {
				t.Errorf("%s/%s: %+v", h, svc, sr)
			}
			found = append(found, h+"/"+svc)
		}
	}
	if len(found) != 1 || found[0] != "cart-7f9c/cart" {
		t.Errorf("service series %v, want cart-7f9c/cart", found)
	}
}

// TestContainers reads the CPU of containers and pods as cAdvisor and the
// Collector's kubeletstats and docker_stats receivers write it: a pod's
// cgroup is its host's series and its containers its services, without
// the pause container; a Docker container is a host known also by its
// name and id; cgroups that hold others are not added to them.
func TestContainers(t *testing.T) {
	const catalog, web = "catalog-5f6c9-x2x7q", "web-7d9f-abcde"
	hexID := "3f4e5d6c7b8a" + strings.Repeat("9", 52)
	k8s := readTestdata(t, "prom_cadvisor_k8s.json")
	near(t, "pod "+catalog, mean(k8s.Series[catalog]), 0.481)
	near(t, "its container catalog", mean(k8s.Services[catalog]["catalog"]), 0.4)
	near(t, "its sidecar", mean(k8s.Services[catalog]["istio-proxy"]), 0.08)
	near(t, "pod "+web+", its containers summed", mean(k8s.Series[web]), 0.2)
	near(t, "the node's root cgroup", mean(k8s.Series["node-1"]), 2)
	if _, ok := k8s.Services[catalog]["POD"]; ok {
		t.Error("the pause container is a service")
	}
	if hosts := k8s.Hosts(); len(hosts) != 3 {
		t.Errorf("hosts %v, want the two pods and the node", hosts)
	}

	docker := readTestdata(t, "prom_cadvisor_docker.json")
	for _, name := range []string{"shop-catalog-1", "SHOP-catalog-1", hexID, hexID[:12], "catalog"} {
		if got := docker.Lookup(name); got != "shop-catalog-1" {
			t.Errorf("Lookup(%q) = %q, want the container shop-catalog-1", name, got)
		}
	}
	near(t, "container shop-catalog-1", mean(docker.Series["shop-catalog-1"]), 0.3)
	// A standalone cAdvisor names a pod by its container's Docker labels.
	near(t, "pod orders-6b7c-9xk2p by its Docker labels", mean(docker.Services["orders-6b7c-9xk2p"]["orders"]), 0.15)

	kubelet := readTestdata(t, "otlp_kubelet.jsonl")
	near(t, "pod "+catalog+" (k8s.pod.cpu.time, not also its usage)", mean(kubelet.Series[catalog]), 0.5)
	near(t, "its container catalog", mean(kubelet.Services[catalog]["catalog"]), 0.45)
	near(t, "the node", mean(kubelet.Series["node-1"]), 1.5)
	if got := kubelet.Lookup(hexID[:12]); got != catalog {
		t.Errorf("Lookup(short container id) = %q, want the pod %s", got, catalog)
	}

	dj := readTestdata(t, "otlp_docker_jvm.json")
	near(t, "docker_stats container (nanoseconds)", mean(dj.Series["0123456789ab"]), 0.25)
	if got := dj.Lookup("shop-orders-1"); got != "0123456789ab" {
		t.Errorf("Lookup(container name) = %q, want its host name 0123456789ab", got)
	}
	near(t, "jvm.cpu.time of service cart", mean(dj.Services["cart-host"]["cart"]), 0.3)

	// An alias two files give to two hosts names neither.
	both, err := Read([]string{"testdata/prom_cadvisor_docker.json", "testdata/otlp_kubelet.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if got := both.Lookup(hexID[:12]); got != "" {
		t.Errorf("Lookup of an id two hosts claim = %q, want none", got)
	}
	if got := both.Lookup("shop-catalog-1"); got != "shop-catalog-1" {
		t.Errorf("Lookup(shop-catalog-1) = %q", got)
	}
}

// TestRuntimeMetrics reads the CPU a process's runtime reports under its
// own names, and each process once where it sends the same CPU under
// several: Python's process.cpu.time beside process.runtime.cpython.cpu_time
// (states named type), a JVM's jvm.cpu.time beside the Collector's process
// scraper on its pid, .NET's dotnet.process.cpu.time; utilizations beside
// them left out, Python's older one read as busy cores; in Prometheus, one process's process_cpu_seconds_total
// beside its jvm_cpu_time_seconds_total of another scope.
func TestRuntimeMetrics(t *testing.T) {
	s := readTestdata(t, "otlp_runtimes.jsonl")
	// 0.25 Python, 0.4 the JVM, 0.15 .NET, 0.3 busy cores of a second
	// Python process that sends only its older utilization; twice Python
	// and the JVM would be 1.75.
	near(t, "host app-1", mean(s.Series["app-1"]), 1.1)
	if c := s.Series["app-1"].Cores; c != 4 {
		t.Errorf("host app-1: %d cores, want the 4 its JVM saw (jvm.cpu.count)", c)
	}
	near(t, "Python's service recs, two processes", mean(s.Services["app-1"]["recs"]), 0.55)
	near(t, "the JVM's service cart (not the scraper's)", mean(s.Services["app-1"]["cart"]), 0.4)
	near(t, ".NET's service pay", mean(s.Services["app-1"]["pay"]), 0.15)
	if d := s.Files[0].Damage.Total(); d != 0 {
		t.Errorf("%d readings damaged, want none (user and system told apart by type)", d)
	}

	p := readTestdata(t, "prom_runtimes.json")
	near(t, "checkout-1: process_cpu_seconds_total, its JVM's own left out", mean(p.Series["checkout-1"]), 0.4)
	near(t, "recs-1: Python's process_cpu_time_seconds_total by type, its older name left out", mean(p.Series["recs-1"]), 0.25)
	near(t, "batch-1: two processes of one host", mean(p.Series["batch-1"]), 0.3)
	near(t, "recs-2: Python's older utilization, busy cores", mean(p.Series["recs-2"]), 1.5)
}

// TestNodeEventLoop reads a Node.js process's event loop where it sends
// nothing else of its CPU: its active time (nodejs.eventloop.time, the
// idle state left out, in seconds or milliseconds), else its utilization
// as busy cores of its one thread (beyond one thread, damage); a process
// that also sends process.cpu.time is read by that alone. The same in
// Prometheus's names.
func TestNodeEventLoop(t *testing.T) {
	s := readTestdata(t, "otlp_nodejs.jsonl")
	api := s.Services["node-1"]["api"]
	if api == nil || len(api.Samples) == 0 {
		t.Fatalf("no series of service api on node-1: %v", s.Services)
	}
	// 0.3 of the loop's active time, 0.2 of another's utilization, 0.5
	// of a third's process.cpu.time (its loop's 0.35 and 0.3 left out).
	near(t, "api on node-1, its last window", api.Samples[len(api.Samples)-1].Value, 1.0)
	near(t, "node-2: a loop's milliseconds and a utilization after its damaged reading", mean(s.Series["node-2"]), 0.2)
	if d := s.Files[0].Damage.Total(); d != 1 {
		t.Errorf("%d readings damaged, want 1 (a utilization of 1.5 threads)", d)
	}

	p := readTestdata(t, "prom_nodejs.json")
	near(t, "api-1: the loop's active seconds, its idle ones left out", mean(p.Series["api-1"]), 0.3)
	near(t, "api-2: the loop's utilization, busy cores", mean(p.Series["api-2"]), 0.25)
	near(t, "api-3: process_cpu_seconds_total, the loop's utilization left out", mean(p.Series["api-3"]), 0.6)
}

// TestLookup finds hosts by name, alias, case and first label, and finds
// none where the first label is ambiguous.
func TestLookup(t *testing.T) {
	s := &Set{
		Series:   map[string]*Series{"web-1.example.com": {}, "db-1.a.example.com": {}, "db-1.b.example.com": {}, "pod-x": {}},
		Services: map[string]map[string]*Series{"svc-host": {"svc": {}}},
		Aliases:  map[string]string{"0123456789ab": "pod-x"},
	}
	for name, want := range map[string]string{
		"web-1.example.com": "web-1.example.com",
		"WEB-1.example.com": "web-1.example.com",
		"web-1":             "web-1.example.com",
		"db-1":              "",
		"0123456789ab":      "pod-x",
		"0123456789AB":      "pod-x",
		"svc-host":          "svc-host",
		"nowhere":           "",
		"":                  "",
	} {
		if got := s.Lookup(name); got != want {
			t.Errorf("Lookup(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestLimits: CPU limits are read from cAdvisor's quota and period (a
// pod's own cgroup, a Docker container's, a pod whose container has
// none), kube-state-metrics' limits of a pod's containers (summed, the
// memory limit left out), OTLP's k8s.container.cpu_limit and
// k8s.container.cpu.limit, and the CSV's cpu_limit and cpu_period.
func TestLimits(t *testing.T) {
	check := func(s *Set, host string, cores, period float64) {
		t.Helper()
		l, ok := s.Limits[host]
		switch {
		case cores == 0 && ok:
			t.Errorf("%s: limit %s, want none", host, l)
		case cores == 0:
		case !ok:
			t.Errorf("%s: no limit, want %g cores", host, cores)
		case math.Abs(l.Cores-cores) > 1e-12 || math.Abs(l.Period-period) > 1e-12 || l.Source == "":
			t.Errorf("%s: limit %g cores every %g s (%s), want %g every %g", host, l.Cores, l.Period, l.Source, cores, period)
		}
	}
	k8s := readTestdata(t, "prom_cadvisor_k8s.json")
	check(k8s, "catalog-5f6c9-x2x7q", 1.2, 0.1)
	th := k8s.Throttling["catalog-5f6c9-x2x7q"]
	if th == nil {
		t.Fatal("no throttling of the catalog pod")
	}
	if p, n := th.Over(1700000000e9, 1700000060e9); p != 600 || n != 90 {
		t.Errorf("throttled in %g of %g periods, want 90 of 600", n, p)
	}
	if p, _ := th.Over(1700000030e9, 1700000060e9); p != 300 {
		t.Errorf("%g periods in the last 30 s, want 300", p)
	}
	check(k8s, "web-7d9f-abcde", 0, 0)
	check(k8s, "node-1", 0, 0)
	check(readTestdata(t, "prom_cadvisor_docker.json"), "shop-catalog-1", 0.5, 0.05)
	ksm := readTestdata(t, "prom_kube_state_limits.json")
	check(ksm, "orders-6b7c-9xk2p", 1.75, 0)
	if s := ksm.Series["orders-6b7c-9xk2p"]; s == nil {
		t.Error("the pod's usage beside its limits was not read")
	}
	check(readTestdata(t, "otlp_kubelet.jsonl"), "catalog-5f6c9-x2x7q", 1, 0)
	csv := readTestdata(t, "csv_limits.csv")
	check(csv, "api-1", 0.5, 0.05)
	check(csv, "db-1", 0, 0)
	if d := csv.Files[0].Damage.Total(); d != 1 {
		t.Errorf("damage %d, want the one unreadable limit", d)
	}
	// A file of limits alone is read; merged, the first file's limit of
	// a host is kept.
	set, err := Read([]string{filepath.Join("testdata", "prom_cadvisor_k8s.json"), filepath.Join("testdata", "otlp_kubelet.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	check(set, "catalog-5f6c9-x2x7q", 1.2, 0.1)
	if !slices.ContainsFunc(set.Files[1].Notes, func(n string) bool { return strings.Contains(n, "CPU limit 1 cores left out") }) {
		t.Errorf("no note of the limit left out: %v", set.Files[1].Notes)
	}
}

// readTestdata reads a metrics file of testdata.
// mean is the mean of a series' samples, NaN for none.
func mean(sr *Series) float64 {
	if sr == nil || len(sr.Samples) == 0 {
		return math.NaN()
	}
	var sum float64
	for _, sm := range sr.Samples {
		sum += sm.Value
	}
	return sum / float64(len(sr.Samples))
}

// near reports busy cores other than wanted.
func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !(math.Abs(got-want) < 1e-9) {
		t.Errorf("%s: %v busy cores, want %v", what, got, want)
	}
}

func readTestdata(t *testing.T, name string) *Set {
	t.Helper()
	s, err := ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
