package sim

// CPU limits (model.CPU.Limit) as Linux's CFS bandwidth control enforces
// them: a replica's CPU runs its work on up to its cores at full speed
// until it has used its quota of CPU time within the current period, then
// stalls, every job at once, until the next period begins. Periods are
// aligned across a host's replicas and start at time 0. The kernel's
// finer points are left out: quota handed to each core in slices (5 ms by
// default), bursts carried over (cpu.cfs_burst_us, 0 by default) and the
// timer's slack.

// cpuLimit is the state of one CPU station's limit.
type cpuLimit struct {
	// quota is the CPU time allowed per period, in seconds.
	quota float64
	// used is the CPU time spent in the current period up to usedAt, at
	// running cores busy since then.
	used, usedAt float64
	running      int32
	// throttled: the quota is spent; the station's rate is 0 until the
	// next period.
	throttled bool
	// speed is the station's rate when not throttled (1, or the current
	// draw of a speed that changes over time).
	speed float64
	// version of the quota event on the calendar; older ones are stale.
	version int32
	// periodEnd is when the current period ends.
	periodEnd float64
	// periods and stalled count, since the last reset of statistics, the
	// periods in which the CPU ran (as cgroup's nr_periods counts them:
	// not those it was idle throughout) and those among them in which
	// the quota ran out; active says the current period counts.
	periods, stalled int64
	active           bool
}

// charge adds the CPU time spent since the last charge.
func (l *cpuLimit) charge(now float64) {
	l.used += (now - l.usedAt) * float64(l.running)
	l.usedAt = now
}

// meter follows a change in the number of jobs at limited station st: it
// charges the CPU time spent so far, records the cores now running (none
// while throttled) as the station's busy level, and schedules the moment
// the quota runs out at that pace, if that comes before the period ends.
func (e *engine) meter(st int32, s *station) {
	l := s.cpuLimit
	l.charge(e.now)
	l.running = 0
	if !l.throttled {
		l.running = min(s.busy, s.servers)
	}
	s.set(e.now, l.running)
	l.active = l.active || l.running > 0
	l.version++
	if l.running > 0 {
		if at := e.now + max(l.quota-l.used, 0)/float64(l.running); at < l.periodEnd {
			e.cal.push(at, evQuota, st, l.version)
		}
	}
}

// quotaSpent stalls station st, whose quota for the period has run out.
func (e *engine) quotaSpent(st, version int32) {
	s := &e.stations[st]
	l := s.cpuLimit
	if version != l.version || l.throttled {
		return
	}
	l.charge(e.now)
	l.throttled = true
	l.stalled++
	e.stalled++
	e.setRate(st, s, 0)
	e.meter(st, s)
}

// newPeriod starts a new bandwidth period at every replica of host h:
// the quota is whole again and stalled work resumes.
func (e *engine) newPeriod(h int32) {
	hi := &e.p.hosts[h]
	for r := range hi.replicas {
		st := hi.cpuStation(r)
		s := &e.stations[st]
		l := s.cpuLimit
		l.charge(e.now)
		l.used, l.periodEnd = 0, e.now+hi.period
		if l.active {
			l.periods++
		}
		l.active = false
		if l.throttled {
			l.throttled = false
			e.stalled--
			e.setRate(st, s, l.speed)
		}
		e.meter(st, s)
	}
	e.cal.push(e.now+hi.period, evPeriod, h, 0)
}
