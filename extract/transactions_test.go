package extract_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
)

// txPoolModel is a service on two replicas, each with a pool of two
// connections to a database that has no spans of its own, held over a
// transaction: BEGIN, a select, the service's own CPU, a call to another
// service (a price, fetched while the connection is held), an update
// and COMMIT. Each replica's pool is about half busy at the observed
// load, most of its hold between the statements.
const txPoolModel = `perfcast: 1
name: tx-pool
hosts:
  app: {replicas: 2, cpu: {cores: 2}}
  dbh: {cpu: {cores: 4}}
  ph: {cpu: {cores: 4}}
components:
  api:
    host: app
    operations:
      order:
        steps:
          - cpu: exp(0.5ms)
          - hold:
              resource: dbpool
              steps:
                - call: db/BEGIN
                - call: db/select
                - cpu: exp(1ms)
                - call: pricing/quote
                - call: db/update
                - call: db/COMMIT
          - cpu: exp(0.5ms)
  pricing:
    host: ph
    operations:
      quote: {steps: [{cpu: exp(0.5ms)}, {delay: exp(1.5ms)}]}
  db:
    host: dbh
    operations:
      BEGIN: {steps: [{delay: exp(0.3ms)}]}
      select: {steps: [{delay: exp(2ms)}]}
      update: {steps: [{delay: exp(1.5ms)}]}
      COMMIT: {steps: [{delay: exp(0.5ms)}]}
passive:
  dbpool: {capacity: 2, host: app}
workload:
  orders:
    open: {rate: 300/s}
    steps: [{call: api/order}]
`

// TestPoolOverTransactions extracts txPoolModel with the pool declared
// around the calls to the database (passive, calls db/*, per replica):
// the spans' BEGIN and COMMIT say the calls run in one transaction, so
// the model holds a connection from BEGIN to COMMIT, the price's call
// and the CPU between the statements included, and predicts the orders
// at 0.8 to 1.4 times the load. Held per call instead (the same spans
// with their BEGIN and COMMIT renamed), the pool holds its connections
// for a fraction of the time and the model is fast at 1.4 times.
func TestPoolOverTransactions(t *testing.T) {
	truth, dir, dbPath := recordDatabase(t, txPoolModel, "tx-pool", 9, 60000)
	hosts := map[string]extract.HostConfig{"api": {Cores: 2}, "pricing": {Cores: 4}}
	pool := map[string]extract.PassiveConfig{"dbpool": {Capacity: 2, Calls: []string{"db/*"}, Callers: []string{"api"}, PerReplica: new(true)}}
	x, err := extractRun(context.Background(), []string{dbPath}, "tx-pool", &extract.Config{Hosts: hosts, Passive: pool})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("extracted:\n%s", x.Model.Marshal())
	steps := x.Model.Component("api").Operation("order").Steps
	if transactionHolds(steps, "dbpool") != 1 {
		t.Errorf("api/order does not hold dbpool over one transaction")
	}
	if mentions(x.Report.Evidence, "api/order: its calls to database db ran in transactions, 1 per execution") != 1 {
		t.Errorf("no evidence of the transactions: %q", x.Report.Evidence)
	}
	wl := x.Model.Workloads[0].Name
	check(t, loadComparisons(t, truth, "orders", x.Model, wl, 0.8, 1, 1.4))

	// Without BEGIN and COMMIT the calls hold the pool one by one, and
	// the model is fast at 1.4 times the load.
	plain := rewrite(t, dir, dbPath, "plain.jsonl", `"name":"BEGIN"`, `"name":"prepare"`, `"name":"COMMIT"`, `"name":"finish"`)
	y, err := extractRun(context.Background(), []string{plain}, "tx-pool", &extract.Config{Hosts: hosts, Passive: pool})
	if err != nil {
		t.Fatal(err)
	}
	if steps := y.Model.Component("api").Operation("order").Steps; transactionHolds(steps, "dbpool") != 0 || !holdsAround(steps, "dbpool") {
		t.Errorf("no transaction in the spans, but api/order holds dbpool over several calls, or not at all")
	}
	c := loadComparisons(t, truth, "orders", y.Model, wl, 1.4)[0]
	t.Logf("held per call at 1.4 times the load: %+.1f %%", 100*c.relError)
	if c.ok() || c.relError > 0 {
		t.Errorf("held per call: %+.1f %% at 1.4 times the load, want fast beyond the tolerance", 100*c.relError)
	}
}

