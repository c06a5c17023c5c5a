package model

import (
	"strings"
	"testing"
)

// TestScopeHolds turns acquire–release pairs into holds where they stand
// in one list with nothing acquired or released between, and leaves the
// others.
func TestScopeHolds(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"a pair", `[{acquire: p}, {cpu: 1ms}, {delay: 2ms}, {release: p}]`, `[{hold: {resource: p, steps: [{cpu: 1ms}, {delay: 2ms}]}}]`},
		{"nested", `[{acquire: p}, {acquire: q}, {cpu: 1ms}, {release: q}, {release: p}]`, `[{hold: {resource: p, steps: [{hold: {resource: q, steps: [{cpu: 1ms}]}}]}}]`},
		{"interleaved", `[{acquire: p}, {acquire: q}, {release: p}, {release: q}]`, `[{acquire: p}, {acquire: q}, {release: p}, {release: q}]`},
		{"units differ", `[{acquire: p, units: 2}, {cpu: 1ms}, {release: p}, {release: p}]`, `[{acquire: p, units: 2}, {cpu: 1ms}, {release: p}, {release: p}]`},
		{"units", `[{acquire: p, units: 2}, {cpu: 1ms}, {release: p, units: 2}]`, `[{hold: {resource: p, units: 2, steps: [{cpu: 1ms}]}}]`},
		{"across lists", `[{acquire: p}, {branch: [{p: 1, steps: [{release: p}]}]}]`, `[{acquire: p}, {branch: [{p: 1, steps: [{release: p}]}]}]`},
		{"in a loop body", `[{loop: {times: 2, steps: [{acquire: p}, {cpu: 1ms}, {release: p}]}}]`, `[{loop: {times: 2, steps: [{hold: {resource: p, steps: [{cpu: 1ms}]}}]}}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ScopeHolds(stepsOf(t, c.in))
			want := stepsOf(t, c.want)
			if g, w := describeSteps(t, got), describeSteps(t, want); g != w {
				t.Errorf("got\n%s\nwant\n%s", g, w)
			}
		})
	}
}

// scopeModel is a model whose one operation's steps are %s.
const scopeModel = `perfcast: 1
name: scope
hosts: {h: {}}
components:
  c:
    host: h
    operations:
      o: {steps: %s}
passive: {p: {capacity: 2}, q: {capacity: 1}}
workload: {w: {open: {rate: 1/s}, steps: [{call: c/o}]}}
`

// stepsOf parses list, a YAML list of steps, as an operation's.
func stepsOf(t *testing.T, list string) []Step {
	t.Helper()
	m, err := Parse([]byte(strings.Replace(scopeModel, "%s", list, 1)), "scope.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m.Operation("c/o").Steps
}

// describeSteps writes steps as the operation's in scopeModel.
func describeSteps(t *testing.T, steps []Step) string {
	t.Helper()
	m, err := Parse([]byte(strings.Replace(scopeModel, "%s", "[{cpu: 1ms}]", 1)), "scope.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m.Operation("c/o").Steps = steps
	return string(m.Marshal())
}
