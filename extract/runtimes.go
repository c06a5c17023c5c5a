package extract

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/internal/textout"
)

// oneThread reports whether a process whose spans carry
// telemetry.sdk.language language and process.runtime.name runtime runs
// its own code on one thread at a time, whatever the cores: Node.js's
// event loop, CPython's and PyPy's global interpreter lock, CRuby's
// global VM lock. Jython, IronPython, JRuby and TruffleRuby run threads
// at once; so do Go, Java, .NET and the rest.
func oneThread(language, runtime string) bool {
	switch strings.ToLower(language) {
	case "nodejs":
		return true
	case "python":
		switch strings.ToLower(runtime) {
		case "jython", "ironpython":
			return false
		}
		return true
	case "ruby":
		switch strings.ToLower(runtime) {
		case "jruby", "truffleruby":
			return false
		}
		return true
	}
	return false
}

// RuntimeName is how perfcast names a runtime: the language, and the
// runtime where it says more ("python (cpython)").
func RuntimeName(language, runtime string) string {
	if runtime == "" || strings.EqualFold(runtime, language) {
		return language
	}
	return language + " (" + runtime + ")"
}

// ProcessOf names the process that made span s as extraction tells
// processes apart: its service.instance.id, else its machine and
// process.pid; "" where its spans say neither.
func ProcessOf(s *ingest.Span) string {
	if s.Instance != "" {
		return s.Instance
	}
	if p := s.Process; p != nil && p.PID != "" {
		return s.HostKey() + "/pid " + p.PID
	}
	return ""
}

// runtimeOf is the language and runtime of the process that made span s,
// "" where its resource does not say.
func runtimeOf(s *ingest.Span) (language, runtime string) {
	if p := s.Process; p != nil {
		return p.Language, p.Runtime
	}
	return "", ""
}

// declaredSlots is the CPU slots the configuration gives component comp,
// by its name or "*", and whether it gives any.
func (c *Config) declaredSlots(comp string) (int, bool) {
	if c == nil {
		return 0, false
	}
	k, ok := perComponent(c.CPUSlots, comp)
	return max(k, 0), ok
}

// perComponent is the entry of a per-component setting for component
// comp: its own, else that of "*", and whether there is one.
func perComponent[V any](m map[string]V, comp string) (V, bool) {
	if v, ok := m[comp]; ok {
		return v, true
	}
	v, ok := m["*"]
	return v, ok
}

// foldSlots is, for an execution of component comp whose server span is
// s, the CPU slots its component has and the key its executions share
// slots under: the slots the configuration declares, shared by the
// component; else, in a process of a one-thread runtime that its spans
// name, one slot of that process's own; else none.
func (c *Config) foldSlots(s *ingest.Span, comp string) (slots int, key string) {
	if k, ok := c.declaredSlots(comp); ok {
		return k, comp
	}
	if oneThread(runtimeOf(s)) {
		if p := ProcessOf(s); p != "" {
			return 1, comp + "\x00" + p
		}
	}
	return 0, comp
}

// noteRuntime records the runtime and process of an execution whose
// server span is s in the component's placement.
func (pl *placement) noteRuntime(s *ingest.Span) {
	lang, rt := runtimeOf(s)
	if lang == "" {
		return
	}
	if pl.runtimes == nil {
		pl.runtimes = map[string]int64{}
	}
	pl.runtimes[lang+"\x00"+rt]++
	if !oneThread(lang, rt) {
		return
	}
	p := ProcessOf(s)
	if p == "" {
		return
	}
	if pl.procs == nil {
		pl.procs, pl.procLife = map[string]int64{}, map[string]lifetime{}
	}
	pl.procs[p]++
	pl.procLife[p] = pl.procLife[p].widen(s.Start, s.End)
}

// minOneThreadShare is the share of a component's executions that must
// run in processes of one-thread runtimes for the component to get CPU
// slots without a declaration.
const minOneThreadShare = 0.9

