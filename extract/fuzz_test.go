package extract

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/trace"
)

// FuzzExtract runs extraction on arbitrary trace files: it must not crash,
// its errors are one line, and a model it returns is valid.
func FuzzExtract(f *testing.F) {
	for _, p := range []string{"../ingest/testdata/otlp_lines.jsonl", "../ingest/testdata/zipkin.json", "../ingest/testdata/jaeger_ui.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "traces")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), []string{path}, "fuzz", &Config{CPUSlots: map[string]int{"*": 1}})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if err := res.Model.Validate(); err != nil {
			t.Fatalf("invalid model: %v\n%s", err, res.Model.Marshal())
		}
	})
}

// FuzzLoadState loads arbitrary saved states: it must not crash, its
// errors are one line, and a state it accepts folds more traces, makes a
// valid model and saves again.
func FuzzLoadState(f *testing.F) {
	// A database seen only by its clients' spans, on a machine of its own.
	withDB := generate(37, 40, true)
	for _, s := range withDB {
		if s.DBSystem != "" {
			s.ServerAddress = "db-1:5432"
		}
	}
	for _, st := range []*State{
		foldWith(f, withDB, nil),
		foldWith(f, generate(31, 40, true), nil),
		foldWith(f, paramTraces(40, 32), &Config{Params: []string{"http.request.body.size"}}),
		foldWith(f, sessionTraces(3, 60, 33), &Config{Session: "session.id"}),
		foldWith(f, generate(35, 40, true), &Config{Sampling: 0.5}),
		foldWith(f, generate(36, 40, true), &Config{Machines: map[string][]string{"box": {"*"}}}),
		foldWith(f, asWorkers(generate(38, 40, true), "catalog"), nil),
		foldWith(f, onRuntime(generate(39, 40, false), "catalog", "nodejs", 2), nil),
		foldWith(f, inTransactions(generate(40, 40, true)), nil),
	} {
		f.Add(saved(f, st))
	}
	more := generate(34, 20, true)
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := LoadState(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		a := trace.New(trace.Options{}, func(tr *trace.Tree) error {
			st.Fold(tr, nil)
			return nil
		})
		for _, s := range more {
			c := *s
			if err := a.Add(&c); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := st.Save(&b); err != nil {
			t.Fatal(err)
		}
		m, _ := st.Model("fuzz", nil)
		if err := m.Validate(); err != nil {
			t.Fatalf("invalid model: %v\n%s", err, m.Marshal())
		}
	})
}

// FuzzLoadConfig loads arbitrary configuration files: it must not crash,
// its errors are one line, and a configuration it accepts makes a valid
// model.
func FuzzLoadConfig(f *testing.F) {
	for _, seed := range []string{
		"",
		"hosts: {web: {cores: 2, scheduling: rr, quantum: 1.5ms}}\n",
		"hosts: {web: {scheduling: rr}}\n",
		"outside: inline\n",
		"cpu_slots: {\"*\": 1}\npassive:\n  pool: {capacity: 2, calls: [back/get]}\noutside_spans: inline\n",
		"hosts: [1, 2]\nrename: 3\n",
		"hosts: {box: {cores: 4}}\nmachines: {box: [\"*\"], other: [web-?, \"\"]}\n",
		"components:\n  - {component: admin, span: \"* /admin/*\"}\n  - {component: x-y, service: \"fr?nt\", attributes: {k: \"*\"}}\nsession: s\nparams: [k]\n",
	} {
		f.Add([]byte(seed))
	}
	traces := generate(35, 30, true)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		m, _ := foldWith(t, traces, cfg).Model("fuzz", cfg)
		if err := m.Validate(); err != nil {
			t.Fatalf("invalid model from %q: %v", data, err)
		}
	})
}
