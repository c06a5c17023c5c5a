package report

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// generatedModel builds a model of n components on n/3 hosts whose calls
// form a random acyclic graph (each component calls only components after
// it), with three open workloads entering at the first components.
func generatedModel(t *testing.T, n int, seed uint64) *model.Model {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	b.WriteString("perfcast: 1\nname: generated\nhosts:\n")
	hosts := n / 3
	for h := range hosts {
		fmt.Fprintf(&b, "  host-%02d: {cpu: {cores: %d}}\n", h, 1+h%4)
	}
	b.WriteString("components:\n")
	for c := range n {
		fmt.Fprintf(&b, "  service-%02d:\n    host: host-%02d\n", c, rng.IntN(hosts))
		if c%4 == 0 {
			b.WriteString("    threads: 20\n")
		}
		b.WriteString("    operations:\n")
		for op := range 2 {
			fmt.Fprintf(&b, "      op%d:\n        steps:\n          - cpu: exp(%dus)\n", op, 100+rng.IntN(900))
			for range rng.IntN(3) {
				if c+1 >= n {
					break
				}
				target := c + 1 + rng.IntN(min(n-c-1, 8))
				kind := "call"
				if rng.IntN(5) == 0 {
					kind = "send"
				}
				fmt.Fprintf(&b, "          - %s: service-%02d/op%d\n", kind, target, rng.IntN(2))
			}
			if rng.IntN(3) == 0 {
				b.WriteString("          - delay: exp(2ms)\n")
			}
		}
	}
	b.WriteString("workload:\n")
	for w := range 3 {
		fmt.Fprintf(&b, "  class-%d:\n    open: {rate: %d/s}\n    steps:\n      - call: service-%02d/op0\n", w, 5+w, w)
	}
	m, err := model.Parse([]byte(b.String()), "generated.yaml")
	if err != nil {
		t.Fatalf("generated model: %v\n%s", err, b.String())
	}
	return m
}

// resultsWithoutSolving gives a model's results as far as they need no
// solver: the calls and own loads, with an empty prediction.
func resultsWithoutSolving(m *model.Model) *Results {
	r := &Results{Model: m.Name, Predicted: solve.NewResult(m, "mva")}
	r.Calls, r.Operations = traffic(m, nil)
	return r
}

func TestLayoutNoOverlaps(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		m := generatedModel(t, 30, seed)
		d := buildDiagram(m, resultsWithoutSolving(m))
		if len(d.nodes) != 33 {
			t.Fatalf("seed %d: %d nodes, want 30 components and 3 workloads", seed, len(d.nodes))
		}
		for i, a := range d.hosts {
			for _, b := range d.hosts[i+1:] {
				if a.overlaps(b.box) {
					t.Errorf("seed %d: hosts %s %+v and %s %+v overlap", seed, a.name, a.box, b.name, b.box)
				}
			}
			for _, n := range a.nodes {
				if !a.contains(n.box) {
					t.Errorf("seed %d: component %s %+v lies outside its host %s %+v", seed, n.name, n.box, a.name, a.box)
				}
			}
		}
		for i, a := range d.nodes {
			if a.W <= 0 || a.H <= 0 {
				t.Errorf("seed %d: %s has no size", seed, a.name)
			}
			for _, b := range d.nodes[i+1:] {
				if a.overlaps(b.box) {
					t.Errorf("seed %d: boxes %s %+v and %s %+v overlap", seed, a.name, a.box, b.name, b.box)
				}
			}
			if a.workload {
				for _, h := range d.hosts {
					if a.overlaps(h.box) {
						t.Errorf("seed %d: workload %s overlaps host %s", seed, a.name, h.name)
					}
				}
			}
			if a.right() > d.width || a.bottom() > d.height || a.X < 0 || a.Y < 0 {
				t.Errorf("seed %d: %s %+v outside the picture %gx%g", seed, a.name, a.box, d.width, d.height)
			}
		}
		// Labels never cover a box or each other when there is room.
		var labels []box
		for _, e := range d.edges {
			lb := labelBox(textout.Rate(e.rate), e.label)
			for _, n := range d.nodes {
				if lb.overlaps(n.box) {
					t.Errorf("seed %d: label of %s→%s covers %s", seed, e.from.name, e.to.name, n.name)
				}
			}
			labels = append(labels, lb)
		}
		overlapping := 0
		for i, a := range labels {
			for _, b := range labels[i+1:] {
				if a.overlaps(b) {
					overlapping++
				}
			}
		}
		if overlapping > len(labels)/10 {
			t.Errorf("seed %d: %d of %d labels overlap another", seed, overlapping, len(labels))
		}
	}
}

