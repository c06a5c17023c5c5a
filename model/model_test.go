package model

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// exampleFiles returns the example models of the repository and, when
// present beside it, those of the shared specification.
func exampleFiles(t testing.TB) []string {
	var files []string
	for _, dir := range []string{"../examples/models", "../../shared/examples"} {
		f, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		files = append(files, f...)
	}
	if len(files) == 0 {
		t.Fatal("no example models found")
	}
	return files
}

// clearPos zeroes every Pos and File so that models decoded from different
// texts compare equal when they say the same.
func clearPos(m *Model) {
	m.File = ""
	var steps func([]Step)
	steps = func(list []Step) {
		for i := range list {
			s := &list[i]
			s.Pos = Pos{}
			steps(s.Steps)
			for j := range s.Branches {
				s.Branches[j].Pos = Pos{}
				steps(s.Branches[j].Steps)
			}
			for _, l := range s.Parallel {
				steps(l)
			}
			for j := range s.Cases {
				s.Cases[j].Pos = Pos{}
				steps(s.Cases[j].Steps)
			}
			steps(s.Default)
		}
	}
	for _, h := range m.Hosts {
		h.Pos = Pos{}
		for _, d := range h.Disks {
			d.Pos = Pos{}
		}
	}
	for _, c := range m.Components {
		c.Pos = Pos{}
		for _, o := range c.Operations {
			o.Pos = Pos{}
			steps(o.Steps)
		}
	}
	for _, p := range m.Passive {
		p.Pos = Pos{}
	}
	for _, w := range m.Workloads {
		w.Pos = Pos{}
		for _, p := range w.Params {
			p.Pos = Pos{}
		}
		steps(w.Steps)
	}
}

func encode(t testing.TB, m *Model, f Format) []byte {
	var buf bytes.Buffer
	if err := m.Encode(&buf, f); err != nil {
		t.Fatalf("encode %s: %v", f, err)
	}
	return buf.Bytes()
}

func TestExamplesRoundTrip(t *testing.T) {
	for _, file := range exampleFiles(t) {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(file)))+"/"+filepath.Base(file), func(t *testing.T) {
			m, err := Load(file)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			for _, f := range []Format{YAML, JSON} {
				out := encode(t, m, f)
				m2, err := Parse(out, "roundtrip."+string(f))
				if err != nil {
					t.Fatalf("%s does not load back: %v\n%s", f, err, out)
				}
				if again := encode(t, m2, f); !bytes.Equal(out, again) {
					t.Errorf("%s encoding is not stable:\n%s\n---\n%s", f, out, again)
				}
				a, b := m, m2
				clearPos(a)
				clearPos(b)
				if !reflect.DeepEqual(a, b) {
					t.Errorf("%s round trip changed the model", f)
				}
			}
		})
	}
}

