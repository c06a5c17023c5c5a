package extract_test

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
	"github.com/perfcast/perfcast/whatif"
)

// queueDBModel has a web service calling a database with no spans of its
// own whose two disk servers, about 55 % busy, serve its queries and
// updates in order, each after a millisecond of network.
const queueDBModel = `perfcast: 1
name: queuedb
hosts:
  app: {cpu: {cores: 2}}
  db: {disks: {data: {servers: 2}}}
components:
  web:
    host: app
    operations:
      GET /a: {steps: [{cpu: exp(2ms)}, {call: db/query}]}
      GET /b: {steps: [{cpu: exp(1ms)}, {call: db/query}, {call: db/update}]}
  db:
    host: db
    operations:
      query: {steps: [{delay: 1ms}, {disk: exp(8ms)}]}
      update: {steps: [{delay: 1ms}, {disk: exp(10ms)}]}
workload:
  a: {open: {rate: 80/s}, steps: [{call: web/GET /a}]}
  b: {open: {rate: 25/s}, steps: [{call: web/GET /b}]}
`

// TestExternalQueue extracts from traces in which the database shows only
// as its clients' spans and no metrics measure its machine. Its calls take
// longer the more others are in flight as they begin, and the station
// whose simulated calls grow as the traces' do answers them in the model:
// its busy share and the workloads' response times at the observed load
// and at 1.4 times it come within a tenth of the truth's, where the calls
// as fixed delays miss the growth. The same calls to a database that
// never makes them wait (its latency a delay) stay delays, with the
// evidence saying why.
func TestExternalQueue(t *testing.T) {
	requests := int64(40000)
	if testing.Short() {
		requests = 24000
	}
	noDB := func(s *sim.Span) bool { return s.Component != "db" }
	truth, _, tracesPath, _ := recordModel(t, queueDBModel, "queuedb", tracegen.Options{Seed: 5}, requests, noDB)
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 2}}}
	out, err := extractRun(context.Background(), []string{tracesPath}, "queuedb", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("model:\n%s", out.Model.Marshal())
	if mentions(out.Report.Warnings, "db: a system seen only by its clients' spans whose calls took longer") != 1 {
		t.Fatalf("no word of the database's station in %q", out.Report.Warnings)
	}
	db, h := out.Model.Component("db"), out.Model.Host("db")
	if db == nil || h == nil || db.Host != "db" {
		t.Fatalf("the database is no component on host db")
	}
	busy := func(r *solve.Result, host string) float64 {
		var u float64
		for name, res := range r.Resources {
			if strings.HasPrefix(name, host+".") {
				u = math.Max(u, res.Utilization)
			}
		}
		return u
	}
	for _, load := range []float64{1, 1.4} {
		want, got := solveAtLoad(t, truth, load), solveAtLoad(t, out.Model, load)
		u0, u1 := busy(want, "db"), busy(got, "db")
		t.Logf("at %.1f times the load: the database %.3f busy, truth %.3f", load, u1, u0)
		if math.Abs(u1-u0) > 0.1*u0 {
			t.Errorf("at %.1f times the load: the database %.3f busy, truth %.3f", load, u1, u0)
		}
		for w, entry := range map[string]string{"a": "GET /a", "b": "GET /b"} {
			if want.Workloads[w] == nil || got.Workloads[entry] == nil {
				t.Fatalf("workload %s (%s) missing", w, entry)
			}
			r0, r1 := want.Workloads[w].ResponseTime.Mean, got.Workloads[entry].ResponseTime.Mean
			t.Logf("at %.1f times the load: %s %.2f ms, truth %.2f ms", load, w, r1*1e3, r0*1e3)
			if math.Abs(r1-r0) > 0.1*r0 {
				t.Errorf("at %.1f times the load: %s %.2f ms, truth %.2f ms", load, w, r1*1e3, r0*1e3)
			}
		}
	}

	// A database that never makes its calls wait: they stay delays.
	free := strings.NewReplacer("{disk: exp(8ms)}", "{delay: exp(8ms)}", "{disk: exp(10ms)}", "{delay: exp(10ms)}").Replace(queueDBModel)
	_, _, freePath, _ := recordModel(t, free, "freedb", tracegen.Options{Seed: 5}, requests, noDB)
	delays, err := extractRun(context.Background(), []string{freePath}, "freedb", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if delays.Model.Component("db") != nil || mentions(delays.Report.Evidence, "db: a system seen only by its clients' spans: its calls took no longer") != 1 {
		t.Errorf("a database without a wait: component %v, evidence %q", delays.Model.Component("db") != nil, delays.Report.Evidence)
	}
}

// goCallerModel is a Go front end (one CPU slot, 66 % busy) whose
// handler calls a system that never makes calls wait.
const goCallerModel = `perfcast: 1
name: goext
hosts:
  app: {cpu: {cores: 2}}
components:
  web:
    host: app
    operations:
      GET /a:
        steps:
          - hold: {resource: slot, steps: [{cpu: exp(3ms)}]}
          - delay: exp(8ms)
          - hold: {resource: slot, steps: [{cpu: exp(3ms)}]}
passive:
  slot: {capacity: 1}
workload:
  a: {open: {rate: 110/s}, steps: [{call: web/GET /a}]}
`

// TestExternalQueueSlottedCallers: client spans that end only when the
// caller has its slot again (Go's HTTP client) grow with the caller's
// load, which reads as a wait at the system called. Declared, the
// caller's slot keeps the system's calls delays, and the evidence says
// why.
func TestExternalQueueSlottedCallers(t *testing.T) {
	m, err := model.Parse([]byte(goCallerModel), "goext.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obs := generateWith(t, m, sim.RecordOptions{Seed: 3, Requests: 20000, ExternalSpans: true, ClientEndsOnResume: true}, t.TempDir())
	for _, slots := range []int{0, 1} {
		cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 2}}}
		if slots > 0 {
			cfg.CPUSlots = map[string]int{"web": slots}
		}
		out, err := extractRun(context.Background(), []string{obs.path}, "goext", cfg)
		if err != nil {
			t.Fatal(err)
		}
		station := out.Model.Component(sim.ExternalPeer) != nil
		said := mentions(out.Report.Evidence, "come from components with CPU slots")
		t.Logf("CPU slots %d: a station %v, said %d times", slots, station, said)
		if station != (slots == 0) || said != slots {
			t.Errorf("CPU slots %d: a station %v, said %d times in %q", slots, station, said, out.Report.Evidence)
		}
	}
}

