package extract

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// Config is what a user tells extraction that traces do not say. Every field
// is optional.
//
//	hosts:                  # cores (and speed) of the machines, by host name
//	  web-1: {cores: 4}
//	  web-2: {cores: 2, scheduling: rr, quantum: 1.5ms}  # the CPU as Linux runs it
//	machines:               # hosts that share one machine's CPUs, by pattern
//	  docker-1: ["*"]       # (containers on one Docker host, pods on a node)
//	components:             # component names by rules, the first match winning
//	  - {component: admin, service: shop, span: "* /admin/*"}
//	operations:             # operation names by rules, the first match winning
//	  - {name: "GET /p/{slug}", span: "GET /p/*"}
//	rename:                 # component names, by service.name
//	  checkout-service: checkout
//	no_id_folding: false    # keep /item/42 as it is
//	params: [http.request.body.size]   # request parameters, binned
//	param_bins: 3
//	session: session.id     # users and think times, a closed workload
//	sampling: 0.1           # traces were kept with this probability
//	metrics: [cpu.csv]      # utilization, for CPU demands without span CPU times
//	passive:                # pools and locks the traces do not show
//	  dbpool: {capacity: 10, calls: [db/query]}
//	  ledger: {capacity: 1, operations: [orders/POST /orders]}
//	cpu_slots:              # threads of a component on the CPU at once
//	  catalog: 1            # (GOMAXPROCS of a Go service); "*": every component
//	slot_queues:            # its slots one queue, or a queue each (processes
//	  api: each             # that keep their connections); "*": every component
//	no_speed_curves: false  # do not model a CPU cost that changes with the load
//	no_speed_variation: false  # do not model a CPU cost that wanders over time
//	speed_window: false     # simulate it as a speed redrawn every window measured
type Config struct {
	Hosts map[string]HostConfig `yaml:"hosts"`
	// Machines gathers hosts that share one machine's CPUs: the containers
	// of a Docker host, each with a host name of its own, or pods on a
	// node that do not limit their CPU. Each machine lists glob patterns
	// (* and ?) of the hosts on it, as extraction names them: the spans'
	// host.name, else k8s.pod.name, else service.instance.id, else the
	// component ("*" puts every component on the machine). The first
	// machine, in the order of their names, with a matching pattern takes
	// a host. The machine is a host of the model, its cores given under
	// Hosts; its CPU is measured by its own metrics, else by the sum of
	// its hosts' (each container's, for the component that ran in it).
	Machines map[string][]string `yaml:"machines"`
	// Components are rules that name the component of the operations
	// whose spans match, in order, the first match winning; the spans no
	// rule matches are named by Rename, else by their service.name.
	Components []Rule `yaml:"components"`
	// Operations are rules that name the operations whose spans match, in
	// order, the first match winning: span names that carry values
	// ("GET /p/blue-shoes") become one operation ("GET /p/{slug}").
	Operations []Rule `yaml:"operations"`
	// Rename maps service names to component names.
	Rename map[string]string `yaml:"rename"`
	// NoIDFolding keeps identifiers in operation names.
	NoIDFolding bool `yaml:"no_id_folding"`
	// Params names span attributes that are request parameters, such as
	// http.request.body.size; they become workload params and switch steps
	// where operations depend on them.
	Params []string `yaml:"params"`
	// ParamBins is the number of bins of a numeric parameter (default 3).
	ParamBins int `yaml:"param_bins"`
	// Session names the attribute that identifies a user or session, such
	// as enduser.id: requests that carry it become a closed workload with
	// think times measured between them. Empty means session.id,
	// OpenTelemetry's name for it, followed only where most sessions hold
	// more than one request; NoSession follows no sessions.
	Session string `yaml:"session"`
	// Sampling is the probability with which the traces were kept, for
	// the traces whose spans do not say (an OpenTelemetry trace state's
	// ot=th, Jaeger's sampler tags): the ratio of a head sampler that
	// records nothing, or of a collector's probabilistic sampler. Each
	// such trace stands for 1/Sampling requests.
	Sampling float64 `yaml:"sampling"`
	// Metrics lists utilization metrics files (CSV, Prometheus range
	// query JSON, OTLP metrics JSON) from which CPU demands are estimated
	// for operations whose spans carry no CPU time.
	Metrics []string `yaml:"metrics"`
	// Passive declares pools and locks the traces do not show: calls to
	// the listed operations, or the listed operations themselves, hold one
	// unit each.
	Passive map[string]PassiveConfig `yaml:"passive"`
	// CPUSlots bounds, per component (key "*": every component without its
	// own entry), how many of a replica's threads run on the CPU at once,
	// as GOMAXPROCS bounds a Go program: each CPU step then holds one of
	// the component's slots, which requests wait for in FIFO order, so a
	// service with one slot runs its requests' CPU bursts one after the
	// other while the host's processor sharing divides the CPU between
	// services. Without an entry, a component whose spans say it runs on
	// a runtime that runs one thread at a time (telemetry.sdk.language
	// nodejs, python or ruby, but for Jython, IronPython, JRuby and
	// TruffleRuby) and name their process (service.instance.id or
	// process.pid) gets one slot per process it ran at once on a replica;
	// any other shares the CPU freely. An entry of 0 gives none.
	CPUSlots map[string]int `yaml:"cpu_slots"`
	// SlotQueues says, per component (key "*": every component without
	// its own entry), whether its CPU slots serve one queue (SlotQueuesOne:
	// a free slot takes the next burst waiting, as a process's threads
	// do, or workers that take connections from one socket as they come
	// free) or a queue each (SlotQueuesEach: each execution bound to one
	// slot, as processes that each keep the connections a balancer handed
	// them). Without an entry, the slots of processes whose calls'
	// waits show their queues are as shown (slotShape), else Node.js's
	// processes' slots are a queue each (a cluster's primary hands its
	// workers connections in turn) and any other's one.
	SlotQueues map[string]string `yaml:"slot_queues"`
	// NoSpeedCurves keeps hosts at one CPU speed whatever their load, even
	// where the traces show the CPU time of the same work changing with it
	// (see SpeedCurve).
	NoSpeedCurves bool `yaml:"no_speed_curves"`
	// NoSpeedVariation keeps hosts at one speed over time, even where the
	// traces show their CPU time wandering (see SpeedVariation).
	NoSpeedVariation bool `yaml:"no_speed_variation"`
	// SpeedWindow sets, where the variation was measured between the
	// spans' windows of a second, the model's speed_window to that length:
	// the simulator then redraws the speed every window instead of mixing
	// the steady states of speeds that hold until the system settles (see
	// model.CPU.SpeedWindow).
	SpeedWindow bool `yaml:"speed_window"`
	// OutsideSpans says where the CPU time that utilization metrics
	// measure beyond the spans' goes in the model: "background" (the
	// default) as asynchronous work each execution sends to its component
	// when it ends (an operation named OutsideSpansOperation), which loads the CPU and
	// the component's CPU slots but adds nothing to any response time, the
	// callers' time outside the span staying as measured; "inline" at the
	// start of every execution, in its response time and taken out of its
	// callers' time outside its span. Background suits garbage collection,
	// span export and the runtime's own goroutines; inline suits work done
	// for the request itself (reading it, writing the response).
	OutsideSpans string `yaml:"outside_spans"`

	// From and To, when not zero, keep only the traces whose requests
	// arrived in [From, To), in Unix nanoseconds: the steady phase of a
	// longer recording. They come from the command line (--from, --to),
	// not the file.
	From, To int64 `yaml:"-"`
	// Simulator simulates the parts of the model whose effect on the
	// traces no closed form gives (see Simulator). It comes from the
	// caller, not the file; without one those corrections are left out.
	Simulator Simulator `yaml:"-"`

	// Components and Operations, compiled on first use.
	componentRules, operationRules ruleSet
	// machines are Machines compiled, on first use.
	machines machineSet
	// depth is soloDepth, found on first use.
	depth struct {
		once sync.Once
		n    int
	}
}