func TestDemandsShop(t *testing.T) {
	m, err := Load("../examples/models/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := m.Demands(m.Workload("shoppers"))
	// GET /browse once; GetItem E[loop] = 0.5*1 + 0.3*4 + 0.2*8 = 3.3 times;
	// checkout with p 0.1; Reserve and Notify once per checkout; query on
	// 20 % of GetItems and on every Reserve.
	want := map[string]float64{
		"frontend/GET /browse":    1,
		"frontend/POST /checkout": 0.1,
		"catalog/GetItem":         3.3,
		"catalog/Reserve":         0.1,
		"catalog/Notify":          0.1,
		"db/query":                3.3*0.2 + 0.1,
		"db/update":               0.1,
	}
	for op, v := range want {
		if got := d.Visits[op]; !close(got, v) {
			t.Errorf("visits %s = %g, want %g", op, got, v)
		}
	}
	// backend CPU: GetItem 1.2ms*3.3 + Reserve 2ms*0.1 + Notify 0.5ms*0.1.
	if got, want := d.Service["backend.cpu"], 1.2e-3*3.3+2e-3*0.1+0.5e-3*0.1; !close(got, want) {
		t.Errorf("backend.cpu demand = %g, want %g", got, want)
	}
	// db CPU is divided by speed 1.5.
	if got, want := d.Service["db.cpu"], (3e-3*0.76+4e-3*0.1)/1.5; !close(got, want) {
		t.Errorf("db.cpu demand = %g, want %g", got, want)
	}
	if got, want := d.Delay, 0.1*0.04; !close(got, want) {
		t.Errorf("delay = %g, want %g", got, want)
	}
	if got, want := d.Holds["dbconn"], 3.3*0.2+0.1; !close(got, want) {
		t.Errorf("dbconn holds = %g, want %g", got, want)
	}
}

func close(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-12*(1+abs(b))
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestDemandsSwitch(t *testing.T) {
	src := `perfcast: 1
hosts: {h: {}}
components:
  c:
    host: h
    operations:
      op:
        steps:
          - switch:
              on: size
              cases:
                small: [{cpu: 1ms}]
                large:
                  - cpu: 10ms
                  - switch: {on: size, cases: {large: [{cpu: 100ms}]}}
          - switch: {on: class, cases: {a: [{cpu: 1s}]}, default: [{cpu: 2s}]}
workload:
  a:
    open: {rate: 1}
    params: {size: {pmf: {small: 0.75, large: 0.25}}}
    steps: [{call: c/op}]
  b:
    open: {rate: 1}
    steps: [{call: c/op}]
`
	m, err := Parse([]byte(src), "switch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// a: 0.75*1ms + 0.25*(10ms + 100ms) + 1s; the inner switch knows the
	// value is large.
	if got, want := m.Demands(m.Workload("a")).Service["h.cpu"], 0.75e-3+0.25*0.110+1; !close(got, want) {
		t.Errorf("a: %g, want %g", got, want)
	}
	// b declares no size: defaults (none) and class default 2s.
	if got, want := m.Demands(m.Workload("b")).Service["h.cpu"], 2.0; !close(got, want) {
		t.Errorf("b: %g, want %g", got, want)
	}
}

// base is a valid model that the invalid cases below change in one place.
const base = `perfcast: 1
hosts:
  app:
    cpu: {cores: 2}
    disks: {d1: {}}
components:
  front:
    host: app
    operations:
      get:
        steps:
          - cpu: exp(1ms)
          - call: back/read
  back:
    host: app
    operations:
      read:
        steps:
          - disk: 2ms
passive:
  lock: {capacity: 1}
workload:
  users:
    open: {rate: 10/s}
    steps:
      - call: front/get
`

func TestBaseIsValid(t *testing.T) {
	if _, err := Parse([]byte(base), "base.yaml"); err != nil {
		t.Fatal(err)
	}
}

func TestInvalid(t *testing.T) {
	cases := []struct {
		name        string
		old, new    string // replace old by new in base
		line        int    // expected line, 0 = don't check
		path, inMsg string
	}{
		{"version missing", "perfcast: 1\n", "", 1, "", "missing `perfcast: 1`"},
		{"version unknown", "perfcast: 1", "perfcast: 2", 1, "perfcast", "unsupported model version"},
		{"unknown top key", "passive:", "pasive:", 20, "pasive", `unknown key "pasive"`},
		{"unknown host key", "cpu: {cores: 2}", "cpu: {cores: 2, cors: 3}", 4, "hosts.app.cpu.cors", "unknown key"},
		{"unknown step", "- disk: 2ms", "- dsk: 2ms", 19, "components.back.operations.read.steps[0].dsk", "unknown step"},
		{"two step kinds", "- disk: 2ms", "- {disk: 2ms, cpu: 1ms}", 19, "components.back.operations.read.steps[0]", "one kind"},
		{"dangling call", "call: back/read", "call: back/write", 13, "components.front.operations.get.steps[1]", "no such operation"},
		{"dangling component", "call: back/read", "call: bak/read", 13, "components.front.operations.get.steps[1]", `no component "bak"`},
		{"bad reference", "call: back/read", "call: backread", 13, "components.front.operations.get.steps[1]", "not `component/operation`"},
		{"dangling host", "host: app\n    operations:\n      read", "host: ap\n    operations:\n      read", 14, "components.back", `host "ap" does not exist`},
		{"no host", "    host: app\n    operations:\n      read", "    operations:\n      read", 14, "components.back", "no host"},
		{"dangling passive", "- disk: 2ms", "- hold: {resource: lok, steps: []}", 19, "components.back.operations.read.steps[0]", `"lok" does not exist`},
		{"unknown disk", "- disk: 2ms", "- disk: {name: d2, demand: 2ms}", 19, "components.back.operations.read.steps[0]", `no disk "d2"`},
		{"negative duration", "exp(1ms)", "exp(-1ms)", 12, "components.front.operations.get.steps[0].cpu", ""},
		{"unparseable duration", "- disk: 2ms", "- disk: 2 parsecs", 19, "components.back.operations.read.steps[0].disk", ""},
		{"bad rate", "rate: 10/s", "rate: 10/fortnight", 24, "workload.users.open.rate", ""},
		{"probabilities", "- disk: 2ms", "- branch: [{p: 0.5, steps: []}, {p: 0.4, steps: []}]", 19, "components.back.operations.read.steps[0].branch", "sum to 0.9"},
		{"pmf sum", "- disk: 2ms", "- loop: {times: {pmf: {\"1\": 0.5, \"2\": 0.6}}, steps: []}", 19, "components.back.operations.read.steps[0].loop.times.pmf", ""},
		{"call cycle", "- disk: 2ms", "- call: front/get", 19, "components.back.operations.read.steps[0]", "cycle: front/get → back/read → front/get"},
		{"self send", "- disk: 2ms", "- send: back/read", 19, "components.back.operations.read.steps[0]", "cycle"},
		{"acquire without release", "- disk: 2ms", "- acquire: lock", 17, "components.back.operations.read", `acquires "lock" without releasing`},
		{"release on one path only", "- disk: 2ms", "- acquire: lock\n          - branch: [{p: 0.5, steps: [{release: lock}]}, {p: 0.5, steps: []}]", 20, "components.back.operations.read.steps[1]", "not released on some path"},
		{"release without acquire", "- disk: 2ms", "- release: lock", 19, "components.back.operations.read.steps[0]", "does not hold"},
		{"units over capacity", "- disk: 2ms", "- hold: {resource: lock, units: 2, steps: []}", 19, "components.back.operations.read.steps[0]", "units must lie"},
		{"yaml syntax", "    cpu: {cores: 2}", "    cpu: {cores: 2", 0, "", "YAML syntax"},
		{"tab indentation", "  app:\n", "\tapp:\n", 0, "", "YAML syntax"},
		{"too many users", "open: {rate: 10/s}", "closed: {users: 1000001, think: 1s}", 23, "workload.users", "at most 1000000"},
		{"workload neither", "open: {rate: 10/s}", "steps2: []", 24, "workload.users.steps2", "unknown key"},
		{"cpu in workload", "    steps:\n      - call: front/get\n", "    steps:\n      - cpu: 1ms\n", 26, "workload.users.steps[0]", "workload steps run on none"},
		{"switch on unknown param", "- disk: 2ms", "- switch: {on: size, cases: {a: []}}", 19, "components.back.operations.read.steps[0]", "no workload declares"},
		{"switch on unknown class", "- disk: 2ms", "- switch: {on: class, cases: {buyers: []}}", 19, "components.back.operations.read.steps[0].switch.cases.buyers", `no workload "buyers"`},
		{"duplicate key", "  back:\n", "  front:\n", 14, "components.front", "duplicate key"},
		{"zero cores", "cores: 2", "cores: 0", 4, "hosts.app.cpu.cores", "at least 1"},
		{"too many replicas", "cpu: {cores: 2}", "cpu: {cores: 2}\n    replicas: 10001", 3, "hosts.app", "at most 10000"},
		{"speed curve order", "cpu: {cores: 2}", "cpu: {cores: 2, speed_curve: [{utilization: 0.5, factor: 1}, {utilization: 0.2, factor: 1.1}]}", 3, "hosts.app", "increasing utilization"},
		{"speed curve factor", "cpu: {cores: 2}", "cpu: {cores: 2, speed_curve: [{utilization: 0.5, factor: 0}]}", 3, "hosts.app", "factor must be positive"},
		{"speed curve utilization", "cpu: {cores: 2}", "cpu: {cores: 2, speed_curve: [{utilization: 1.5, factor: 1}]}", 3, "hosts.app", "[0, 1]"},
		{"speed curve key", "cpu: {cores: 2}", "cpu: {cores: 2, speed_curve: [{util: 0.5, factor: 1}]}", 4, "hosts.app.cpu.speed_curve[0].util", "unknown key"},
		{"speed variation negative", "cpu: {cores: 2}", "cpu: {cores: 2, speed_variation: -0.1}", 3, "hosts.app", "speed_variation must lie in [0, 1]"},
		{"speed variation too large", "cpu: {cores: 2}", "cpu: {cores: 2, speed_variation: 1.5}", 3, "hosts.app", "speed_variation must lie in [0, 1]"},
		{"speed window too short", "cpu: {cores: 2}", "cpu: {cores: 2, speed_variation: 0.1, speed_window: 10us}", 3, "hosts.app", "speed_window must be 0 or at least 1ms"},
		{"limit too small", "cpu: {cores: 2}", "cpu: {cores: 2, limit: 0.0001}", 3, "hosts.app", "cpu.limit must be 0 (none) or at least 0.001 cores"},
		{"limit unreadable", "cpu: {cores: 2}", "cpu: {cores: 2, limit: half}", 4, "hosts.app.cpu.limit", "millicores (500m)"},
		{"limit negative", "cpu: {cores: 2}", "cpu: {cores: 2, limit: -1}", 4, "hosts.app.cpu.limit", "millicores"},
		{"period too long", "cpu: {cores: 2}", "cpu: {cores: 2, limit: 1, period: 2s}", 3, "hosts.app", "cpu.period must lie in [1ms, 1s]"},
		{"rr without quantum", "cpu: {cores: 2}", "cpu: {cores: 2, scheduling: rr}", 3, "hosts.app", "quantum"},
		{"hyperexp cv", "exp(1ms)", "hyperexp(1ms, cv=0.5)", 12, "components.front.operations.get.steps[0].cpu", ""},
		{"not a map", "hosts:\n  app:", "hosts: [app]\n  app_:", 0, "", ""},
		{"slash in component", "  back:\n", "  ba/ck:\n", 14, "components.ba/ck", "may not contain '/'"},
		{"before_span not a bool", "lock: {capacity: 1}", "lock: {capacity: 1, before_span: yes}", 21, "passive.lock.before_span", "want true or false"},
		{"partitioned not a bool", "lock: {capacity: 1}", "lock: {capacity: 1, partitioned: 1}", 21, "passive.lock.partitioned", "want true or false"},
		{"partitioned units", "          - disk: 2ms\npassive:\n  lock: {capacity: 1}", "          - hold: {resource: lock, units: 2, steps: [{disk: 2ms}]}\npassive:\n  lock: {capacity: 2, partitioned: true}", 19, "", "partitioned, must be 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := base
			if tc.old != "" {
				if !strings.Contains(src, tc.old) {
					t.Fatalf("test case does not apply: %q not in base", tc.old)
				}
				src = strings.Replace(src, tc.old, tc.new, 1)
			}
			_, err := Parse([]byte(src), "bad.yaml")
			if err == nil {
				t.Fatalf("accepted:\n%s", src)
			}
			es, ok := err.(Errors)
			if !ok || len(es) == 0 {
				t.Fatalf("error is %T, want Errors: %v", err, err)
			}
			for _, e := range es {
				if strings.Contains(e.Error(), "\n") {
					t.Errorf("error spans lines: %q", e.Error())
				}
				if !strings.HasPrefix(e.Error(), "bad.yaml:") {
					t.Errorf("error does not name the file: %q", e.Error())
				}
			}
			found := false
			for _, e := range es {
				if (tc.line == 0 || e.Pos.Line == tc.line) && (tc.path == "" || e.Pos.Path == tc.path) && strings.Contains(e.Msg, tc.inMsg) {
					found = true
				}
			}
			if !found {
				t.Errorf("want an error at line %d, path %q, containing %q; got:\n%v", tc.line, tc.path, tc.inMsg, err)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{File: "m.yaml", Pos: Pos{Line: 3, Col: 5, Path: "hosts.app"}, Msg: "bad"}
	if got, want := e.Error(), "m.yaml:3:5: hosts.app: bad"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	e = &Error{Msg: "bad"}
	if got := e.Error(); got != "bad" {
		t.Errorf("got %q", got)
	}
}

func TestJSONModelLoads(t *testing.T) {
	m, err := Parse([]byte(base), "base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	js := encode(t, m, JSON)
	m2, err := Parse(js, "base.json")
	if err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if !bytes.Equal(encode(t, m, YAML), encode(t, m2, YAML)) {
		t.Error("JSON round trip changed the model")
	}
}

// TestPassiveFlags: a passive resource's before_span and partitioned
// survive YAML and JSON, and a resource without them writes neither.
func TestPassiveFlags(t *testing.T) {
	for _, c := range []struct {
		key string
		get func(*Passive) bool
	}{
		{"before_span", func(p *Passive) bool { return p.BeforeSpan }},
		{"partitioned", func(p *Passive) bool { return p.Partitioned }},
	} {
		src := strings.Replace(base, "lock: {capacity: 1}", "lock: {capacity: 1, "+c.key+": true}", 1)
		m, err := Parse([]byte(src), "flags.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if !c.get(m.PassiveResource("lock")) {
			t.Fatalf("%s: true read as false", c.key)
		}
		for _, f := range []Format{YAML, JSON} {
			out := encode(t, m, f)
			m2, err := Parse(out, "again")
			if err != nil {
				t.Fatalf("%s: %v\n%s", f, err, out)
			}
			if !c.get(m2.PassiveResource("lock")) {
				t.Errorf("%s: %s lost:\n%s", f, c.key, out)
			}
		}
		plain, err := Parse([]byte(base), "base.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if out := encode(t, plain, YAML); bytes.Contains(out, []byte(c.key)) || c.get(plain.PassiveResource("lock")) {
			t.Errorf("a resource without %s came out with it:\n%s", c.key, out)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("want an error naming the file, got %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(empty); err == nil || !strings.Contains(err.Error(), "empty.yaml") {
		t.Fatalf("want an error naming the file, got %v", err)
	}
}

func FuzzLoad(f *testing.F) {
	for _, file := range exampleFiles(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(base))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, "fuzz.yaml")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				if _, ok := err.(Errors); !ok {
					t.Fatalf("multi-line error that is not a list: %q", err)
				}
			}
			return
		}
		out := encode(t, m, YAML)
		m2, err := Parse(out, "again.yaml")
		if err != nil {
			t.Fatalf("a valid model encodes to an invalid one: %v\n%s", err, out)
		}
		if again := encode(t, m2, YAML); !bytes.Equal(out, again) {
			t.Fatalf("encoding not stable:\n%s\n---\n%s", out, again)
		}
		for _, w := range m.Workloads {
			m.Demands(w)
		}
	})
}

// RewriteLists hands every non-empty list to f once, nested lists first,
// does not rewrite what f returns, and leaves its input alone.
func TestRewriteLists(t *testing.T) {
	cpu := Step{Kind: StepCPU, Demand: Exp(0.001)}
	build := func() []Step {
		return []Step{
			cpu,
			{Kind: StepLoop, Times: ConstCount(2), Steps: []Step{cpu}},
			{Kind: StepBranch, Branches: []Branch{{P: 0.5, Steps: []Step{cpu}}, {P: 0.5}}},
			{Kind: StepParallel, Parallel: [][]Step{{cpu}, {cpu}}},
			{Kind: StepSwitch, On: "class", Cases: []Case{{Value: "a", Steps: []Step{cpu}}}, Default: []Step{cpu}, HasDefault: true},
		}
	}
	steps := build()
	var order []int
	mark := Step{Kind: StepDelay, Demand: Det(0.001)}
	got := RewriteLists(steps, func(list []Step) []Step {
		order = append(order, len(list))
		// A list of lists: f's own result must not come back to it.
		return append(list, Step{Kind: StepLoop, Times: ConstCount(1), Steps: []Step{mark}})
	})
	// Six nested lists of one step, then the top list of five.
	if want := []int{1, 1, 1, 1, 1, 1, 5}; !reflect.DeepEqual(order, want) {
		t.Fatalf("f saw lists of lengths %v, want %v", order, want)
	}
	lists := 0
	Walk(got, func(s *Step) {
		if s.Kind == StepLoop && len(s.Steps) == 1 && s.Steps[0].Kind == StepDelay {
			lists++
		}
	})
	if lists != 7 {
		t.Fatalf("%d lists rewritten, want 7", lists)
	}
	if got[2].Branches[1].Steps != nil {
		t.Fatal("an empty list was rewritten")
	}
	if !reflect.DeepEqual(steps, build()) {
		t.Fatal("the input changed")
	}
}

// TestSpeedVariation: speed_variation and speed_window are read, kept
// through both formats, and left out of the encoding when zero.
func TestSpeedVariation(t *testing.T) {
	src := strings.Replace(base, "cpu: {cores: 2}", "cpu: {cores: 2, speed_variation: 0.12, speed_window: 250ms}", 1)
	m, err := Parse([]byte(src), "varied.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Host("app").CPU.SpeedVariation; got != 0.12 {
		t.Fatalf("speed variation %g, want 0.12", got)
	}
	for _, f := range []Format{YAML, JSON} {
		m2, err := Parse(encode(t, m, f), "again."+string(f))
		if err != nil {
			t.Fatal(err)
		}
		if got := m2.Host("app").CPU.SpeedVariation; got != 0.12 {
			t.Errorf("%s round trip: speed variation %g, want 0.12", f, got)
		}
		if got := m2.Host("app").CPU.SpeedWindow; got != 0.25 {
			t.Errorf("%s round trip: speed window %g, want 0.25", f, got)
		}
	}
	m.Host("app").CPU.SpeedVariation, m.Host("app").CPU.SpeedWindow = 0, 0
	if out := string(encode(t, m, YAML)); strings.Contains(out, "speed_variation") || strings.Contains(out, "speed_window") {
		t.Errorf("zero speed variation or window encoded:\n%s", out)
	}
}

// TestCPULimit: a CPU limit is read in cores or millicores with its
// period, kept through both formats, and binds only below the cores.
func TestCPULimit(t *testing.T) {
	src := strings.Replace(base, "cpu: {cores: 2}", "cpu: {cores: 2, limit: 1500m, period: 50ms}", 1)
	m, err := Parse([]byte(src), "limited.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := m.Host("app").CPU
	if c.Limit != 1.5 || c.Period != 0.05 || !c.Limited() || c.Capacity() != 1.5 || c.LimitPeriod() != 0.05 {
		t.Fatalf("limit %g, period %g, limited %v, capacity %g", c.Limit, c.Period, c.Limited(), c.Capacity())
	}
	for _, f := range []Format{YAML, JSON} {
		m2, err := Parse(encode(t, m, f), "again."+string(f))
		if err != nil {
			t.Fatal(err)
		}
		if got := m2.Host("app").CPU; got.Limit != 1.5 || got.Period != 0.05 {
			t.Errorf("%s round trip: limit %g, period %g, want 1.5 and 0.05", f, got.Limit, got.Period)
		}
	}
	for _, tc := range []struct {
		cpu      CPU
		limited  bool
		capacity float64
		period   float64
	}{
		{CPU{Cores: 2}, false, 2, DefaultPeriod},
		{CPU{Cores: 2, Limit: 2}, false, 2, DefaultPeriod},
		{CPU{Cores: 2, Limit: 3}, false, 2, DefaultPeriod},
		{CPU{Cores: 1, Limit: 0.25, Period: 0.2}, true, 0.25, 0.2},
	} {
		if tc.cpu.Limited() != tc.limited || tc.cpu.Capacity() != tc.capacity || tc.cpu.LimitPeriod() != tc.period {
			t.Errorf("%+v: limited %v, capacity %g, period %g; want %v, %g, %g", tc.cpu, tc.cpu.Limited(), tc.cpu.Capacity(), tc.cpu.LimitPeriod(), tc.limited, tc.capacity, tc.period)
		}
	}
	for in, want := range map[string]float64{"0.5": 0.5, " 250m ": 0.25, "2": 2, "0m": 0} {
		if got, err := ParseCores(in); err != nil || got != want {
			t.Errorf("ParseCores(%q) = %g, %v; want %g", in, got, err, want)
		}
	}
	for _, in := range []string{"", "m", "-1", "1e999", "NaN", "1.5 cores"} {
		if _, err := ParseCores(in); err == nil {
			t.Errorf("ParseCores(%q): no error", in)
		}
	}
}

func TestSpeedCurve(t *testing.T) {
	src := strings.Replace(base, "cpu: {cores: 2}", "cpu: {cores: 2, speed_curve: [{utilization: 0.2, factor: 0.9}, {utilization: 0.6, factor: 1.1}]}", 1)
	m, err := Parse([]byte(src), "curve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	curve := m.Host("app").CPU.SpeedCurve
	want := []SpeedPoint{{0.2, 0.9}, {0.6, 1.1}}
	if !slices.Equal(curve, want) {
		t.Fatalf("curve %v, want %v", curve, want)
	}
	for _, c := range []struct{ u, f float64 }{{0, 0.9}, {0.2, 0.9}, {0.4, 1.0}, {0.5, 1.05}, {0.6, 1.1}, {1, 1.1}} {
		if got := SpeedAt(curve, c.u); !close(got, c.f) {
			t.Errorf("SpeedAt(%g) = %g, want %g", c.u, got, c.f)
		}
	}
	if got := SpeedAt(nil, 0.7); got != 1 {
		t.Errorf("SpeedAt of no curve = %g, want 1", got)
	}
	for _, f := range []Format{YAML, JSON} {
		m2, err := Parse(encode(t, m, f), "again."+string(f))
		if err != nil {
			t.Fatal(err)
		}
		if got := m2.Host("app").CPU.SpeedCurve; !slices.Equal(got, want) {
			t.Errorf("%s round trip: curve %v, want %v", f, got, want)
		}
	}
}

// A model without a name is known by its file's name; one from standard
// input or from no file has none.
func TestDisplayName(t *testing.T) {
	for _, c := range []struct{ name, file, want string }{
		{"shop", "models/x.yaml", "shop"},
		{"", "models/overload.yaml", "overload"},
		{"", "plain", "plain"},
		{"", "-", ""},
		{"", "", ""},
	} {
		if got := (&Model{Name: c.name, File: c.file}).DisplayName(); got != c.want {
			t.Errorf("name %q, file %q: %q, want %q", c.name, c.file, got, c.want)
		}
	}
}
