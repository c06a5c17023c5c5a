package extract

// Merge adds the state o, folded from traces disjoint from those of s, into
// s. Afterwards s is the state of all their traces. o must not be used
// afterwards: Merge may take parts of it over.
func (s *State) Merge(o *State) {
	s.Traces += o.Traces
	s.Spans += o.Spans
	s.Modeled += o.Modeled
	s.Partial += o.Partial
	s.WithCPU += o.WithCPU
	s.First = min(s.First, o.First)
	s.Last = max(s.Last, o.Last)
	for id, op := range o.ops {
		mine := s.ops[id]
		if mine == nil {
			s.ops[id] = op
			continue
		}
		mine.count += op.count
		mine.resp.merge(op.resp)
		mine.self.merge(op.self)
		mine.cpu.merge(op.cpu)
		mine.offCPU.merge(op.offCPU)
		mergeParamStats(mine.params, op.params)
		for class, vs := range op.variants {
			byClass := mine.variants[class]
			if byClass == nil {
				mine.variants[class] = vs
				continue
			}
			for sig, v := range vs {
				if w := byClass[sig]; w != nil {
					w.count += v.count
					mergeElems(w.elems, v.elems)
				} else {
					byClass[sig] = v
				}
			}
		}
	}
	for id, e := range o.entries {
		mine := s.entries[id]
		if mine == nil {
			s.entries[id] = e
			continue
		}
		mine.count += e.count
		mine.resp.merge(e.resp)
		for sec, n := range e.perSecond {
			mine.perSecond[sec] += n
		}
		for p, byBucket := range e.params {
			for b, n := range byBucket {
				mine.foldParamCount(p, b, n)
			}
		}
	}
	s.Windows.Merge(o.Windows)
	for key, d := range o.siteTimes {
		if mine := s.siteTimes[key]; mine != nil {
			mine.merge(d)
		} else {
			s.siteTimes[key] = d
		}
	}
	if o.sessions != nil {
		if s.sessions == nil {
			s.sessions = newSessionStats()
		}
		s.sessions.merge(o.sessions)
	}
	for p, vals := range o.categories {
		if s.categories[p] == nil {
			s.categories[p] = map[string]bool{}
		}
		for v := range vals {
			s.categories[p][v] = true
		}
	}
	for key, c := range o.conc {
		if mine := s.conc[key]; mine != nil {
			mine.merge(c)
		} else {
			s.conc[key] = c
		}
	}
	for comp, p := range o.placement {
		mine := s.placement[comp]
		if mine == nil {
			s.placement[comp] = p
			continue
		}
		for h, n := range p.hosts {
			mine.hosts[h] += n
		}
		for i, n := range p.instances {
			mine.instances[i] += n
		}
	}
}

func mergeElems(a, b []*elem) {
	for i, e := range b {
		for k, n := range e.times {
			a[i].times[k] += n
		}
		a[i].latency.merge(e.latency)
		for j := range e.lists {
			mergeElems(a[i].lists[j], e.lists[j])
		}
	}
}

// span is the observed time between the first and the last arrival, in
// seconds, widened by one mean interarrival time so that n arrivals measure
// n intervals.
func (s *State) span() float64 {
	var n int64
	for _, e := range s.entries {
		n += e.count
	}
	if n < 2 || s.Last <= s.First {
		return 0
	}
	d := seconds(s.Last - s.First)
	return d * float64(n) / float64(n-1)
}