// soloDepth is the number of levels of soloLevels at which the executions
// that stayed within them are worth timing (see soloSweep): those the
// split can use on the most cores a host is given, one without any.
func (c *Config) soloDepth() int {
	if c == nil {
		return 1
	}
	c.depth.once.Do(func() {
		c.depth.n = 1
		for _, h := range c.Hosts {
			if h.Cores > 0 {
				c.depth.n = max(c.depth.n, splitLevel(h.Cores)+1)
			}
		}
	})
	return c.depth.n
}

// machineSet holds Config.Machines compiled, built on first use.
type machineSet struct {
	once     sync.Once
	names    []string
	patterns [][]*regexp.Regexp
}

// machineOf returns the machine configured for host (as WindowHost names
// it), else host itself.
func (c *Config) machineOf(host string) string {
	if c == nil || len(c.Machines) == 0 {
		return host
	}
	ms := &c.machines
	ms.once.Do(func() {
		for _, name := range slices.Sorted(maps.Keys(c.Machines)) {
			var ps []*regexp.Regexp
			for _, p := range c.Machines[name] {
				if g := glob(p); g != nil {
					ps = append(ps, g)
				}
			}
			ms.names = append(ms.names, name)
			ms.patterns = append(ms.patterns, ps)
		}
	})
	if slices.Contains(ms.names, host) {
		return host
	}
	for i, ps := range ms.patterns {
		for _, p := range ps {
			if p.MatchString(host) {
				return ms.names[i]
			}
		}
	}
	return host
}