func TestLayoutColumnsFollowCalls(t *testing.T) {
	m := generatedModel(t, 30, 3)
	depth := operationDepths(m)
	for _, c := range m.Components {
		for _, op := range c.Operations {
			own := &ownLoad{calls: map[string]float64{}, sends: map[string]float64{}}
			walkOwn(op.Steps, nil, nil, 1, own, 0)
			for target := range own.calls {
				if depth[target] <= depth[op.ID()] {
					t.Errorf("%s (depth %d) calls %s (depth %d)", op.ID(), depth[op.ID()], target, depth[target])
				}
			}
		}
	}
	// Workloads stand left of every host.
	d := buildDiagram(m, resultsWithoutSolving(m))
	for _, n := range d.nodes {
		if !n.workload {
			continue
		}
		for _, h := range d.hosts {
			if n.right() > h.X {
				t.Errorf("workload %s (right edge %g) is not left of host %s (%g)", n.name, n.right(), h.name, h.X)
			}
		}
	}
}

func TestLayoutDeterministic(t *testing.T) {
	m := generatedModel(t, 30, 4)
	first := buildDiagram(m, resultsWithoutSolving(m)).svg()
	for range 3 {
		if again := buildDiagram(m, resultsWithoutSolving(m)).svg(); again != first {
			t.Fatal("the same model gave two different pictures")
		}
	}
}

func TestTrafficShop(t *testing.T) {
	m, err := model.Load("../examples/models/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// With 40 requests per second of shoppers: each request browses once
	// and checks out with probability 0.1; a browse gets 0.5·1 + 0.3·4 +
	// 0.2·8 = 3.3 items, 20 % of them from the database; a checkout
	// reserves (a query and an update) and sends a notification.
	const x = 40.0
	res := solve.NewResult(m, "mva")
	res.Workloads["shoppers"] = &solve.WorkloadResult{Throughput: x}
	calls, loads := traffic(m, res)
	want := map[string]float64{
		"shoppers→frontend":     x * 1.1,
		"frontend→catalog":      x*3.3 + x*0.1,
		"frontend→catalog send": x * 0.1,
		"catalog→db":            x*3.3*0.2 + x*0.1*2,
	}
	got := map[string]float64{}
	for _, c := range calls {
		from := c.From
		if from == "" {
			from = c.Workload
		}
		key := from + "→" + c.To
		if c.Async {
			key += " send"
		}
		got[key] = c.Rate
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || !near(g, v, 1e-9) {
			t.Errorf("%s: %g calls/s, want %g", k, g, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("edges %v, want %v", got, want)
	}
	// Own demands per call: db/query has 3 ms of CPU at speed 1.5.
	if l := loads["db/query"]; !near(l.CPU, 0.003/1.5, 1e-9) || l.Delay != 0 {
		t.Errorf("db/query: %+v, want 2 ms of CPU and no delay", l)
	}
	// POST /checkout waits 40 ms in a parallel branch beside its call.
	if l := loads["frontend/POST /checkout"]; !near(l.Delay, 0.040, 1e-9) || !near(l.CPU, 0.003, 1e-9) {
		t.Errorf("frontend/POST /checkout: %+v, want 3 ms CPU and 40 ms delay", l)
	}
}

func near(a, b, rel float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= rel*max(abs(a), abs(b), 1e-300)
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// A host whose speed curve applies shows the factor of the prediction.
func TestDiagramSpeedFactor(t *testing.T) {
	m := generatedModel(t, 3, 1)
	r := resultsWithoutSolving(m)
	h := m.Hosts[0].Name
	r.Predicted.SpeedFactors = map[string]float64{h: 1.07}
	for _, dh := range buildDiagram(m, r).hosts {
		if dh.name == h {
			if !strings.Contains(strings.Join(dh.lines, "\n"), "curve ×1.07") {
				t.Errorf("host %s lines %q lack the speed factor", h, dh.lines)
			}
			return
		}
	}
	t.Fatalf("no host %s in the diagram", h)
}

// TestResourceWordsPartitioned: a partitioned pool is told as a queue
// per unit, one that is not as one pool.
func TestResourceWordsPartitioned(t *testing.T) {
	m, err := model.Parse([]byte(`perfcast: 1
hosts: {h: {}}
components:
  c: {host: h, operations: {op: {steps: [{hold: {resource: loops, steps: [{cpu: 1ms}]}}, {hold: {resource: pool, steps: [{cpu: 1ms}]}}]}}}
passive: {loops: {capacity: 3, partitioned: true}, pool: {capacity: 3}}
workload:
  w: {open: {rate: 10}, steps: [{call: c/op}]}
`), "words.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := resourceWords(m, "loops"); got != "the pool loops (capacity 3, a queue per unit)" {
		t.Errorf("loops: %q", got)
	}
	if got := resourceWords(m, "pool"); got != "the pool pool (capacity 3)" {
		t.Errorf("pool: %q", got)
	}
}
