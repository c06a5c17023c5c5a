package extract

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/model"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, text, err string
		outside         string
	}{
		{"empty", "", "", ""},
		{"inline", "outside_spans: inline\n", "", OutsideInline},
		{"background", "outside_spans: background\nno_speed_curves: true\n", "", OutsideBackground},
		{"unknown value", "outside_spans: later\n", `bad.yaml: outside_spans: "later" is neither inline nor background`, ""},
		{"unknown key", "outside: inline\n", `bad.yaml:1: unknown key "outside"`, ""},
		{"not a number", "no_speed_curves: true\nhosts:\n  web: {cores: two}\n", `bad.yaml:3: want a whole number, not "two"`, ""},
		{"list for a map", "hosts: [web]\nparams: 3\n", `bad.yaml:2: want a list, not "3"`, ""},
		{"hosts as a list", "hosts: [web]\n", "bad.yaml:1: want a map of names to settings, not a list", ""},
		{"syntax", "hosts: {web: {cores: 2}\n", "bad.yaml:1: YAML syntax: ", ""},
		{"round-robin", "hosts: {web: {cores: 2, scheduling: rr, quantum: 1.5ms}}\n", "", ""},
		{"fcfs", "hosts: {web: {scheduling: fcfs}}\n", "", ""},
		{"rr without quantum", "hosts: {web: {scheduling: rr}}\n", "bad.yaml: hosts: web: scheduling rr needs a quantum", ""},
		{"quantum without rr", "hosts: {web: {quantum: 2ms}}\n", "hosts: web: quantum 2ms: only scheduling rr has one", ""},
		{"bad quantum", "hosts: {web: {scheduling: rr, quantum: soon}}\n", `hosts: web: quantum: "soon" is not a positive duration`, ""},
		{"unknown scheduling", "hosts: {web: {scheduling: lottery}}\n", `hosts: web: scheduling: "lottery" is none of ps, rr, fcfs`, ""},
		{"machines", "hosts: {box: {cores: 4}}\nmachines: {box: [\"*\"], db: [\"db-?\"]}\n", "", ""},
		{"machine without patterns", "machines: {box: []}\n", `bad.yaml: machines: box: give the patterns of its hosts`, ""},
		{"machine with an empty pattern", "machines: {box: [web-*, \"\"]}\n", `bad.yaml: machines: box: give the patterns`, ""},
		{"pool per replica", "passive: {dbpool: {capacity: 10, calls: [db/query], per_replica: true}}\n", "", ""},
		{"per_replica not a bool", "passive: {dbpool: {capacity: 10, per_replica: each}}\n", `bad.yaml:1: `, ""},
		{"slot queues", "slot_queues: {api: each, \"*\": one}\n", "", ""},
		{"unknown slot queues", "slot_queues: {api: several}\n", `bad.yaml: slot_queues: api: "several" is neither one nor each`, ""},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
		if c.err != "" {
			path = filepath.Join(dir, "bad.yaml")
		}
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		case c.err == "" && cfg.OutsideSpans != c.outside:
			t.Errorf("%s: outside_spans %q, want %q", c.name, cfg.OutsideSpans, c.outside)
		}
	}
	c := &Config{Machines: map[string][]string{"b-box": {"db-?"}, "a-box": {"*"}, "web-1": {"x"}}}
	for host, want := range map[string]string{"db-1": "a-box", "web-1": "web-1", "b-box": "b-box"} {
		if got := c.machineOf(host); got != want {
			t.Errorf("machineOf(%s) = %s, want %s (the first machine by name that matches, a machine itself)", host, got, want)
		}
	}
	if got := (*Config)(nil).machineOf("web"); got != "web" {
		t.Errorf("no configuration: machineOf(web) = %s", got)
	}
	if !(*Config)(nil).background() || (&Config{OutsideSpans: OutsideInline}).background() {
		t.Error("the CPU outside spans should be background by default and inline when asked")
	}
}

// A host's scheduling and quantum in the configuration reach the model's
// CPU; a host the configuration leaves alone keeps processor sharing, and
// extraction refuses a configuration the loader would.
func TestHostScheduling(t *testing.T) {
	spans := generate(1, 200, true)
	cfg := &Config{Hosts: map[string]HostConfig{"web": {Cores: 2, Scheduling: "rr", Quantum: "1.5ms"}}}
	m, _ := foldWith(t, spans, cfg).Model("shop", cfg)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, h := range m.Hosts {
		want, q := model.PS, 0.0
		if h.Name == "web" {
			want, q = model.RR, 1.5e-3
		}
		if h.CPU.Scheduling != want || math.Abs(h.CPU.Quantum-q) > 1e-12 {
			t.Errorf("host %s: %s, quantum %g s; want %s, %g s", h.Name, h.CPU.Scheduling, h.CPU.Quantum, want, q)
		}
	}
	if m.Host("web") == nil {
		t.Fatalf("no host web:\n%s", m.Marshal())
	}
	bad := &Config{Hosts: map[string]HostConfig{"web": {Scheduling: "rr"}}}
	if _, _, err := Generate(context.Background(), foldWith(t, spans, bad), "shop", bad); err == nil || !strings.Contains(err.Error(), "needs a quantum") {
		t.Errorf("round-robin without a quantum: %v", err)
	}
}

// A configuration that names a host or a component the traces do not have
// (a typo, most often) is warned about, with the names there are.
func TestConfigNamesNothing(t *testing.T) {
	spans := generate(1, 200, true)
	cfg := &Config{Hosts: map[string]HostConfig{"wbe": {Cores: 2}}, CPUSlots: map[string]int{"catalgo": 1, "*": 1}, SlotQueues: map[string]string{"catalgo": SlotQueuesEach},
		Rename: map[string]string{"frontend": "web", "catalog": "items"}, Params: []string{"size"}, Session: "user.id"}
	_, rep := foldWith(t, spans, cfg).Model("shop", cfg)
	var found []string
	for _, w := range rep.Warnings {
		if strings.HasPrefix(w, "configuration: ") {
			found = append(found, w)
		}
	}
	for i, want := range [][]string{
		{"hosts: wbe: no host of that name", "web"},
		{"cpu_slots: catalgo: no component of that name", "items"},
		{"slot_queues: catalgo: no component of that name", "items"},
		{"rename: frontend: no service of that name", "items, "},
		{"params: size: no request carries that attribute"},
		{"session: no request carries the attribute user.id", "every workload is open"},
	} {
		if i >= len(found) {
			t.Errorf("no warning %q in %q", want[0], found)
			continue
		}
		for _, w := range want {
			if !strings.Contains(found[i], w) {
				t.Errorf("warning %q lacks %q", found[i], w)
			}
		}
	}
	if len(found) != 6 {
		t.Errorf("%d warnings, want 6: %q", len(found), found)
	}
}