// TestPoolOverTransactionsInferred extracts txPoolModel at 4/3 of its
// load, where each replica's pool of two is about 70 % busy, with
// neither a declaration nor metrics: the transactions, not the calls,
// never ran more than two at once on a replica, so extraction holds a
// pool of two on each replica over them and predicts the orders at 0.8
// to 1.1 times that load. Without a BEGIN (a Java client, whose
// setAutoCommit(false) has no span) the transaction is read from its
// first statement to COMMIT, here the same.
func TestPoolOverTransactionsInferred(t *testing.T) {
	text := strings.Replace(txPoolModel, "rate: 300/s", "rate: 400/s", 1)
	truth, dir, dbPath := recordDatabase(t, text, "tx-pool", 10, 80000)
	hosts := map[string]extract.HostConfig{"api": {Cores: 2}, "pricing": {Cores: 4}}
	for _, c := range []struct{ what, path, first string }{
		{"BEGIN", dbPath, "BEGIN"},
		{"no BEGIN", rewrite(t, dir, dbPath, "java.jsonl", `"name":"BEGIN"`, `"name":"SET autocommit"`), "SET autocommit"},
	} {
		t.Run(c.what, func(t *testing.T) {
			x, err := extractRun(context.Background(), []string{c.path}, "tx-pool", &extract.Config{Hosts: hosts})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("extracted:\n%s", x.Model.Marshal())
			p := x.Model.PassiveResource("api-db-pool")
			if p == nil || p.Capacity != 2 || p.Host != "api" || transactionHolds(x.Model.Component("api").Operation("order").Steps, "api-db-pool") != 1 {
				t.Fatalf("api-db-pool %+v, want 2 on each replica of host api, held over the transaction", p)
			}
			if mentions(x.Report.Evidence, "(from db/"+c.first+" to COMMIT") != 1 {
				t.Errorf("no evidence of transactions from %s: %q", c.first, x.Report.Evidence)
			}
			check(t, loadComparisons(t, truth, "orders", x.Model, x.Model.Workloads[0].Name, 0.8, 1, 1.1))
		})
	}
}

