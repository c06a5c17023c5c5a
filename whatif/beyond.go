package whatif

import (
	"fmt"

	"github.com/perfcast/perfcast/model"
)

// Beyond lists, one warning each, the changes from base to changed that
// let more work run at once than base does: more units of a passive
// resource, more threads of a component, more cores of a host, more
// servers of a disk. The model
// serves the extra parallel work with the demands it has, which holds
// where the work shares nothing; contention between the threads that only
// more parallelism brings out (a lock inside a library or a database, the
// allocator, the memory bus) was never measured when the traces ran with
// fewer, and is not in the model. A CPU limit raised to the host's cores
// or beyond is also said: it no longer binds, and the cores do. Resources,
// components and hosts are matched by name; ones that base does not have
// are left out.
func Beyond(base, changed *model.Model) []string {
	var out []string
	for _, p := range changed.Passive {
		b := base.PassiveResource(p.Name)
		if b == nil || p.Capacity <= b.Capacity {
			continue
		}
		what := "more holders at once, each with the demands the model has; contention among them inside what it guards"
		if p.BeforeSpan {
			what = "more of the component's threads on the CPU at once, each with the demands the model has; contention between them (locks in its libraries or its database, the runtime)"
		}
		out = append(out, fmt.Sprintf("passive.%s.capacity raised from %d to %d: %s, which fewer units never showed, is not in the model", p.Name, b.Capacity, p.Capacity, what))
	}
	for _, c := range changed.Components {
		b := base.Component(c.Name)
		if b == nil || !moreThreads(b.Threads, c.Threads) {
			continue
		}
		out = append(out, fmt.Sprintf("components.%s.threads raised from %s to %s: more of its requests at once, each with the demands the model has; contention between them (locks in its libraries or its database), which fewer threads never showed, is not in the model", c.Name, threadCount(b.Threads), threadCount(c.Threads)))
	}
	for _, h := range changed.Hosts {
		b := base.Host(h.Name)
		if b == nil || h.CPU.Cores <= b.CPU.Cores {
			continue
		}
		out = append(out, fmt.Sprintf("hosts.%s.cpu.cores raised from %d to %d: more work in parallel, with the demands the model has; contention between cores (shared caches, memory bandwidth, locks between threads), which fewer cores never showed, is not in the model", h.Name, b.CPU.Cores, h.CPU.Cores))
	}
	for _, h := range changed.Hosts {
		if b := base.Host(h.Name); b != nil && b.CPU.Limited() && h.CPU.Limit > b.CPU.Limit && !h.CPU.Limited() {
			out = append(out, fmt.Sprintf("hosts.%s.cpu.limit raised from %g to %g, at or above its %d cores: it no longer binds, and the host serves as its cores (raise hosts.%s.cpu.cores too for more)", h.Name, b.CPU.Limit, h.CPU.Limit, h.CPU.Cores, h.Name))
		}
	}
	for _, h := range changed.Hosts {
		b := base.Host(h.Name)
		if b == nil {
			continue
		}
		for _, d := range h.Disks {
			bd := b.Disk(d.Name)
			if bd == nil || d.Servers <= bd.Servers {
				continue
			}
			out = append(out, fmt.Sprintf("hosts.%s.disks.%s.servers raised from %d to %d: more requests served at once, each with the demand the model has; what they share inside the device (its controller, its queue, the bus), which fewer servers never showed, is not in the model", h.Name, d.Name, bd.Servers, d.Servers))
		}
	}
	return out
}

// moreThreads tells whether a thread count of to admits more requests at
// once than one of from (model.Unlimited, 0, admits any number).
func moreThreads(from, to int) bool {
	switch {
	case from == model.Unlimited:
		return false
	case to == model.Unlimited:
		return true
	}
	return to > from
}

// threadCount prints a component's thread count.
func threadCount(n int) string {
	if n == model.Unlimited {
		return "unlimited"
	}
	return fmt.Sprint(n)
}