// Values of Config.OutsideSpans.
const (
	OutsideInline     = "inline"
	OutsideBackground = "background"
)

// OutsideSpansOperation names the operation that carries a component's CPU
// time outside spans when Config.OutsideSpans is "background".
const OutsideSpansOperation = "outside spans"

// methodOnly reports whether a span name says no more than an HTTP
// method, as instrumentations name the server spans of a request whose
// route they do not know ("GET", "HTTP GET", "HTTP" for an unknown
// method; Zipkin's Brave "get").
func methodOnly(name string) bool {
	switch strings.ToUpper(strings.TrimPrefix(name, "HTTP ")) {
	case "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "_OTHER", "HTTP":
		return true
	}
	return false
}

// inWindow reports whether a request that arrived at t (Unix nanoseconds)
// lies in the configured time window.
func (c *Config) inWindow(t int64) bool {
	return c == nil || (c.From == 0 || t >= c.From) && (c.To == 0 || t < c.To)
}

// window says the configured time window in words.
func (c *Config) window() string {
	switch {
	case c.From != 0 && c.To != 0:
		return "from " + stamp(c.From) + " to " + stamp(c.To)
	case c.From != 0:
		return "from " + stamp(c.From)
	case c.To != 0:
		return "until " + stamp(c.To)
	}
	return "(none)"
}

// background reports whether the CPU outside spans is background work.
func (c *Config) background() bool { return c == nil || c.OutsideSpans != OutsideInline }

// PassiveConfig declares one pool or lock.
type PassiveConfig struct {
	Capacity int `yaml:"capacity"`
	// Calls lists the calls whose every one holds a unit, as a
	// connection pool around database queries: traced operations
	// (`component/operation`) or calls to a system seen only by its
	// clients' spans (`peer/span name`, the peer its peer.service, else
	// db.system, else server.address), each a glob (`*`, `?`).
	Calls []string `yaml:"calls"`
	// Callers restricts Calls to the calls of these components (globs);
	// empty, every caller's. A pool in each of two services needs one
	// entry each.
	Callers []string `yaml:"callers"`
	// Operations lists operations that hold a unit while they run, as a
	// lock or semaphore inside a service.
	Operations []string `yaml:"operations"`
	// PerReplica, true, makes the resource one of Capacity units in each
	// replica of the host its holders run on (a connection pool or a
	// mutex in each process); false, one over the system (a lock in a
	// database, a limit a gateway enforces for all). Unset, it is one
	// over the system, with a warning where its holders run on replicas.
	PerReplica *bool `yaml:"per_replica"`
}