// BenchmarkExtractExternalQueue extracts TestExternalQueue's traces (24 000
// requests): "waits" those of the database of two servers, whose station
// extraction simulates, "none" those of the database that never makes
// calls wait, whose calls stay delays after the fit.
func BenchmarkExtractExternalQueue(b *testing.B) {
	noDB := func(s *sim.Span) bool { return s.Component != "db" }
	free := strings.NewReplacer("{disk: exp(8ms)}", "{delay: exp(8ms)}", "{disk: exp(10ms)}", "{delay: exp(10ms)}").Replace(queueDBModel)
	for _, c := range []struct{ name, src string }{{"waits", queueDBModel}, {"none", free}} {
		_, _, path, _ := recordModel(b, c.src, "queuedb", tracegen.Options{Seed: 5}, 24000, noDB)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 2}}}
				if _, err := extractRun(context.Background(), []string{path}, "queuedb", cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestExternalQueueShop drops the spans of the shop example's database,
// which runs each call on eight cores and then on one disk, at six times
// the example's users (the disk 25 % busy). Its clients' calls show the
// disk's queue: extraction finds one server serving in order, as busy as
// the disk within a tenth, and the front end's operations come within a
// tenth of the truth's at 1.67 and 2.33 times that load (the disk 58 %
// busy), the database's CPU, which hardly queues, in the network's fixed
// delay.
func TestExternalQueueShop(t *testing.T) {
	raw, err := os.ReadFile("../examples/models/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m0, err := model.Parse(raw, "shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := whatif.Set(m0, "workload.*.load=6"); err != nil {
		t.Fatal(err)
	}
	truth, _, path, _ := recordModel(t, string(m0.Marshal()), "shop", tracegen.Options{Seed: 3}, 40000, func(s *sim.Span) bool { return s.Component != "db" })
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"web-1": {Cores: 2}, "web-2": {Cores: 2}, "backend": {Cores: 4}}}
	out, err := extractRun(context.Background(), []string{path}, "shop", cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := out.Model.Host("db")
	if h == nil || h.Disk("db") == nil || h.Disk("db").Servers != 1 {
		t.Fatalf("no disk of one server on host db:\n%s", out.Model.Marshal())
	}
	for _, load := range []float64{1, 1.67, 2.33} {
		want, got := solveAtLoad(t, truth, load), solveAtLoad(t, out.Model, load)
		u0, u1 := want.Resources["db.disk.data"].Utilization, got.Resources["db.disk.db"].Utilization
		t.Logf("at %.2f times the load: the database's station %.3f busy, the truth's disk %.3f", load, u1, u0)
		if math.Abs(u1-u0) > 0.1*u0 {
			t.Errorf("at %.2f times the load: the database's station %.3f busy, the truth's disk %.3f", load, u1, u0)
		}
		for _, id := range []string{"frontend/GET /browse", "frontend/POST /checkout"} {
			r0, r1 := want.Operations[id].ResponseTime.Mean, got.Operations[id].ResponseTime.Mean
			t.Logf("at %.2f times the load: %s %.2f ms, truth %.2f ms", load, id, r1*1e3, r0*1e3)
			if math.Abs(r1-r0) > 0.1*r0 {
				t.Errorf("at %.2f times the load: %s %.2f ms, truth %.2f ms", load, id, r1*1e3, r0*1e3)
			}
		}
	}
}
