package whatif

import (
	"strings"
	"testing"

	"github.com/perfcast/perfcast/model"
)

// Beyond warns of each change that lets more run at once, and of nothing
// else: lowering a limit, changing a speed or a rate, or a key the base
// model lacks.
func TestBeyond(t *testing.T) {
	base := parse(t)
	slotted, err := model.Parse([]byte(strings.Replace(mm1, "lock: {capacity: 1}", "lock: {capacity: 1}\n  svc-cpu-slots: {capacity: 1, before_span: true}", 1)), "slots.yaml")
	if err != nil {
		t.Fatal(err)
	}
	quota, err := model.Parse([]byte(strings.Replace(mm1, "cpu: {cores: 1}", "cpu: {cores: 2, limit: 1}", 1)), "quota.yaml")
	if err != nil || !quota.Host("app").CPU.Limited() {
		t.Fatalf("limited model: %v", err)
	}
	cases := []struct {
		base *model.Model
		sets []string
		want []string // one substring per warning, in order
	}{
		{base, nil, nil},
		{base, []string{"hosts.app.cpu.speed=2", "hosts.app.replicas=3", "workload.*.load=3", "passive.lock.capacity=1"}, nil},
		{base, []string{"components.svc.threads=2", "hosts.app.cpu.cores=1"}, nil},
		{base, []string{"passive.lock.capacity=4"}, []string{"passive.lock.capacity raised from 1 to 4: more holders at once"}},
		{base, []string{"components.svc.threads=8"}, []string{"components.svc.threads raised from 4 to 8"}},
		{base, []string{"hosts.app.cpu.cores=4", "passive.lock.capacity=2"}, []string{"passive.lock.capacity raised from 1 to 2", "hosts.app.cpu.cores raised from 1 to 4"}},
		{base, []string{"hosts.app.disks.data.servers=3"}, []string{"hosts.app.disks.data.servers raised from 1 to 3: more requests served at once"}},
		{quota, []string{"hosts.app.cpu.limit=1500m"}, nil},
		{quota, []string{"hosts.app.cpu.limit=4"}, []string{"hosts.app.cpu.limit raised from 1 to 4, at or above its 2 cores: it no longer binds"}},
		{slotted, []string{"passive.svc-cpu-slots.capacity=2"}, []string{"passive.svc-cpu-slots.capacity raised from 1 to 2: more of the component's threads on the CPU at once"}},
	}
	for _, c := range cases {
		m, err := c.base.Clone()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range c.sets {
			if err := Set(m, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		got := Beyond(c.base, m)
		if len(got) != len(c.want) {
			t.Errorf("%v: %d warnings %q, want %d", c.sets, len(got), got, len(c.want))
			continue
		}
		for i, w := range c.want {
			// Each says what the model lacks, but the limit that no
			// longer binds, which says what serves instead.
			lacks := strings.HasSuffix(got[i], "is not in the model") || strings.Contains(w, "no longer binds")
			if !strings.HasPrefix(got[i], w) || !lacks {
				t.Errorf("%v: warning %d is %q, want it to start %q", c.sets, i, got[i], w)
			}
		}
	}
	// A component unlimited in the base admits no more with a limit.
	unlimited, err := base.Clone()
	if err != nil {
		t.Fatal(err)
	}
	unlimited.Component("svc").Threads = model.Unlimited
	limited, err := unlimited.Clone()
	if err != nil {
		t.Fatal(err)
	}
	limited.Component("svc").Threads = 64
	if got := Beyond(unlimited, limited); len(got) != 0 {
		t.Errorf("unlimited to 64 threads: %q", got)
	}
	// The other way, the limit lifted, admits more.
	if got := Beyond(limited, unlimited); len(got) != 1 || !strings.HasPrefix(got[0], "components.svc.threads raised from 64 to unlimited") {
		t.Errorf("64 threads to unlimited: %q", got)
	}
}
