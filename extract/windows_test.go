package extract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/perfcast/perfcast/estimate"
	"github.com/perfcast/perfcast/metrics"
)

// hostOp is one operation of a simulated host.
type hostOp struct {
	name   string
	demand float64 // mean CPU seconds (exponential)
	wait   float64 // mean off-CPU seconds inside the operation (exponential)
	rate   float64 // mean executions per second
	period float64 // seconds per cycle of the rate's ±60 % swing
}

// simulateHost generates executions of the operations on one host for the
// given seconds, adds them to w, and returns the host's CPU utilization
// per second as a CSV metrics file's content. Each execution uses its CPU
// spread evenly over its duration (CPU stretched by processor sharing at
// the current utilization, plus the wait), so busy time falls into the
// seconds it really ran in; the utilization carries a background load and
// Gaussian measurement noise of sd 0.01.
func simulateHost(seed uint64, w *Windows, host string, cores, background float64, seconds int, ops []hostOp) []byte {
	rng := rand.New(rand.NewPCG(seed, 11))
	const t0 = int64(1_700_000_000) * 1e9
	busy := make([]float64, seconds+2)
	spread := func(start, end int64, cpu float64) {
		d := float64(end - start)
		for s := start; s < end; {
			sec := (s - t0) / 1e9
			next := min(t0+(sec+1)*1e9, end)
			if sec >= 0 && sec < int64(len(busy)) {
				busy[sec] += cpu * float64(next-s) / d
			}
			s = next
		}
	}
	util := 0.5
	for i := 0; i < seconds; i++ {
		var used float64
		for j, o := range ops {
			rate := o.rate * (1 + 0.6*math.Sin(2*math.Pi*float64(i)/o.period+float64(j)))
			n := int(distuv.Poisson{Lambda: rate, Src: rng}.Rand())
			for range n {
				start := t0 + int64(i)*1e9 + int64(rng.Float64()*1e9)
				cpu := rng.ExpFloat64() * o.demand
				own := cpu/(1-math.Min(util, 0.9)) + rng.ExpFloat64()*o.wait
				end := start + int64(own*1e9) + 1
				spread(start, end, cpu)
				w.Add(host, o.name, end, own, math.NaN(), 1)
				used += cpu
			}
		}
		util = (used + background) / cores
	}
	var b bytes.Buffer
	b.WriteString("timestamp,host,cpu_utilization\n")
	for i := 0; i <= seconds; i++ {
		u := (busy[i]+background)/cores + 0.01*rng.NormFloat64()
		u = math.Min(math.Max(u, 0), 1)
		// The reading at the end of second i covers that second.
		fmt.Fprintf(&b, "%d,%s,%.5f\n", t0/1e9+int64(i)+1, host, u)
	}
	return b.Bytes()
}