// declaredAround returns, sorted, the passive resources the configuration
// declares around operation id (PassiveConfig.Operations).
func (c *Config) declaredAround(id string) []string {
	if c == nil {
		return nil
	}
	var out []string
	for name, pc := range c.Passive {
		if slices.Contains(pc.Operations, id) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// HostConfig describes one machine.
type HostConfig struct {
	Cores int     `yaml:"cores"`
	Speed float64 `yaml:"speed"`
	// Scheduling is how the machine's CPU serves its threads in the
	// model: ps (processor sharing, the default), rr (round-robin with
	// Quantum, as an operating system runs threads a slice at a time;
	// Linux's slice is 0.75 ms × (1 + log₂ of its CPUs, at most 8)) or
	// fcfs.
	Scheduling string `yaml:"scheduling"`
	// Quantum is rr's time slice, a duration such as "1.5ms".
	Quantum string `yaml:"quantum"`
	// Limit is the CPU limit of each of the host's replicas (a pod's or
	// container's), in cores ("1.5") or millicores ("500m"), and Period
	// its CFS period (a duration, default 100ms). Without it the limit
	// comes from the metrics, where they state one; "0" is none, whatever
	// the metrics state.
	Limit  string `yaml:"limit"`
	Period string `yaml:"period"`
}

// limit returns the host's CPU limit in cores (0: none given) and its
// period in seconds (0: the default).
func (h HostConfig) limit() (cores, period float64, err error) {
	if h.Limit != "" {
		if cores, err = model.ParseCores(h.Limit); err != nil {
			return 0, 0, fmt.Errorf("limit: %w", err)
		}
		if cores != 0 && cores < model.MinLimit {
			return 0, 0, fmt.Errorf("limit: %s is below %g cores", h.Limit, model.MinLimit)
		}
	}
	if h.Period != "" {
		if h.Limit == "" {
			return 0, 0, fmt.Errorf("period %s: give the limit it is the period of", h.Period)
		}
		period, err = model.ParseDuration(h.Period)
		if err != nil || period < model.MinPeriod || period > model.MaxPeriod {
			return 0, 0, fmt.Errorf("period: %q is not a duration from %s to %s", h.Period, model.FormatDuration(model.MinPeriod), model.FormatDuration(model.MaxPeriod))
		}
	}
	return cores, period, nil
}

// cpu returns the host's scheduling and quantum (seconds) for the model.
func (h HostConfig) cpu() (model.Scheduling, float64, error) {
	var q float64
	if h.Quantum != "" {
		var err error
		if q, err = model.ParseDuration(h.Quantum); err != nil || !(q > 0) {
			return "", 0, fmt.Errorf("quantum: %q is not a positive duration", h.Quantum)
		}
	}
	switch s := model.Scheduling(h.Scheduling); s {
	case "", model.PS, model.FCFS:
		if q > 0 {
			return "", 0, fmt.Errorf("quantum %s: only scheduling %s has one", h.Quantum, model.RR)
		}
		if s == "" {
			s = model.PS
		}
		return s, 0, nil
	case model.RR:
		if !(q > 0) {
			return "", 0, fmt.Errorf("scheduling %s needs a quantum", model.RR)
		}
		return s, q, nil
	default:
		return "", 0, fmt.Errorf("scheduling: %q is none of %s, %s, %s", h.Scheduling, model.PS, model.RR, model.FCFS)
	}
}

// LoadConfig reads a configuration file. Unknown keys are errors.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) { // an empty file is an empty configuration
		return nil, decodeError(path, err)
	}
	if err := c.check(); err != nil {
		if le := (*lineError)(nil); errors.As(err, &le) && le.line > 0 {
			return nil, fmt.Errorf("%s:%d: %w", path, le.line, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// The YAML decoder's messages for a key it does not know and a value it
// cannot set, which decodeError says in the configuration's terms.
var (
	unknownKeyRE = regexp.MustCompile(`^line (\d+): field (\S+) not found in type \S+$`)
	badValueRE   = regexp.MustCompile("^line (\\d+): cannot unmarshal !!\\w+ `(.*)` into (\\S+)$")
	badNodeRE    = regexp.MustCompile(`^line (\d+): cannot unmarshal !!(\w+) into (\S+)$`)
	syntaxRE     = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

// decodeError says on one line, file:line first, what the YAML decoder
// found wrong: every field it could not set, and a syntax error's
// message with its newlines escaped.
func decodeError(path string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		msg := strings.ReplaceAll(err.Error(), "\n", `\n`)
		if m := syntaxRE.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("%s:%s: YAML syntax: %s", path, m[1], m[2])
		}
		return fmt.Errorf("%s: %s", path, msg)
	}
	var msgs []string
	for _, e := range te.Errors {
		if m := unknownKeyRE.FindStringSubmatch(e); m != nil {
			e = fmt.Sprintf("%s:%s: unknown key %q", path, m[1], m[2])
		} else if m := badValueRE.FindStringSubmatch(e); m != nil {
			e = fmt.Sprintf("%s:%s: want %s, not %q", path, m[1], goTypeWords(m[3]), m[2])
		} else if m := badNodeRE.FindStringSubmatch(e); m != nil {
			found := map[string]string{"seq": "a list", "map": "a map"}[m[2]]
			if found == "" {
				found = "!!" + m[2]
			}
			e = fmt.Sprintf("%s:%s: want %s, not %s", path, m[1], goTypeWords(m[3]), found)
		} else {
			e = path + ": " + strings.ReplaceAll(e, "\n", `\n`)
		}
		msgs = append(msgs, e)
	}
	return errors.New(strings.Join(msgs, "; "))
}

// goTypeWords says what a value of a configuration field's Go type is.
func goTypeWords(typ string) string {
	switch {
	case typ == "int":
		return "a whole number"
	case typ == "float64":
		return "a number"
	case typ == "bool":
		return "true or false"
	case typ == "string":
		return "a single value"
	case strings.HasPrefix(typ, "[]"):
		return "a list"
	}
	return "a map of names to settings"
}

// check reports values the configuration does not allow.
func (c *Config) check() error {
	if err := checkRules("components", c.Components); err != nil {
		return err
	}
	if err := checkRules("operations", c.Operations); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(c.Hosts)) {
		if _, _, err := c.Hosts[name].cpu(); err != nil {
			return fmt.Errorf("hosts: %s: %w", name, err)
		}
		if _, _, err := c.Hosts[name].limit(); err != nil {
			return fmt.Errorf("hosts: %s: %w", name, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Machines)) {
		if name == "" {
			return errors.New("machines: a machine without a name")
		}
		if len(c.Machines[name]) == 0 || slices.Contains(c.Machines[name], "") {
			return fmt.Errorf("machines: %s: give the patterns of its hosts, such as [\"*\"] or [web-*, db-*]", name)
		}
	}
	if c.From != 0 && c.To != 0 && c.From >= c.To {
		return fmt.Errorf("the time window ends (%s) before it starts (%s)", stamp(c.To), stamp(c.From))
	}
	if c.Sampling < 0 || c.Sampling > 1 || c.Sampling != c.Sampling {
		return fmt.Errorf("sampling: %g is not a probability in (0, 1]", c.Sampling)
	}
	for _, name := range slices.Sorted(maps.Keys(c.SlotQueues)) {
		if q := c.SlotQueues[name]; q != SlotQueuesOne && q != SlotQueuesEach {
			return fmt.Errorf("slot_queues: %s: %q is neither %s nor %s", name, q, SlotQueuesOne, SlotQueuesEach)
		}
	}
	switch c.OutsideSpans {
	case "", OutsideInline, OutsideBackground:
		return nil
	}
	return fmt.Errorf("outside_spans: %q is neither %s nor %s", c.OutsideSpans, OutsideInline, OutsideBackground)
}

// The values of Config.SlotQueues.
const (
	SlotQueuesOne  = "one"
	SlotQueuesEach = "each"
)

// slotQueues is what the configuration says of component comp's slots'
// queues (Config.SlotQueues), by its name or "*", and whether it says.
func (c *Config) slotQueues(comp string) (string, bool) {
	if c == nil {
		return "", false
	}
	return perComponent(c.SlotQueues, comp)
}

// component is the component of an operation's span, whose operation
// extraction names op.
func (c *Config) component(sp *ingest.Span, op string) string {
	if name, ok := c.ruleComponent(sp, op); ok {
		return strings.ReplaceAll(name, "/", "-")
	}
	return c.serviceComponent(sp.Service)
}

// serviceComponent is the component of the service named name.
func (c *Config) serviceComponent(name string) string {
	if name == "" {
		name = "unknown"
	}
	if c != nil {
		if r, ok := c.Rename[name]; ok {
			name = r
		}
	}
	// The first slash of a reference ends the component name.
	return strings.ReplaceAll(name, "/", "-")
}

// operation is the operation name of a span that starts an operation: the
// HTTP route for HTTP servers, else the span name, identifiers folded.
func (c *Config) operation(sp *ingest.Span) string {
	name := sp.Name
	switch {
	case sp.HTTPRoute != "":
		name = sp.HTTPRoute
		if sp.HTTPMethod != "" {
			name = sp.HTTPMethod + " " + sp.HTTPRoute
		}
	case sp.URLPath != "" && methodOnly(sp.Name):
		// An HTTP server that does not know its route names its spans
		// by the method alone: the path, identifiers folded below, tells
		// the endpoints apart.
		method := sp.HTTPMethod
		if method == "" {
			method = strings.ToUpper(strings.TrimPrefix(sp.Name, "HTTP "))
		}
		path, _, _ := strings.Cut(sp.URLPath, "?")
		name = method + " " + path
	}
	if c == nil || !c.NoIDFolding {
		name = foldIDs(name)
	}
	if r, ok := c.ruleOperation(sp, name); ok {
		name = r
	}
	if name == "" {
		name = "unnamed"
	}
	return name
}

// opID is `component/operation` for a span that starts an operation.
func (c *Config) opID(sp *ingest.Span) string {
	op := c.operation(sp)
	return c.component(sp, op) + "/" + op
}

// DefaultSession is the attribute that identifies a session where the
// configuration names none: OpenTelemetry's semantic convention.
const DefaultSession = "session.id"

// NoSession as Config.Session follows no sessions: every workload is open.
const NoSession = "none"

// sessionAttr is the attribute whose requests form the closed workload of
// sessions, or "" for none.
func (c *Config) sessionAttr() string {
	switch {
	case c == nil || c.Session == "":
		return DefaultSession
	case c.Session == NoSession:
		return ""
	}
	return c.Session
}

// sessionNamed reports whether the configuration names the session
// attribute, rather than taking the default.
func (c *Config) sessionNamed() bool {
	return c != nil && c.Session != "" && c.Session != NoSession
}

// Attributes lists the span attributes readers must keep for folding
// (ingest.Options.Attributes): the parameters, the session id and those
// the component and operation rules match, each once.
func (c *Config) Attributes() []string {
	if c == nil {
		return []string{DefaultSession}
	}
	out := slices.Clone(c.Params)
	add := func(k string) {
		if k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	add(c.sessionAttr())
	for _, r := range slices.Concat(c.Components, c.Operations) {
		for _, k := range slices.Sorted(maps.Keys(r.Attributes)) {
			add(k)
		}
	}
	return out
}

// warnUnusedConfig warns about the parts of the configuration that the
// traces gave nothing to: most often a typo, which would otherwise change
// the model without a word. (Hosts, cpu_slots and passive resources are
// checked where they are applied.)
func (g *generator) warnUnusedConfig() {
	cfg := g.cfg
	if cfg == nil {
		return
	}
	var comps []string
	for _, c := range g.m.Components {
		comps = append(comps, c.Name)
	}
	slices.Sort(comps)
	for i, r := range cfg.Components {
		if !slices.Contains(comps, strings.ReplaceAll(r.Component, "/", "-")) {
			g.rep.warnf("configuration: components[%d]: no operation's span matches it, so there is no component %s (components: %s)", i, r.Component, textout.Abbreviate(comps, 8))
		}
	}
	names := map[string]bool{}
	for _, op := range g.s.ops {
		names[op.name] = true
	}
	for i, r := range cfg.Operations {
		if !names[r.Name] {
			g.rep.warnf("configuration: operations[%d]: no operation's span matches it, so no operation is named %s", i, r.Name)
		}
	}
	for _, from := range slices.Sorted(maps.Keys(cfg.Rename)) {
		if to := cfg.Rename[from]; !slices.Contains(comps, to) {
			g.rep.warnf("configuration: rename: %s: no service of that name in the traces, so no component is named %s (components: %s)", from, to, textout.Abbreviate(comps, 8))
		}
	}
	carried := map[string]bool{}
	for _, e := range g.s.entries {
		for p, byBucket := range e.params {
			if len(byBucket) > 0 {
				carried[p] = true
			}
		}
	}
	for _, p := range cfg.Params {
		if !carried[p] {
			g.rep.warnf("configuration: params: %s: no request carries that attribute (on its entry span or below), so no operation depends on it", p)
		}
	}
	if cfg.sessionNamed() && g.s.Sampled < g.s.Traces { // else warnSampled says why
		switch ss := g.s.sessions; {
		case ss == nil || ss.requests == 0:
			g.rep.warnf("configuration: session: no request carries the attribute %s (on its entry span or below), so every workload is open", cfg.Session)
		case g.m.Workload(sessionWorkload) == nil:
			g.rep.warnf("configuration: session: %d requests carry %s, but at no entry operation do %.0f %% of the requests, so every workload is open", ss.requests, cfg.Session, 100*sessionShare)
		}
	}
}

// rareOperations is the number of operations from which extraction looks
// at how many were seen at most twice.
const rareOperations = 50

// warnRareOperations warns when most of many operations were seen at most
// twice: their span names most likely carry values (a product's slug, a
// user's name) that make one operation of each request.
func (g *generator) warnRareOperations() {
	if len(g.s.ops) < rareOperations {
		return
	}
	var rare []string
	for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
		if g.s.ops[id].count <= 2 {
			rare = append(rare, id)
		}
	}
	if 2*len(rare) > len(g.s.ops) {
		g.rep.warnf("%d of %d operations were seen at most twice, such as %s: their span names most likely carry values, which make an operation and a workload of almost every request; instrumentation that sets http.route, or rules in --config (operations: [{name: \"GET /p/{slug}\", span: \"GET /p/*\"}]), make them one",
			len(rare), len(g.s.ops), textout.Abbreviate(rare, 3))
	}
}
