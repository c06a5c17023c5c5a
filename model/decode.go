package model

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads, decodes and validates the model file at path (YAML, or JSON,
// which is YAML). Problems come back as Errors naming the file, line and model
// path.
func Load(path string) (*Model, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read model: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes and validates a model. file names the source in errors and
// may be empty.
func Parse(data []byte, file string) (*Model, error) {
	m, err := Decode(data, file)
	if err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// Decode decodes a model without validating the references between its parts.
// Values (durations, distributions, probabilities) are checked as they are
// read.
func Decode(data []byte, file string) (*Model, error) {
	d := &decoder{errorSink: errorSink{file: file}}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			d.add(Pos{}, "empty model file")
			return nil, d.err()
		}
		d.add(Pos{Line: yamlErrorLine(err)}, "%s", yamlErrorMessage(err))
		return nil, d.err()
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		d.add(Pos{Line: extra.Line}, "more than one YAML document; a model is one document")
		return nil, d.err()
	}
	m := &Model{File: file}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	repairFlow(root, 0)
	d.model(root, m)
	if err := d.err(); err != nil {
		return nil, err
	}
	return m, nil
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

func yamlErrorLine(err error) int {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func yamlErrorMessage(err error) string {
	msg := yamlLineRE.ReplaceAllString(err.Error(), "")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "\n", "; ")
	return "YAML syntax: " + msg
}

type decoder struct {
	errorSink
	// nsteps counts decoded steps, so that YAML aliases that refer to each
	// other cannot make a small file expand into an enormous model.
	nsteps int
}

// maxSteps bounds the number of steps in one model.
const maxSteps = 1 << 18

func (d *decoder) pos(n *yaml.Node, path string) Pos {
	return Pos{Line: n.Line, Col: n.Column, Path: path}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// kindName names a YAML node kind for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}

// field is one key of a YAML map, with its value.
type field struct {
	key   string
	keyN  *yaml.Node
	value *yaml.Node
}

// fields returns the entries of a map node, reporting duplicates and, when
// known is not nil, keys outside it. It returns nil and reports an error when
// n is not a map.
func (d *decoder) fields(n *yaml.Node, path string, known ...string) []field {
	n = d.deref(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.add(d.pos(n, path), "want a map, found %s", kindName(n))
		return nil
	}
	out := make([]field, 0, len(n.Content)/2)
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := d.deref(n.Content[i]), d.deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.add(d.pos(k, path), "a key must be a plain value, found %s", kindName(k))
			continue
		}
		if k.Value == "<<" {
			d.add(d.pos(k, path), "merge keys (<<) are not supported")
			continue
		}
		if seen[k.Value] {
			d.add(d.pos(k, join(path, k.Value)), "duplicate key %q", k.Value)
			continue
		}
		seen[k.Value] = true
		if known != nil && !slices.Contains(known, k.Value) {
			d.add(d.pos(k, join(path, k.Value)), "unknown key %q (want %s)", k.Value, strings.Join(known, ", "))
			continue
		}
		out = append(out, field{key: k.Value, keyN: k, value: v})
	}
	return out
}

// deref follows YAML aliases, which a model may use to share a list of steps.
func (d *decoder) deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// items returns the elements of a list node (null is an empty list).
func (d *decoder) items(n *yaml.Node, path string) []*yaml.Node {
	n = d.deref(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.add(d.pos(n, path), "want a list, found %s", kindName(n))
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = d.deref(c)
	}
	return out
}

// scalar returns the text of a plain value.
func (d *decoder) scalar(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.add(d.pos(n, path), "want a value, found %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) str(n *yaml.Node, path string) string {
	s, _ := d.scalar(n, path)
	return s
}

func (d *decoder) boolean(n *yaml.Node, path string) bool {
	s, ok := d.scalar(n, path)
	if !ok {
		return false
	}
	switch s {
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	}
	d.add(d.pos(n, path), "want true or false, found %q", s)
	return false
}

func (d *decoder) integer(n *yaml.Node, path string, min int) int {
	s, ok := d.scalar(n, path)
	if !ok {
		return 0
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		d.add(d.pos(n, path), "want a whole number, found %q", s)
		return 0
	}
	if v < min {
		d.add(d.pos(n, path), "must be at least %d, found %d", min, v)
	}
	return v
}

func (d *decoder) number(n *yaml.Node, path string) float64 {
	s, ok := d.scalar(n, path)
	if !ok {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v != v {
		d.add(d.pos(n, path), "want a number, found %q", s)
		return 0
	}
	return v
}

func (d *decoder) duration(n *yaml.Node, path string) float64 {
	s, ok := d.scalar(n, path)
	if !ok {
		return 0
	}
	v, err := ParseDuration(s)
	if err != nil {
		d.add(d.pos(n, path), "%v", err)
	}
	return v
}

func (d *decoder) rate(n *yaml.Node, path string) float64 {
	s, ok := d.scalar(n, path)
	if !ok {
		return 0
	}
	v, err := ParseRate(s)
	if err != nil {
		d.add(d.pos(n, path), "%v", err)
	}
	return v
}

func (d *decoder) model(n *yaml.Node, m *Model) {
	if n.Kind != yaml.MappingNode {
		d.add(d.pos(n, ""), "a model is a map with the keys perfcast, hosts, components, passive and workload; found %s", kindName(n))
		return
	}
	var haveVersion bool
	for _, f := range d.fields(n, "", "perfcast", "name", "description", "hosts", "components", "passive", "workload") {
		switch f.key {
		case "perfcast":
			haveVersion = true
			s, _ := d.scalar(f.value, f.key)
			v, err := strconv.Atoi(s)
			if err != nil || v != Version {
				d.add(d.pos(f.value, f.key), "unsupported model version %q; this perfcast reads version %d", s, Version)
			}
			m.Version = v
		case "name":
			m.Name = d.str(f.value, f.key)
		case "description":
			m.Description = d.str(f.value, f.key)
		case "hosts":
			for _, h := range d.fields(f.value, f.key) {
				m.Hosts = append(m.Hosts, d.host(h, join(f.key, h.key)))
			}
		case "components":
			for _, c := range d.fields(f.value, f.key) {
				m.Components = append(m.Components, d.component(c, join(f.key, c.key)))
			}
		case "passive":
			for _, p := range d.fields(f.value, f.key) {
				m.Passive = append(m.Passive, d.passive(p, join(f.key, p.key)))
			}
		case "workload":
			for _, w := range d.fields(f.value, f.key) {
				m.Workloads = append(m.Workloads, d.workload(w, join(f.key, w.key)))
			}
		}
	}
	if !haveVersion {
		d.add(Pos{Line: n.Line, Col: n.Column}, "missing `perfcast: %d` (the model format version)", Version)
	}
}

func (d *decoder) host(f field, path string) *Host {
	h := &Host{Name: f.key, Replicas: 1, Balancer: RoundRobin, Pos: d.pos(f.keyN, path),
		CPU: CPU{Cores: 1, Speed: 1, Scheduling: PS}}
	for _, g := range d.fields(f.value, path, "replicas", "balancer", "cpu", "disks") {
		p := join(path, g.key)
		switch g.key {
		case "replicas":
			h.Replicas = d.integer(g.value, p, 1)
		case "balancer":
			h.Balancer = Balancer(d.str(g.value, p))
			if !slices.Contains([]string{string(RoundRobin), string(Random), string(LeastBusy), string(LeastOfTwo)}, string(h.Balancer)) {
				d.add(d.pos(g.value, p), "unknown balancer %q (want round-robin, random, least-busy or least-of-two)", h.Balancer)
			}
		case "cpu":
			for _, c := range d.fields(g.value, p, "cores", "speed", "speed_curve", "speed_variation", "speed_window", "scheduling", "quantum", "limit", "period") {
				cp := join(p, c.key)
				switch c.key {
				case "cores":
					h.CPU.Cores = d.integer(c.value, cp, 1)
				case "speed":
					h.CPU.Speed = d.number(c.value, cp)
					if h.CPU.Speed <= 0 {
						d.add(d.pos(c.value, cp), "speed must be positive")
					}
				case "speed_variation":
					h.CPU.SpeedVariation = d.number(c.value, cp)
				case "speed_window":
					h.CPU.SpeedWindow = d.duration(c.value, cp)
				case "speed_curve":
					for i, it := range d.items(c.value, cp) {
						ip := fmt.Sprintf("%s[%d]", cp, i)
						var pt SpeedPoint
						for _, a := range d.fields(it, ip, "utilization", "factor") {
							switch a.key {
							case "utilization":
								pt.Utilization = d.number(a.value, join(ip, a.key))
							case "factor":
								pt.Factor = d.number(a.value, join(ip, a.key))
							}
						}
						h.CPU.SpeedCurve = append(h.CPU.SpeedCurve, pt)
					}
				case "scheduling":
					h.CPU.Scheduling = Scheduling(d.str(c.value, cp))
					if !slices.Contains([]string{string(PS), string(FCFS), string(RR)}, string(h.CPU.Scheduling)) {
						d.add(d.pos(c.value, cp), "unknown CPU scheduling %q (want ps, fcfs or rr)", h.CPU.Scheduling)
					}
				case "quantum":
					h.CPU.Quantum = d.duration(c.value, cp)
				case "limit":
					if s, ok := d.scalar(c.value, cp); ok {
						v, err := ParseCores(s)
						if err != nil {
							d.add(d.pos(c.value, cp), "%v", err)
						}
						h.CPU.Limit = v
					}
				case "period":
					h.CPU.Period = d.duration(c.value, cp)
				}
			}
		case "disks":
			for _, k := range d.fields(g.value, p) {
				dp := join(p, k.key)
				disk := &Disk{Name: k.key, Servers: 1, Scheduling: FCFS, Pos: d.pos(k.keyN, dp)}
				for _, a := range d.fields(k.value, dp, "servers", "scheduling") {
					ap := join(dp, a.key)
					switch a.key {
					case "servers":
						disk.Servers = d.integer(a.value, ap, 1)
					case "scheduling":
						disk.Scheduling = Scheduling(d.str(a.value, ap))
						if disk.Scheduling != FCFS && disk.Scheduling != RandomOrder {
							d.add(d.pos(a.value, ap), "unknown disk scheduling %q (want fcfs or random)", disk.Scheduling)
						}
					}
				}
				h.Disks = append(h.Disks, disk)
			}
		}
	}
	return h
}

func (d *decoder) component(f field, path string) *Component {
	c := &Component{Name: f.key, Queue: QueueUnlimited, OnFull: Block, Pos: d.pos(f.keyN, path)}
	for _, g := range d.fields(f.value, path, "host", "threads", "queue", "on_full", "operations") {
		p := join(path, g.key)
		switch g.key {
		case "host":
			c.Host = d.str(g.value, p)
		case "threads":
			c.Threads = d.integer(g.value, p, 1)
		case "queue":
			c.Queue = d.integer(g.value, p, 0)
		case "on_full":
			c.OnFull = OnFull(d.str(g.value, p))
			if c.OnFull != Block && c.OnFull != Drop {
				d.add(d.pos(g.value, p), "unknown on_full %q (want block or drop)", c.OnFull)
			}
		case "operations":
			for _, o := range d.fields(g.value, p) {
				op := join(p, o.key)
				oper := &Operation{Name: o.key, Component: c.Name, Pos: d.pos(o.keyN, op)}
				for _, s := range d.fields(o.value, op, "steps") {
					oper.Steps = d.steps(s.value, join(op, "steps"))
				}
				c.Operations = append(c.Operations, oper)
			}
		}
	}
	return c
}

func (d *decoder) passive(f field, path string) *Passive {
	r := &Passive{Name: f.key, Capacity: 1, Pos: d.pos(f.keyN, path)}
	for _, g := range d.fields(f.value, path, "capacity", "host", "before_span", "partitioned") {
		p := join(path, g.key)
		switch g.key {
		case "capacity":
			r.Capacity = d.integer(g.value, p, 1)
		case "host":
			r.Host = d.str(g.value, p)
		case "before_span":
			r.BeforeSpan = d.boolean(g.value, p)
		case "partitioned":
			r.Partitioned = d.boolean(g.value, p)
		}
	}
	return r
}

func (d *decoder) workload(f field, path string) *Workload {
	w := &Workload{Name: f.key, Pos: d.pos(f.keyN, path)}
	for _, g := range d.fields(f.value, path, "open", "closed", "params", "steps") {
		p := join(path, g.key)
		switch g.key {
		case "open":
			w.Open = &Open{CV: 1}
			for _, a := range d.fields(g.value, p, "rate", "cv") {
				ap := join(p, a.key)
				switch a.key {
				case "rate":
					w.Open.Rate = d.rate(a.value, ap)
				case "cv":
					w.Open.CV = d.number(a.value, ap)
					if w.Open.CV <= 0 {
						d.add(d.pos(a.value, ap), "cv must be positive")
					}
				}
			}
		case "closed":
			w.Closed = &Closed{}
			for _, a := range d.fields(g.value, p, "users", "think") {
				ap := join(p, a.key)
				switch a.key {
				case "users":
					w.Closed.Users = d.integer(a.value, ap, 0)
				case "think":
					w.Closed.Think = d.dist(a.value, ap)
				}
			}
		case "params":
			for _, a := range d.fields(g.value, p) {
				w.Params = append(w.Params, d.param(a, join(p, a.key)))
			}
		case "steps":
			w.Steps = d.steps(g.value, p)
		}
	}
	switch {
	case w.Open == nil && w.Closed == nil:
		d.add(w.Pos, "a workload needs `open: {rate: ...}` or `closed: {users: ..., think: ...}`")
	case w.Open != nil && w.Closed != nil:
		d.add(w.Pos, "a workload is open or closed, not both")
	}
	return w
}

func (d *decoder) param(f field, path string) *Param {
	pr := &Param{Name: f.key, Pos: d.pos(f.keyN, path)}
	for _, g := range d.fields(f.value, path, "pmf") {
		p := join(path, g.key)
		sum := 0.0
		for _, v := range d.fields(g.value, p) {
			prob := d.number(v.value, join(p, v.key))
			if prob < 0 || prob > 1 {
				d.add(d.pos(v.value, join(p, v.key)), "a probability must lie in [0, 1], found %g", prob)
			}
			pr.Values = append(pr.Values, v.key)
			pr.Probs = append(pr.Probs, prob)
			sum += prob
		}
		if len(pr.Values) == 0 {
			d.add(d.pos(g.value, p), "a parameter needs at least one value")
		} else if !probSumOK(sum) {
			d.add(d.pos(g.value, p), "probabilities sum to %g, not 1", sum)
		}
	}
	if pr.Values == nil {
		d.add(pr.Pos, "a parameter is written `{pmf: {VALUE: PROBABILITY, ...}}`")
	}
	return pr
}

// probTolerance is how far from 1 a set of probabilities may sum.
const probTolerance = 1e-6

func probSumOK(sum float64) bool { return sum > 1-probTolerance && sum < 1+probTolerance }

func (d *decoder) dist(n *yaml.Node, path string) Dist {
	if n.Kind == yaml.MappingNode {
		fs := d.fields(n, path, "empirical", "histogram")
		if len(fs) != 1 {
			if len(fs) > 1 {
				d.add(d.pos(n, path), "a distribution object has one key, empirical or histogram")
			}
			return Dist{}
		}
		f := fs[0]
		p := join(path, f.key)
		switch f.key {
		case "empirical":
			var values, weights []float64
			for _, g := range d.fields(f.value, p, "values", "weights") {
				gp := join(p, g.key)
				for i, it := range d.items(g.value, gp) {
					if g.key == "values" {
						values = append(values, d.duration(it, index(gp, i)))
					} else {
						weights = append(weights, d.number(it, index(gp, i)))
					}
				}
			}
			dist, err := NewEmpirical(values, weights)
			if err != nil {
				d.add(d.pos(f.value, p), "%v", err)
			}
			return dist
		default:
			var bounds, counts []float64
			for _, g := range d.fields(f.value, p, "bounds", "counts") {
				gp := join(p, g.key)
				for i, it := range d.items(g.value, gp) {
					if g.key == "bounds" {
						bounds = append(bounds, d.duration(it, index(gp, i)))
					} else {
						counts = append(counts, d.number(it, index(gp, i)))
					}
				}
			}
			dist, err := NewHistogram(bounds, counts)
			if err != nil {
				d.add(d.pos(f.value, p), "%v", err)
			}
			return dist
		}
	}
	s, ok := d.scalar(n, path)
	if !ok {
		return Dist{}
	}
	dist, err := ParseDist(s)
	if err != nil {
		d.add(d.pos(n, path), "%v", err)
	}
	return dist
}

func (d *decoder) count(n *yaml.Node, path string) Count {
	if n.Kind == yaml.MappingNode {
		var c Count
		for _, f := range d.fields(n, path, "pmf") {
			p := join(path, f.key)
			var values []int
			var probs []float64
			for _, g := range d.fields(f.value, p) {
				gp := join(p, g.key)
				v, err := strconv.Atoi(g.key)
				if err != nil || v < 0 {
					d.add(d.pos(g.keyN, gp), "a loop count must be a whole number ≥ 0, found %q", g.key)
					continue
				}
				values = append(values, v)
				probs = append(probs, d.number(g.value, gp))
			}
			var err error
			if c, err = NewPMF(values, probs); err != nil {
				d.add(d.pos(f.value, p), "%v", err)
			}
		}
		return c
	}
	s, ok := d.scalar(n, path)
	if !ok {
		return Count{}
	}
	c, err := ParseCount(s)
	if err != nil {
		d.add(d.pos(n, path), "%v", err)
	}
	return c
}

// stepKeyList lists the step keys for messages.
const stepKeyList = "cpu, disk, delay, call, send, loop, branch, parallel, hold, acquire, release, switch"

func (d *decoder) steps(n *yaml.Node, path string) []Step {
	items := d.items(n, path)
	out := make([]Step, 0, len(items))
	for i, it := range items {
		if s, ok := d.step(it, index(path, i)); ok {
			out = append(out, s)
		}
	}
	return out
}

func (d *decoder) step(n *yaml.Node, path string) (Step, bool) {
	s := Step{Pos: d.pos(n, path)}
	if d.nsteps++; d.nsteps > maxSteps {
		if d.nsteps == maxSteps+1 {
			d.add(s.Pos, "more than %d steps (YAML aliases expand to too large a model)", maxSteps)
		}
		return s, false
	}
	fs := d.fields(n, path)
	if n.Kind != yaml.MappingNode {
		return s, false
	}
	var kind *field
	var units *field
	for i := range fs {
		f := &fs[i]
		if f.key == "units" {
			units = f
			continue
		}
		k := stepKind(f.key)
		if k == 0 {
			d.add(d.pos(f.keyN, join(path, f.key)), "unknown step %q (want one of %s)", f.key, stepKeyList)
			return s, false
		}
		if kind != nil {
			d.add(s.Pos, "a step has one kind, found %q and %q", kind.key, f.key)
			return s, false
		}
		kind = f
	}
	if kind == nil {
		d.add(s.Pos, "empty step (want one of %s)", stepKeyList)
		return s, false
	}
	s.Kind = stepKind(kind.key)
	p := join(path, kind.key)
	v := kind.value
	if units != nil && s.Kind != StepAcquire && s.Kind != StepRelease {
		d.add(d.pos(units.keyN, join(path, "units")), "units go with acquire and release (or inside hold)")
	}
	switch s.Kind {
	case StepCPU, StepDelay:
		s.Demand = d.dist(v, p)
	case StepDisk:
		if v.Kind == yaml.MappingNode && !hasKey(v, "empirical") && !hasKey(v, "histogram") {
			for _, f := range d.fields(v, p, "name", "demand") {
				if f.key == "name" {
					s.Disk = d.str(f.value, join(p, f.key))
				} else {
					s.Demand = d.dist(f.value, join(p, f.key))
				}
			}
		} else {
			s.Demand = d.dist(v, p)
		}
	case StepCall, StepSend:
		s.Target = d.str(v, p)
	case StepLoop:
		s.Times = ConstCount(1)
		seenTimes := false
		for _, f := range d.fields(v, p, "times", "steps") {
			if f.key == "times" {
				seenTimes = true
				s.Times = d.count(f.value, join(p, f.key))
			} else {
				s.Steps = d.steps(f.value, join(p, f.key))
			}
		}
		if !seenTimes {
			d.add(d.pos(v, p), "a loop needs `times`")
		}
	case StepBranch:
		sum := 0.0
		for i, it := range d.items(v, p) {
			bp := index(p, i)
			b := Branch{Pos: d.pos(it, bp), P: -1}
			for _, f := range d.fields(it, bp, "p", "steps") {
				if f.key == "p" {
					b.P = d.number(f.value, join(bp, "p"))
					if b.P < 0 || b.P > 1 {
						d.add(d.pos(f.value, join(bp, "p")), "a probability must lie in [0, 1], found %g", b.P)
					}
				} else {
					b.Steps = d.steps(f.value, join(bp, "steps"))
				}
			}
			if b.P == -1 {
				d.add(b.Pos, "a branch needs `p`")
				b.P = 0
			}
			sum += b.P
			s.Branches = append(s.Branches, b)
		}
		if len(s.Branches) == 0 {
			d.add(d.pos(v, p), "a branch needs at least one alternative")
		} else if !probSumOK(sum) {
			d.add(d.pos(v, p), "branch probabilities sum to %g, not 1", sum)
		}
	case StepParallel:
		for i, it := range d.items(v, p) {
			s.Parallel = append(s.Parallel, d.steps(it, index(p, i)))
		}
		if len(s.Parallel) == 0 {
			d.add(d.pos(v, p), "parallel needs at least one list of steps")
		}
	case StepHold:
		s.Units = 1
		for _, f := range d.fields(v, p, "resource", "units", "steps") {
			fp := join(p, f.key)
			switch f.key {
			case "resource":
				s.Resource = d.str(f.value, fp)
			case "units":
				s.Units = d.integer(f.value, fp, 1)
			case "steps":
				s.Steps = d.steps(f.value, fp)
			}
		}
		if s.Resource == "" {
			d.add(d.pos(v, p), "hold needs `resource`")
		}
	case StepAcquire, StepRelease:
		s.Resource = d.str(v, p)
		s.Units = 1
		if units != nil {
			s.Units = d.integer(units.value, join(path, "units"), 1)
		}
	case StepSwitch:
		for _, f := range d.fields(v, p, "on", "cases", "default") {
			fp := join(p, f.key)
			switch f.key {
			case "on":
				s.On = d.str(f.value, fp)
			case "cases":
				for _, c := range d.fields(f.value, fp) {
					cp := join(fp, c.key)
					s.Cases = append(s.Cases, Case{Value: c.key, Steps: d.steps(c.value, cp), Pos: d.pos(c.keyN, cp)})
				}
			case "default":
				s.HasDefault = true
				s.Default = d.steps(f.value, fp)
			}
		}
		if s.On == "" {
			d.add(d.pos(v, p), "switch needs `on` (a request parameter, or class)")
		}
	}
	return s, true
}

func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

func stepKind(key string) StepKind {
	for k, name := range stepKeys {
		if name == key && name != "" {
			return StepKind(k)
		}
	}
	return 0
}

// repairFlow mends what YAML's flow syntax does to distribution expressions:
// inside `{...}` and `[...]` a comma separates entries, so
// `{demand: gamma(1ms, cv=0.5)}` reads as the key `demand` with the value
// `gamma(1ms` and a second key `cv=0.5)` without a value. Such pieces are
// joined back wherever parentheses are left open.
func repairFlow(n *yaml.Node, depth int) {
	if n == nil || depth > 1000 {
		return
	}
	switch {
	case n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle != 0:
		out := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			for openParens(v) && i+3 < len(n.Content) && isPlain(n.Content[i+2]) && isNull(n.Content[i+3]) {
				v.Value += ", " + n.Content[i+2].Value
				i += 2
			}
			out = append(out, k, v)
		}
		n.Content = out
	case n.Kind == yaml.SequenceNode && n.Style&yaml.FlowStyle != 0:
		out := n.Content[:0]
		for i := 0; i < len(n.Content); i++ {
			v := n.Content[i]
			for openParens(v) && i+1 < len(n.Content) && isPlain(n.Content[i+1]) {
				v.Value += ", " + n.Content[i+1].Value
				i++
			}
			out = append(out, v)
		}
		n.Content = out
	}
	for _, c := range n.Content {
		repairFlow(c, depth+1)
	}
}

func isPlain(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Style == 0 }

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == ""
}

func openParens(n *yaml.Node) bool {
	return isPlain(n) && strings.Count(n.Value, "(") > strings.Count(n.Value, ")")
}