// TestEstimateDemandsRecoversTruth runs the whole path: executions folded
// into windows, utilization written as a CSV metrics file and read back,
// demands estimated. Every operation carrying at least 5 % of the host's
// load must come within 10 % of its true demand, the off-CPU rest must be
// the own time minus it, and the predicted utilization (Σ X·D + background)
// must be within 5 % of the measured.
func TestEstimateDemandsRecoversTruth(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []hostOp
	}{
		{"cpu-only", []hostOp{
			{name: "shop/GET /item", demand: 0.004, rate: 120, period: 700},
			{name: "shop/POST /cart", demand: 0.015, rate: 30, period: 260},
			{name: "shop/GET /health", demand: 0.0003, rate: 5, period: 90},
		}},
		{"off-cpu-waiting", []hostOp{
			{name: "shop/GET /item", demand: 0.004, wait: 0.010, rate: 120, period: 700},
			{name: "shop/POST /cart", demand: 0.015, wait: 0.080, rate: 30, period: 260},
			{name: "shop/GET /health", demand: 0.0003, wait: 0.002, rate: 5, period: 90},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const cores, bg = 2.0, 0.15
			w := NewWindows()
			csv := simulateHost(1, w, "app-1", cores, bg, 2400, tc.ops)
			path := filepath.Join(t.TempDir(), "util.csv")
			if err := os.WriteFile(path, csv, 0o644); err != nil {
				t.Fatal(err)
			}
			set, err := metrics.Read([]string{path})
			if err != nil {
				t.Fatal(err)
			}
			res, rep := EstimateDemands(w, set, nil, DemandOptions{Cores: map[string]int{"app-1": 2}})
			if _, err := json.Marshal(rep); err != nil {
				t.Errorf("report does not encode as JSON: %v", err)
			}
			var text bytes.Buffer
			rep.WriteText(&text)
			t.Logf("\n%s", text.String())
			if len(rep.Hosts) != 1 || rep.Hosts[0].Skipped != "" {
				t.Fatalf("host not estimated: %+v", rep.Hosts)
			}
			hd := rep.Hosts[0]
			if hd.Choice.Picked != "regression" && hd.Choice.Picked != "kalman" {
				t.Errorf("picked %s", hd.Choice.Picked)
			}
			var load float64
			for _, o := range tc.ops {
				load += o.rate * o.demand
			}
			for _, o := range tc.ops {
				r, ok := res[o.name]
				if !ok {
					t.Fatalf("no result for %s", o.name)
				}
				if math.Abs(r.OffCPU-math.Max(0, r.OwnTime-r.CPU)) > 1e-12 {
					t.Errorf("%s: off-CPU %v is not own %v minus CPU %v", o.name, r.OffCPU, r.OwnTime, r.CPU)
				}
				if o.rate*o.demand/load < estimate.MinShare {
					continue
				}
				if rel := math.Abs(r.CPU-o.demand) / o.demand; rel > 0.10 {
					t.Errorf("%s: CPU %.5f s, true %.5f s: %.1f %% off", o.name, r.CPU, o.demand, 100*rel)
				}
				if !(math.Abs(r.CPU-o.demand) <= 4*r.StdErr) {
					t.Errorf("%s: CPU %.5f ± %.2g s, true %.5f s: more than 4 standard errors off", o.name, r.CPU, r.StdErr, o.demand)
				}
			}
			for _, s := range hd.Choice.Scores {
				if s.Method == hd.Choice.Picked && math.Abs(s.Bias) > 0.05 {
					t.Errorf("predicted utilization %.1f %% off the measured", 100*s.Bias)
				}
			}
			if math.Abs(hd.Background-bg) > 0.05 {
				t.Errorf("background %.3f cores, true %.3f", hd.Background, bg)
			}
		})
	}
}

// TestEstimateDemandsSkips reports hosts without metrics or outside their
// time.
func TestEstimateDemandsSkips(t *testing.T) {
	w := NewWindows()
	for i := 0; i < 100; i++ {
		w.Add("lonely", "a/x", int64(1e18)+int64(i)*1e9, 0.01, math.NaN(), 1)
		w.Add("Web-1.example.com", "b/y", int64(1e18)+int64(i)*1e9, 0.01, math.NaN(), 1)
	}
	series := map[string]*metrics.Series{"web-1": {Host: "web-1", Unit: metrics.Fraction, Samples: []metrics.Sample{{Start: 0, End: 1e9, Value: 0.5}}}}
	res, rep := EstimateDemands(w, &metrics.Set{Series: series}, nil, DemandOptions{})
	if len(res) != 0 || len(rep.Hosts) != 2 {
		t.Fatalf("results %v, hosts %d", res, len(rep.Hosts))
	}
	if !strings.Contains(rep.Hosts[0].Skipped, "do not cover") || rep.Hosts[0].Host != "Web-1.example.com" {
		t.Errorf("host matched by short name, outside the metrics' time: %+v", rep.Hosts[0])
	}
	if rep.Hosts[1].Skipped != "no metrics for this host" {
		t.Errorf("lonely: %+v", rep.Hosts[1])
	}
	if len(rep.Warnings) != 2 {
		t.Errorf("warnings %v", rep.Warnings)
	}
}

// TestWindowsMerge checks that windows folded in parts and merged equal
// the windows folded at once, also when the parts had to widen their
// windows differently.
func TestWindowsMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	type ex struct {
		host, op string
		end      int64
		own      float64
	}
	var all []ex
	for i := 0; i < 60000; i++ {
		// Spread over 200 000 s: more than maxWindows seconds.
		sec := int64(rng.IntN(200000))
		if i%3 == 0 {
			sec = int64(rng.IntN(1000)) // a dense part
		}
		all = append(all, ex{fmt.Sprint("h", rng.IntN(2)), fmt.Sprint("c/op", rng.IntN(4)), 1e18 + sec*1e9 + int64(rng.IntN(1e9)), float64(rng.IntN(1000)) / 1000})
	}
	whole := NewWindows()
	a, b := NewWindows(), NewWindows()
	a2, b2 := NewWindows(), NewWindows()
	for i, e := range all {
		whole.Add(e.host, e.op, e.end, e.own, e.own/2, 1)
		if i < 1000 {
			a.Add(e.host, e.op, e.end, e.own, e.own/2, 1)
			a2.Add(e.host, e.op, e.end, e.own, e.own/2, 1)
		} else {
			b.Add(e.host, e.op, e.end, e.own, e.own/2, 1)
			b2.Add(e.host, e.op, e.end, e.own, e.own/2, 1)
		}
	}
	a.Merge(b)
	b2.Merge(a2)
	want := dumpWindows(whole)
	if dumpWindows(a) != want || dumpWindows(b2) != want {
		t.Errorf("merged windows differ from windows folded at once")
	}
	if whole.hosts["h0"].width == windowWidth {
		t.Errorf("windows did not widen over 200 000 s")
	}
	if n := len(whole.hosts["h0"].cells); n > maxWindows {
		t.Errorf("%d windows kept", n)
	}
}

