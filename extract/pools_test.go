package extract_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
)

// externalPoolModel is a service on two replicas, each with a pool of two
// connections around its queries to a database that has no spans of its
// own (its clients' spans name it by peer.service): each replica's pool
// is about 50 % busy at the observed load.
const externalPoolModel = `perfcast: 1
name: external-pool
hosts:
  app: {replicas: 2, cpu: {cores: 2}}
  dbh: {cpu: {cores: 4}}
components:
  api:
    host: app
    operations:
      get:
        steps:
          - cpu: exp(1ms)
          - hold: {resource: dbpool, steps: [{call: db/query}]}
          - cpu: exp(0.5ms)
  db:
    host: dbh
    operations:
      query: {steps: [{delay: exp(3ms)}]}
passive:
  dbpool: {capacity: 2, host: app}
workload:
  gets:
    open: {rate: 700/s}
    steps: [{call: api/get}]
`

// TestPoolAroundExternalCalls extracts externalPoolModel with its pool
// declared around the calls to the database, a system seen only by its
// clients' spans (passive, calls `db/*`, callers api, per_replica): the
// model holds one of two on each replica of the service's host around
// those calls, its wait taken out of the service's own time, and predicts
// the requests at 0.8 to 1.4 times the load. Without the declaration the
// calls queue for nothing and the model is fast as the pool fills.
func TestPoolAroundExternalCalls(t *testing.T) {
	truth, _, tracesPath, _ := recordModel(t, externalPoolModel, "external-pool", tracegen.Options{Seed: 5}, 60000, func(s *sim.Span) bool {
		return s.Component != "db"
	})
	hosts := map[string]extract.HostConfig{"api": {Cores: 2}}
	pool := map[string]extract.PassiveConfig{"dbpool": {Capacity: 2, Calls: []string{"db/*"}, Callers: []string{"api"}, PerReplica: new(true)}}
	x := extractPool(t, tracesPath, &extract.Config{Hosts: hosts, Passive: pool}, "dbpool", "calls from api to db/query hold dbpool (capacity 2)")
	wl := x.Model.Workloads[0].Name
	check(t, loadComparisons(t, truth, "gets", x.Model, wl, 0.8, 1, 1.4))

	// Without it, the model is fast at 1.4 times the load by more than
	// the comparison's tolerance.
	bare, err := extractRun(context.Background(), []string{tracesPath}, "external-pool", &extract.Config{Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	c := loadComparisons(t, truth, "gets", bare.Model, wl, 1.4)[0]
	t.Logf("without the pool at 1.4 times the load: %+.1f %%", 100*c.relError)
	if c.ok() || c.relError > 0 {
		t.Errorf("without the pool: %+.1f %% at 1.4 times the load, want fast beyond the tolerance", 100*c.relError)
	}

	// A pattern that matches nothing is said.
	_, rep, err := extract.Generate(context.Background(), x.State, "external-pool", &extract.Config{Hosts: hosts,
		Passive: map[string]extract.PassiveConfig{"dbpool": {Capacity: 2, Calls: []string{"cache/*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if mentions(rep.Warnings, `passive dbpool: no operation "cache/*" in the traces, nor a call`) != 1 {
		t.Errorf("no warning for a pattern that matches nothing: %q", rep.Warnings)
	}
}

// extractPool extracts externalPoolModel's traces at path with cfg and
// checks that the model holds a pool name of two on each replica of host
// api around api/get's calls, with evidence that says so.
func extractPool(t *testing.T, path string, cfg *extract.Config, name, evidence string) *extract.Result {
	t.Helper()
	x, err := extractRun(context.Background(), []string{path}, "external-pool", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("extracted:\n%s", x.Model.Marshal())
	p := x.Model.PassiveResource(name)
	if p == nil || p.Capacity != 2 || p.Host != "api" {
		t.Fatalf("%s %+v, want 2 on each replica of host api", name, p)
	}
	if !holdsAround(x.Model.Component("api").Operation("get").Steps, name) {
		t.Errorf("api/get holds no %s", name)
	}
	if mentions(x.Report.Evidence, evidence) != 1 {
		t.Errorf("no evidence of the pool: %q", x.Report.Evidence)
	}
	return x
}

// holdsAround reports whether steps hold resource name somewhere.
func holdsAround(steps []model.Step, name string) bool {
	for _, s := range steps {
		if s.Kind == model.StepHold && s.Resource == name || holdsAround(s.Steps, name) {
			return true
		}
		for _, l := range s.Parallel {
			if holdsAround(l, name) {
				return true
			}
		}
		for _, b := range s.Branches {
			if holdsAround(b.Steps, name) {
				return true
			}
		}
		for _, c := range s.Cases {
			if holdsAround(c.Steps, name) {
				return true
			}
		}
	}
	return false
}

// TestPoolFromMetrics extracts externalPoolModel, its calls' spans saying
// the database is one (db.system), with metrics that state the service's
// connection pool (OTLP's db.client.connections.max, as OpenTelemetry's
// Java agent sends it for HikariCP): the model holds a pool of two on
// each replica around the calls and predicts the requests at 0.8 to 1.4
// times the load. Two pools for one service are warned about, not
// modeled; calls to a cache (db.system redis), or to no database, hold
// none of the metrics' pools (those to a cache have the pool the traces
// show, TestPoolInferred).
func TestPoolFromMetrics(t *testing.T) {
	truth, dir, tracesPath, _ := recordModel(t, externalPoolModel, "external-pool", tracegen.Options{Seed: 5}, 60000, func(s *sim.Span) bool {
		return s.Component != "db"
	})
	peer := []byte(`{"key":"peer.service","value":{"stringValue":"db"}}`)
	data := bytes.ReplaceAll(mustRead(t, tracesPath), peer, append(slices.Clone(peer), `,{"key":"db.system","value":{"stringValue":"postgresql"}}`...))
	dbPath := filepath.Join(dir, "db.jsonl")
	if err := os.WriteFile(dbPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	pools := func(points string) string {
		path := filepath.Join(dir, fmt.Sprintf("pools-%d.json", len(points)))
		doc := `{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},"scopeMetrics":[{"metrics":[{"name":"db.client.connections.max","unit":"{connection}","sum":{"aggregationTemporality":2,"dataPoints":[` + points + `]}}]}]}]}`
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	point := func(pool string, n int) string {
		return fmt.Sprintf(`{"asInt":"%d","timeUnixNano":"1700000000000000000","attributes":[{"key":"pool.name","value":{"stringValue":%q}}]}`, n, pool)
	}
	hosts := map[string]extract.HostConfig{"api": {Cores: 2}}
	x := extractPool(t, dbPath, &extract.Config{Hosts: hosts, Metrics: []string{pools(point("HikariPool-1", 2))}}, "api-db-pool",
		`component api: its metrics state connection pool "HikariPool-1" of 2: calls to db/query hold api-db-pool, 2 on each replica`)
	check(t, loadComparisons(t, truth, "gets", x.Model, x.Model.Workloads[0].Name, 0.8, 1, 1.4))

	// Declared in the configuration, the declaration holds the calls.
	declared, err := extractRun(context.Background(), []string{dbPath}, "external-pool", &extract.Config{Hosts: hosts, Metrics: []string{pools(point("HikariPool-1", 2))},
		Passive: map[string]extract.PassiveConfig{"conns": {Capacity: 3, Calls: []string{"db/query"}, PerReplica: new(true)}}})
	if err != nil {
		t.Fatal(err)
	}
	if declared.Model.PassiveResource("api-db-pool") != nil || declared.Model.PassiveResource("conns") == nil {
		t.Errorf("with a declared pool: passive %v", declared.Model.Passive)
	}
	// Two pools: a warning, no pool.
	two, err := extractRun(context.Background(), []string{dbPath}, "external-pool", &extract.Config{Hosts: hosts, Metrics: []string{pools(point("a", 2) + "," + point("b", 5))}})
	if err != nil {
		t.Fatal(err)
	}
	if mentions(two.Report.Evidence, `its metrics state connection pool "`) != 0 || mentions(two.Report.Warnings, `component api: its metrics state 2 connection pools ("a" of 2, "b" of 5)`) != 1 {
		t.Errorf("two pools: evidence %q, warnings %q", two.Report.Evidence, two.Report.Warnings)
	}
	// The traces show the pool all the same, half busy (TestPoolInferred).
	if p := two.Model.PassiveResource("api-db-pool"); p == nil || p.Capacity != 2 || mentions(two.Report.Evidence, "never more than 2 calls to database db at once on each replica") != 1 {
		t.Errorf("two pools: the traces' pool not found: %+v", p)
	}
	// A cache's calls hold no SQL client's pool.
	redisPath := filepath.Join(dir, "redis.jsonl")
	if err := os.WriteFile(redisPath, bytes.ReplaceAll(data, []byte(`"postgresql"`), []byte(`"redis"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	cache, err := extractRun(context.Background(), []string{redisPath}, "external-pool", &extract.Config{Hosts: hosts, Metrics: []string{pools(point("HikariPool-1", 2))}})
	if err != nil {
		t.Fatal(err)
	}
	if mentions(cache.Report.Evidence, `its metrics state connection pool "`) != 0 || mentions(cache.Report.Evidence, "no pool is modeled") != 1 {
		t.Errorf("calls to a cache: evidence %q", cache.Report.Evidence)
	}
	// Without db.system the calls are not a database's.
	plain, err := extractRun(context.Background(), []string{tracesPath}, "external-pool", &extract.Config{Hosts: hosts, Metrics: []string{pools(point("HikariPool-1", 2))}})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Model.PassiveResource("api-db-pool") != nil || mentions(plain.Report.Evidence, "no pool is modeled") != 1 {
		t.Errorf("calls to no database: passive %v", plain.Model.Passive)
	}
}

// TestPoolInferred extracts externalPoolModel, its calls' spans saying
// the database is one (db.system), at 1.4 times its load, where each
// replica's pool of two is about 70 % busy, with neither a declaration
// nor metrics: the calls never ran more than two at once on a replica
// while the service had more requests in service, so extraction holds a
// pool of two on each replica around them and predicts the requests at
// 0.8 to 1.1 times that load. Calls to a database with no bound (no
// pool in the truth) get none.
func TestPoolInferred(t *testing.T) {
	text := strings.Replace(externalPoolModel, "rate: 700/s", "rate: 980/s", 1)
	truth, _, dbPath := recordDatabase(t, text, "external-pool", 6, 80000)
	hosts := map[string]extract.HostConfig{"api": {Cores: 2}}
	x := extractPool(t, dbPath, &extract.Config{Hosts: hosts}, "api-db-pool", "component api: never more than 2 calls to database db at once on each replica")
	check(t, loadComparisons(t, truth, "gets", x.Model, x.Model.Workloads[0].Name, 0.8, 1, 1.1))

	// Without the pool in the truth, none.
	free := strings.Replace(strings.Replace(text, "hold: {resource: dbpool, steps: [{call: db/query}]}", "call: db/query", 1), "  dbpool: {capacity: 2, host: app}\n", "", 1)
	_, _, freePath := recordDatabase(t, free, "external-free", 6, 80000)
	y, err := extractRun(context.Background(), []string{freePath}, "external-free", &extract.Config{Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	if len(y.Model.Passive) != 0 {
		t.Errorf("no pool in the truth: passive %v", y.Model.Passive)
	}
}

// withDBSystem writes beside tracesPath, in dir, its traces with db.system
// sys on the client spans that name peer.service db, and returns the
// copy's path.
func withDBSystem(t *testing.T, dir, tracesPath, sys string) string {
	t.Helper()
	peer := []byte(`{"key":"peer.service","value":{"stringValue":"db"}}`)
	data := bytes.ReplaceAll(mustRead(t, tracesPath), peer, append(slices.Clone(peer), fmt.Sprintf(`,{"key":"db.system","value":{"stringValue":%q}}`, sys)...))
	path := filepath.Join(dir, "db-"+sys+".jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