// TestPoolTimesChecked extracts txPoolModel's traces, its pool declared,
// with metrics that measured the pool's connections held 7.3 ms each
// (the truth's: its transaction's steps' means) and waited for 0.4 ms:
// with the spans' BEGIN and COMMIT the transactions last as long, and
// the evidence says so, with the model's wait beside the measured one.
// Connections measured held 25 ms, longer than the spans' calls and
// than the requests from their first query on, are warned about.
func TestPoolTimesChecked(t *testing.T) {
	_, dir, dbPath := recordDatabase(t, txPoolModel, "tx-pool", 11, 20000)
	hosts := map[string]extract.HostConfig{"api": {Cores: 2}, "pricing": {Cores: 4}}
	pool := map[string]extract.PassiveConfig{"dbpool": {Capacity: 2, Calls: []string{"db/*"}, Callers: []string{"api"}, PerReplica: new(true)}}
	cfg := &extract.Config{Hosts: hosts, Passive: pool, Metrics: []string{poolTimes(t, dir, "api", 20000, 7.3e-3, 0.4e-3)}}
	x, err := extractRun(context.Background(), []string{dbPath}, "tx-pool", cfg)
	if err != nil {
		t.Fatal(err)
	}
	const measured = `component api: its metrics measured pool "main": connections held 7.30 ms each (20000 uses), where its spans' calls to databases and their transactions last `
	if mentions(x.Report.Evidence, measured) != 1 || mentions(x.Report.Evidence, "a wait for a connection of 400 µs (20000 requests), where the model's dbpool waits ") != 1 ||
		mentions(x.Report.Warnings, "longer than the spans show") != 0 {
		t.Errorf("transactions: evidence %q, warnings %q", x.Report.Evidence, x.Report.Warnings)
	}
	cfg.Metrics = []string{poolTimes(t, dir, "api", 20000, 25e-3, 0.4e-3)}
	y, err := extractRun(context.Background(), []string{dbPath}, "tx-pool", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("held 25 ms: %q", y.Report.Warnings)
	if mentions(y.Report.Warnings, `component api: its metrics measured pool "main": connections held 25.0 ms each`) != 1 || mentions(y.Report.Warnings, "longer than the spans show") != 1 {
		t.Errorf("held 25 ms: warnings %q", y.Report.Warnings)
	}
}

// poolTimes writes into dir OTLP metrics of service svc's pool "main":
// uses connections held hold seconds each on average, and as many
// requests for one that waited wait seconds each; it returns the path.
func poolTimes(t *testing.T, dir, svc string, uses int, hold, wait float64) string {
	t.Helper()
	histogram := func(name string, mean float64) string {
		// A reading before the run's, and one after: what the run added.
		return fmt.Sprintf(`{"name":%q,"unit":"s","histogram":{"aggregationTemporality":2,"dataPoints":[`+
			`{"count":"1000","sum":%g,"startTimeUnixNano":"1","timeUnixNano":"2","attributes":[{"key":"db.client.connection.pool.name","value":{"stringValue":"main"}}]},`+
			`{"count":"%d","sum":%g,"startTimeUnixNano":"1","timeUnixNano":"3","attributes":[{"key":"db.client.connection.pool.name","value":{"stringValue":"main"}}]}]}}`,
			name, 1000*mean, uses+1000, float64(uses+1000)*mean)
	}
	path := filepath.Join(dir, fmt.Sprintf("pool-times-%g.json", hold))
	doc := `{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"` + svc + `"}}]},"scopeMetrics":[{"metrics":[` +
		histogram("db.client.connection.use_time", hold) + "," + histogram("db.client.connection.wait_time", wait) + `]}]}]}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// heldToEndModel keeps a connection from a request's first query to its
// end, as a session kept open for the request does: two queries, with
// CPU after each, inside the hold; no BEGIN or COMMIT in the spans.
const heldToEndModel = `perfcast: 1
name: to-end
hosts:
  app: {cpu: {cores: 2}}
  dbh: {cpu: {cores: 4}}
components:
  api:
    host: app
    operations:
      page:
        steps:
          - cpu: exp(0.5ms)
          - hold:
              resource: dbpool
              steps:
                - call: db/select
                - cpu: exp(1ms)
                - call: db/update
                - cpu: exp(1ms)
  db:
    host: dbh
    operations:
      select: {steps: [{delay: exp(2ms)}]}
      update: {steps: [{delay: exp(1.5ms)}]}
passive:
  dbpool: {capacity: 2, host: app}
workload:
  pages:
    open: {rate: 190/s}
    steps: [{call: api/page}]
`

// heldToEndVariants is heldToEndModel with a third of the pages served
// without a query (from a cache in the process), and the time after the
// last query off the CPU: the calls' variants branch before the hold.
const heldToEndVariants = `perfcast: 1
name: to-end
hosts:
  app: {cpu: {cores: 2}}
  dbh: {cpu: {cores: 4}}
components:
  api:
    host: app
    operations:
      page:
        steps:
          - cpu: exp(0.5ms)
          - branch:
              - p: 0.3
                steps: [{cpu: exp(0.3ms)}]
              - p: 0.7
                steps:
                  - hold:
                      resource: dbpool
                      steps:
                        - call: db/select
                        - cpu: exp(1ms)
                        - call: db/update
                        - delay: exp(1ms)
  db:
    host: dbh
    operations:
      select: {steps: [{delay: exp(2ms)}]}
      update: {steps: [{delay: exp(1.5ms)}]}
passive:
  dbpool: {capacity: 2, host: app}
workload:
  pages:
    open: {rate: 270/s}
    steps: [{call: api/page}]
`

// TestPoolHeldToEnd extracts heldToEndModel, its pool declared around the
// calls, with metrics that measured the connections held as long as the
// truth holds them (its pool's busy units over the rate of its first
// queries): longer
// than the calls, as long as the requests from their first query on, so
// the model holds the pool so and predicts the pages at 0.8 to 1.4 times
// the load, where held per call it is fast at 1.4 times. The same with
// the time after the last query off the CPU, which the model's delay
// holds then, and with pages served without a query beside them (the
// delay after the variants' branch goes into each arm).
func TestPoolHeldToEnd(t *testing.T) {
	for _, c := range []struct{ what, src string }{
		{"CPU after", heldToEndModel},
		{"off the CPU after", strings.Replace(heldToEndModel, "                - call: db/update\n                - cpu: exp(1ms)\n", "                - call: db/update\n                - delay: exp(1ms)\n", 1)},
		{"variants", heldToEndVariants},
	} {
		t.Run(c.what, func(t *testing.T) {
			truth, dir, dbPath := recordDatabase(t, c.src, "to-end", 13, 60000)
			r := solveSim(t, truth)
			// Its pool's busy units over the rate of its first queries.
			hold := r.Resources["dbpool"].Busy / r.Operations["db/select"].Throughput
			t.Logf("the truth holds a connection %.3g ms", 1e3*hold)
			pool := map[string]extract.PassiveConfig{"dbpool": {Capacity: 2, Calls: []string{"db/*"}, Callers: []string{"api"}}}
			cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 2}}, Passive: pool, Metrics: []string{poolTimes(t, dir, "api", 60000, hold, 0)}}
			x, err := extractRun(context.Background(), []string{dbPath}, "to-end", cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("extracted:\n%s", x.Model.Marshal())
			if transactionHolds(x.Model.Component("api").Operation("page").Steps, "dbpool") != 1 || mentions(x.Report.Evidence, "the pool keeps each connection to the request's end") != 1 {
				t.Errorf("not held to the end: evidence %q, warnings %q", x.Report.Evidence, x.Report.Warnings)
			}
			wl := x.Model.Workloads[0].Name
			check(t, loadComparisons(t, truth, "pages", x.Model, wl, 0.8, 1, 1.4))

			cfg.Metrics = nil
			y, err := extractRun(context.Background(), []string{dbPath}, "to-end", cfg)
			if err != nil {
				t.Fatal(err)
			}
			c := loadComparisons(t, truth, "pages", y.Model, wl, 1.4)[0]
			t.Logf("held per call at 1.4 times the load: %+.1f %%", 100*c.relError)
			if c.ok() || c.relError > 0 {
				t.Errorf("held per call: %+.1f %% at 1.4 times the load, want fast beyond the tolerance", 100*c.relError)
			}
		})
	}
}

// txBranchModel holds its pool over transactions that differ from one
// request to the next (an update, or an update and an insert, inside
// one), beside requests that run a query alone (autocommit) or a query
// and then a short transaction.
const txBranchModel = `perfcast: 1
name: tx-branch
hosts:
  app: {cpu: {cores: 2}}
  dbh: {cpu: {cores: 4}}
components:
  api:
    host: app
    operations:
      order:
        steps:
          - cpu: exp(0.5ms)
          - branch:
              - p: 0.5
                steps:
                  - hold:
                      resource: dbpool
                      steps:
                        - call: db/BEGIN
                        - call: db/select
                        - cpu: exp(1ms)
                        - branch:
                            - p: 0.6
                              steps: [{call: db/update}]
                            - p: 0.4
                              steps: [{call: db/update}, {call: db/insert}]
                        - call: db/COMMIT
              - p: 0.3
                steps:
                  - hold: {resource: dbpool, steps: [{call: db/select}]}
              - p: 0.2
                steps:
                  - hold: {resource: dbpool, steps: [{call: db/select}]}
                  - hold:
                      resource: dbpool
                      steps:
                        - call: db/BEGIN
                        - call: db/update
                        - call: db/COMMIT
          - cpu: exp(0.5ms)
  db:
    host: dbh
    operations:
      BEGIN: {steps: [{delay: exp(0.3ms)}]}
      select: {steps: [{delay: exp(2ms)}]}
      update: {steps: [{delay: exp(1.5ms)}]}
      insert: {steps: [{delay: exp(1ms)}]}
      COMMIT: {steps: [{delay: exp(0.5ms)}]}
passive:
  dbpool: {capacity: 2, host: app}
workload:
  orders:
    open: {rate: 250/s}
    steps: [{call: api/order}]
`

// TestPoolOverTransactionsBranches extracts txBranchModel with its pool
// declared: each variant acquires the pool at its transaction's BEGIN and
// releases it after its COMMIT, a query alone holds it for itself, and
// the orders are predicted at 0.8 to 1.4 times the load.
func TestPoolOverTransactionsBranches(t *testing.T) {
	truth, _, dbPath := recordDatabase(t, txBranchModel, "tx-branch", 12, 60000)
	cfg := &extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 2}},
		Passive: map[string]extract.PassiveConfig{"dbpool": {Capacity: 2, Calls: []string{"db/*"}, Callers: []string{"api"}}}}
	x, err := extractRun(context.Background(), []string{dbPath}, "tx-branch", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("extracted:\n%s", x.Model.Marshal())
	steps := x.Model.Component("api").Operation("order").Steps
	if n := transactionHolds(steps, "dbpool"); n != 3 || !holdsAround(steps, "dbpool") {
		t.Errorf("api/order: %d transactions, want 3 (one per variant that runs one) and a query held alone", n)
	}
	check(t, loadComparisons(t, truth, "orders", x.Model, x.Model.Workloads[0].Name, 0.8, 1, 1.4))
}

// recordDatabase records the traces of the model src, with n requests and
// seed, as a database's clients see it: component db's spans left out,
// and its clients' spans saying it is PostgreSQL (db.system). It returns
// the truth, the temporary directory and the traces' path.
func recordDatabase(t *testing.T, src, name string, seed uint64, n int64) (truth *model.Model, dir, path string) {
	t.Helper()
	truth, dir, tracesPath, _ := recordModel(t, src, name, tracegen.Options{Seed: seed}, n, func(s *sim.Span) bool {
		return s.Component != "db"
	})
	return truth, dir, withDBSystem(t, dir, tracesPath, "postgresql")
}

// transactionHolds counts the holds of resource name over three steps
// or more (a transaction's calls; a call's hold has its delay and its
// call at most), in steps and every list below them.
func transactionHolds(steps []model.Step, name string) int {
	n := 0
	for _, s := range steps {
		if s.Kind == model.StepHold && s.Resource == name && len(s.Steps) >= 3 {
			n++
		}
		n += transactionHolds(s.Steps, name)
		for _, l := range s.Parallel {
			n += transactionHolds(l, name)
		}
		for _, b := range s.Branches {
			n += transactionHolds(b.Steps, name)
		}
		for _, c := range s.Cases {
			n += transactionHolds(c.Steps, name)
		}
	}
	return n
}

// rewrite writes into dir, as name, the file at path with each pair of
// olds and news replaced, and returns the copy's path.
func rewrite(t *testing.T, dir, path, name string, pairs ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	if err := os.WriteFile(out, []byte(strings.NewReplacer(pairs...).Replace(string(mustRead(t, path)))), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
