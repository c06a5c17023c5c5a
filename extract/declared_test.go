package extract_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/extract"
)

// declaredLockModel is a service whose orders take a lock of one for 3 ms
// (60 % busy), beside reads: POST and GET are replaced by their steps,
// BEFORE by whether the lock is waited for before the span starts (where
// the steps begin with it).
const declaredLockModel = `perfcast: 1
name: declared-lock
hosts:
  app: {cpu: {cores: 4}}
components:
  orders:
    host: app
    operations:
      post:
        steps: POST
      get:
        steps: GET
passive:
  ledger: {capacity: 1, before_span: BEFORE}
workload:
  posts:
    open: {rate: 200/s}
    steps: [{call: orders/post}]
  gets:
    open: {rate: 200/s}
    steps: [{call: orders/get}]
`

// TestDeclaredLockInsideSpan extracts declaredLockModel with the lock
// declared around orders/post (passive, operations). Where the lock is
// taken inside the span (after 0.5 ms of CPU, the model's lock around the
// whole operation then held a little longer than the truth's), the spans
// run more than one at once, and the
// wait they hold is taken out of their time off the CPU (declaredOpWait:
// the spans in progress beyond the first, by Little's law); before, it
// was kept (5.5 ms off the CPU for the truth's 2) and made again under
// the lock, which then saturated. Where it is taken before the span, the
// spans never overlap and the lock becomes before_span, so that the
// spans are predicted without the wait. Where two operations share it,
// their spans' profile together gives the wait (the declaration's
// resource profiled as the state is folded). Each way the orders'
// response time is predicted within the round trip's tolerance.
func TestDeclaredLockInsideSpan(t *testing.T) {
	const (
		locked = "{hold: {resource: ledger, steps: [{cpu: exp(1ms)}, {delay: exp(2ms)}]}}"
		free   = "[{cpu: exp(1ms)}, {delay: exp(2ms)}]"
	)
	for _, c := range []struct {
		name, post, get string
		before          bool
		ops             []string
	}{
		{"inside", "[{cpu: exp(0.5ms)}, " + locked + "]", free, false, []string{"orders/post"}},
		{"before", "[" + locked + "]", free, true, []string{"orders/post"}},
		// Two operations share the lock, each 30 % busy.
		{"shared", "[{cpu: exp(0.5ms)}, " + locked + "]", "[{cpu: exp(0.5ms)}, " + locked + "]", false, []string{"orders/get", "orders/post"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := strings.NewReplacer("POST", c.post, "GET", c.get, "BEFORE", fmt.Sprint(c.before)).Replace(declaredLockModel)
			if c.name == "shared" {
				text = strings.ReplaceAll(text, "rate: 200/s", "rate: 100/s")
			}
			m, obs, x := extractTruth(t, text, "declared-lock", 60000, 30000,
				&extract.Config{Hosts: map[string]extract.HostConfig{"app": {Cores: 4}},
					Passive: map[string]extract.PassiveConfig{"ledger": {Capacity: 1, Operations: c.ops}}})
			p := x.Model.PassiveResource("ledger")
			if p == nil || p.BeforeSpan != c.before {
				t.Fatalf("ledger %+v, want before_span %v", p, c.before)
			}
			cs := loadComparisons(t, m, "posts", x.Model, "post", 0.8, 1, 1.1)
			spans, _ := spanComparisons(t, x.Model, obs, "orders/post")
			check(t, append(cs, spans...))
		})
	}
}