// runtimeSlots gives CPU slots to the components the configuration gives
// none and whose spans say they run on a runtime that runs one thread at
// a time (oneThread): one per process, as many per replica as processes
// served at once on each. Node.js processes' slots are partitioned, each
// process a queue of its own: a cluster's primary hands each worker
// connections in turn (its default scheduling but on Windows), and what
// a connection brings waits for its worker's loop alone. The workers of
// Python's and Ruby's servers (gunicorn, uvicorn, Puma) take
// connections from one listening socket as they come free: their slots
// serve one queue. A component of such a runtime whose spans do
// not name their process (service.instance.id, process.pid) keeps
// unbounded threads, with a warning: one process per replica and several
// (a pre-forking server's workers) differ by as many slots.
func (g *generator) runtimeSlots() {
	g.slots, g.loops = map[string]int{}, map[string]bool{}
	for _, comp := range slices.Sorted(maps.Keys(g.s.placement)) {
		if _, ok := g.cfg.declaredSlots(comp); ok {
			continue
		}
		pl := g.s.placement[comp]
		var total, single, loops int64
		var names []string
		for _, key := range slices.Sorted(maps.Keys(pl.runtimes)) {
			n := pl.runtimes[key]
			lang, rt, _ := strings.Cut(key, "\x00")
			total += n
			if oneThread(lang, rt) {
				single += n
				if strings.EqualFold(lang, "nodejs") {
					loops += n
				}
				if name := RuntimeName(lang, rt); !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
		var execs int64
		for _, op := range g.s.ops {
			if op.component == comp {
				execs += op.count
			}
		}
		execs = max(execs, total)
		if single == 0 || float64(single) < minOneThreadShare*float64(execs) {
			if single > 0 {
				g.rep.evidencef("component %s: %d of its %d executions ran on %s, which runs one thread at a time, too few to bound its threads (cpu_slots declares them)", comp, single, execs, strings.Join(names, ", "))
			}
			continue
		}
		runtime := strings.Join(names, ", ")
		var named int64
		for _, n := range pl.procs {
			named += n
		}
		if float64(named) < minOneThreadShare*float64(single) {
			g.rep.warnf("component %s: runs on %s, one thread at a time in each process, but its spans do not name their process (service.instance.id or process.pid): its threads share the CPU freely, which is right only for a runtime that runs more than one; declare cpu_slots: {%s: N}, N its processes on each replica", comp, runtime, comp)
			continue
		}
		replicas := g.replicasOf(comp)
		procs := slices.Sorted(maps.Keys(pl.procs))
		avg, peak := processesAtOnce(pl)
		k := max(1, int(math.Round(avg/float64(replicas))))
		g.slots[comp] = k
		g.loops[comp] = loops == single
		per := "its one process"
		if len(procs) > 1 {
			per = fmt.Sprintf("%d processes (%s), %.1f at once on average, at most %d, over %d replica(s)", len(procs), textout.Abbreviate(procs, 4), avg, peak, replicas)
		}
		g.rep.evidencef("component %s: runs on %s, one thread at a time in each process: %d CPU slot(s) a replica, from %s (cpu_slots sets another number; 0 for none)", comp, runtime, k, per)
	}
}

// processorSlots gives CPU slots to the components the configuration
// gives none, whose runtime does not run one thread at a time, and whose
// metrics state how many threads run their Go code at once (GOMAXPROCS:
// go.processor.limit, go_sched_gomaxprocs_threads; Estimates.Processors):
// as many a replica, as cpu_slots would declare: Go's scheduler runs
// that many threads of Go code, each taking the goroutines ready to run
// in turn, which the slots' queue is, whatever the cores (with as many
// as the cores, a service's bursts still queue for its slots rather than
// share the cores with each other).
func (g *generator) processorSlots() {
	if g.est == nil {
		return
	}
	for _, comp := range slices.Sorted(maps.Keys(g.est.Processors)) {
		n := g.est.Processors[comp]
		h := g.hostOf[comp]
		if _, declared := g.cfg.declaredSlots(comp); declared || g.slots[comp] > 0 || h == nil || n < 1 {
			continue
		}
		g.slots[comp] = n
		g.rep.evidencef("component %s: runs Go code on at most %d thread(s) at once (GOMAXPROCS, as its metrics state: go.processor.limit, go_sched_gomaxprocs_threads): %d CPU slot(s) a replica (cpu_slots sets another number; 0 for none)", comp, n, n)
	}
}

// partitioned reports whether component comp's CPU slots are a queue
// each (model.Passive.Partitioned): several slots, which the
// configuration says are (Config.SlotQueues), else its calls' waits
// show are (slotQueueShapes), else of Node.js processes (runtimeSlots).
func (g *generator) partitioned(comp string) bool {
	if g.cpuSlots(comp) < 2 {
		return false
	}
	if q, ok := g.cfg.slotQueues(comp); ok {
		return q == SlotQueuesEach
	}
	if each, ok := g.shaped[comp]; ok {
		return each
	}
	return g.loops[comp]
}

// slotQueueShapes measures, for each component with several CPU slots a
// replica whose spans name several processes on one, whether the
// processes serve one queue or a queue each (slotShape), and says what
// it found where the configuration does not say (slot_queues).
func (g *generator) slotQueueShapes() {
	g.shaped = map[string]bool{}
	comps := map[string]bool{}
	for _, w := range g.s.shapes {
		if len(w.procs) > 1 {
			comps[w.comp] = true
		}
	}
	for _, comp := range slices.Sorted(maps.Keys(comps)) {
		if g.cpuSlots(comp) < 2 {
			continue
		}
		m, each, ok := g.slotShape(comp)
		if q, said := g.cfg.slotQueues(comp); said {
			if said := q == SlotQueuesEach; ok && each != said {
				g.rep.warnf("component %s: slot_queues says its processes serve %s, but its calls' waits show %s (%d of %d that waited %s or more found another process of their replica idle, %.1f expected were they independent queues); the configuration stands",
					comp, queuesName(said), queuesName(each), m.otherIdle, m.probes, textout.Duration(m.from), m.expected())
			}
			continue
		}
		found := fmt.Sprintf("%d of its calls waited %s or more before their span (twice the network's time, which %d calls to an idle process took, %.0f%% of them less than %s); half way through, %d of them found another process of their replica idle, where a process was idle %.0f%% of the time its others were busy (%.1f expected were they independent queues)",
			m.probes, textout.Duration(m.from), m.network, 100*shapeNetworkQuantile, textout.Duration(m.networkHigh), m.otherIdle, 100*m.idleShare, m.expected())
		if m.network < shapeMinNetwork {
			found = fmt.Sprintf("%d calls found their process idle all along, too few to time the network before its spans (%d needed)", m.network, shapeMinNetwork)
		}
		if !ok {
			dflt := "one queue"
			if g.loops[comp] {
				dflt = "a queue each, as Node.js's"
			}
			g.rep.evidencef("component %s: whether its processes serve one queue or a queue each the traces do not say (%s): taken as %s (slot_queues can say)", comp, found, dflt)
			continue
		}
		g.shaped[comp] = each
		g.rep.evidencef("component %s: its processes serve %s: %s", comp, queuesName(each), found)
	}
}

// queuesName names the queues of processes that serve a queue each or,
// where each is false, one queue.
func queuesName(each bool) string {
	if each {
		return "a queue each"
	}
	return "one queue"
}

// cpuSlots is the CPU slots of component comp in the model: those the
// configuration declares, else those its runtime gives (runtimeSlots),
// 0 for unbounded.
func (g *generator) cpuSlots(comp string) int {
	if k, ok := g.cfg.declaredSlots(comp); ok {
		return k
	}
	return g.slots[comp]
}