// dumpWindows renders the windows in a canonical order, operations by
// name.
func dumpWindows(w *Windows) string {
	var b strings.Builder
	for _, host := range w.Hosts() {
		h := w.hosts[host]
		fmt.Fprintf(&b, "%s width=%d\n", host, h.width)
		var idxs []int64
		for idx := range h.cells {
			idxs = append(idxs, idx)
		}
		slices.Sort(idxs)
		for _, idx := range idxs {
			for op, c := range h.cells[idx] {
				if c.n != 0 {
					fmt.Fprintf(&b, "%d %s %g %.9g %g %.9g\n", idx, h.ops[op], c.n, c.own, c.cpuN, c.cpu)
				}
			}
		}
	}
	lines := strings.Split(b.String(), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestEstimateDemandsPerService estimates, where the metrics measure each
// service's processes, every component's operations against its own
// series: two services whose loads rise and fall together on one host, one
// of them mostly waiting, get their own demands; a third service with no
// series of its own is reported, not estimated.
func TestEstimateDemandsPerService(t *testing.T) {
	w := NewWindows()
	front := []hostOp{{name: "front/GET /page", demand: 0.002, rate: 100, period: 300}}
	pay := []hostOp{{name: "pay/POST /charge", demand: 0.0005, wait: 0.02, rate: 100, period: 300}}
	var b bytes.Buffer
	b.WriteString("timestamp,host,service,cpu_seconds\n")
	for i, svc := range []struct {
		name string
		ops  []hostOp
	}{{"front", front}, {"pay", pay}} {
		// Each service's processes' CPU time, cumulative, from the
		// utilization of its own operations.
		csv := simulateHost(uint64(i+1), w, "app-1", 1, 0, 1200, svc.ops)
		used := 0.0
		for _, line := range strings.Split(strings.TrimSpace(string(csv)), "\n")[1:] {
			f := strings.Split(line, ",")
			u, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				t.Fatal(err)
			}
			used += u
			fmt.Fprintf(&b, "%s,%s,%s,%.5f\n", f[0], f[1], svc.name, used)
		}
	}
	simulateHost(3, w, "app-1", 1, 0, 1200, []hostOp{{name: "audit/POST /log", demand: 0.001, rate: 10, period: 100}})
	path := filepath.Join(t.TempDir(), "services.csv")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := metrics.Read([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	res, rep := EstimateDemands(w, set, nil, DemandOptions{Cores: map[string]int{"app-1": 1}})
	var text bytes.Buffer
	rep.WriteText(&text)
	t.Logf("\n%s", text.String())
	if len(rep.Hosts) != 3 {
		t.Fatalf("%d scopes, want one per component: %+v", len(rep.Hosts), rep.Hosts)
	}
	for _, want := range []struct {
		op     string
		demand float64
	}{{"front/GET /page", 0.002}, {"pay/POST /charge", 0.0005}} {
		r, ok := res[want.op]
		if !ok {
			t.Fatalf("%s not estimated", want.op)
		}
		// Each service has one operation: its demand is its busy time
		// over its executions, up to the readings' noise.
		if math.Abs(r.CPU-want.demand) > 0.05*want.demand {
			t.Errorf("%s: %.4f ms, true %.4f ms", want.op, 1e3*r.CPU, 1e3*want.demand)
		}
	}
	if _, ok := res["audit/POST /log"]; ok {
		t.Error("audit, whose processes the metrics do not measure, got an estimate")
	}
	found := false
	for _, wn := range rep.Warnings {
		found = found || strings.Contains(wn, "component audit on host app-1: CPU demands not estimated: no metrics for its processes")
	}
	if !found {
		t.Errorf("no warning for audit: %q", rep.Warnings)
	}
}
