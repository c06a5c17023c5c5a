package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Format is a model file syntax.
type Format string

// Formats.
const (
	YAML Format = "yaml"
	JSON Format = "json"
)

// Encode writes the model in the given format. The output is stable: the same
// model always gives the same bytes, with keys in the order of the format's
// description, named entries in the model's order, default values left out,
// and short maps on one line.
func (m *Model) Encode(w io.Writer, f Format) error {
	root := m.node()
	switch f {
	case JSON:
		var buf bytes.Buffer
		if err := writeJSON(&buf, root, ""); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err := w.Write(buf.Bytes())
		return err
	default:
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(root); err != nil {
			return fmt.Errorf("encode model: %w", err)
		}
		return enc.Close()
	}
}

// Marshal returns the model as YAML.
func (m *Model) Marshal() []byte {
	var buf bytes.Buffer
	_ = m.Encode(&buf, YAML)
	return buf.Bytes()
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
func num(f float64) *yaml.Node {
	v := strconv.FormatFloat(f, 'g', -1, 64)
	tag := "!!float"
	if !strings.ContainsAny(v, ".eEIN") {
		tag = "!!int" // a whole number reads as one
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}
}
func integer(n int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(n)}
}
func mapping(flow bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return n
}
func sequence(flow bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return n
}
func put(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, str(key), v)
}

func (m *Model) node() *yaml.Node {
	root := mapping(false)
	put(root, "perfcast", integer(Version))
	if m.Name != "" {
		put(root, "name", str(m.Name))
	}
	if m.Description != "" {
		put(root, "description", str(m.Description))
	}
	if len(m.Hosts) > 0 {
		hosts := mapping(false)
		for _, h := range m.Hosts {
			put(hosts, h.Name, hostNode(h))
		}
		put(root, "hosts", hosts)
	}
	if len(m.Components) > 0 {
		comps := mapping(false)
		for _, c := range m.Components {
			put(comps, c.Name, componentNode(c))
		}
		put(root, "components", comps)
	}
	if len(m.Passive) > 0 {
		ps := mapping(false)
		for _, p := range m.Passive {
			n := mapping(true)
			put(n, "capacity", integer(p.Capacity))
			if p.Host != "" {
				put(n, "host", str(p.Host))
			}
			if p.BeforeSpan {
				put(n, "before_span", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
			}
			if p.Partitioned {
				put(n, "partitioned", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
			}
			put(ps, p.Name, n)
		}
		put(root, "passive", ps)
	}
	if len(m.Workloads) > 0 {
		ws := mapping(false)
		for _, w := range m.Workloads {
			put(ws, w.Name, workloadNode(w))
		}
		put(root, "workload", ws)
	}
	return root
}

func hostNode(h *Host) *yaml.Node {
	n := mapping(false)
	if h.Replicas > 1 {
		put(n, "replicas", integer(h.Replicas))
	}
	if h.Balancer != "" && h.Balancer != RoundRobin {
		put(n, "balancer", str(string(h.Balancer)))
	}
	cpu := mapping(true)
	if h.CPU.Cores > 1 {
		put(cpu, "cores", integer(h.CPU.Cores))
	}
	if h.CPU.Speed != 1 && h.CPU.Speed != 0 {
		put(cpu, "speed", num(h.CPU.Speed))
	}
	if len(h.CPU.SpeedCurve) > 0 {
		curve := sequence(true)
		for _, pt := range h.CPU.SpeedCurve {
			pn := mapping(true)
			put(pn, "utilization", num(pt.Utilization))
			put(pn, "factor", num(pt.Factor))
			curve.Content = append(curve.Content, pn)
		}
		put(cpu, "speed_curve", curve)
	}
	if h.CPU.SpeedVariation != 0 {
		put(cpu, "speed_variation", num(h.CPU.SpeedVariation))
	}
	if h.CPU.SpeedWindow != 0 {
		put(cpu, "speed_window", str(FormatDuration(h.CPU.SpeedWindow)))
	}
	if h.CPU.Scheduling != "" && h.CPU.Scheduling != PS {
		put(cpu, "scheduling", str(string(h.CPU.Scheduling)))
	}
	if h.CPU.Quantum != 0 {
		put(cpu, "quantum", str(FormatDuration(h.CPU.Quantum)))
	}
	if h.CPU.Limit != 0 {
		put(cpu, "limit", num(h.CPU.Limit))
	}
	if h.CPU.Period != 0 {
		put(cpu, "period", str(FormatDuration(h.CPU.Period)))
	}
	if len(cpu.Content) > 0 {
		put(n, "cpu", cpu)
	}
	if len(h.Disks) > 0 {
		disks := mapping(false)
		for _, d := range h.Disks {
			dn := mapping(true)
			if d.Servers > 1 {
				put(dn, "servers", integer(d.Servers))
			}
			if d.Scheduling != "" && d.Scheduling != FCFS {
				put(dn, "scheduling", str(string(d.Scheduling)))
			}
			put(disks, d.Name, dn)
		}
		put(n, "disks", disks)
	}
	if len(n.Content) == 0 {
		n.Style = yaml.FlowStyle
	}
	return n
}

func componentNode(c *Component) *yaml.Node {
	n := mapping(false)
	put(n, "host", str(c.Host))
	if c.Threads != Unlimited {
		put(n, "threads", integer(c.Threads))
	}
	if c.Queue != QueueUnlimited {
		put(n, "queue", integer(c.Queue))
	}
	if c.OnFull != "" && c.OnFull != Block {
		put(n, "on_full", str(string(c.OnFull)))
	}
	ops := mapping(false)
	for _, o := range c.Operations {
		on := mapping(false)
		put(on, "steps", stepsNode(o.Steps))
		put(ops, o.Name, on)
	}
	if len(c.Operations) == 0 {
		ops.Style = yaml.FlowStyle
	}
	put(n, "operations", ops)
	return n
}

func workloadNode(w *Workload) *yaml.Node {
	n := mapping(false)
	if w.Open != nil {
		o := mapping(true)
		put(o, "rate", str(FormatRate(w.Open.Rate)))
		if w.Open.CV != 1 && w.Open.CV != 0 {
			put(o, "cv", num(w.Open.CV))
		}
		put(n, "open", o)
	}
	if w.Closed != nil {
		c := mapping(true)
		put(c, "users", integer(w.Closed.Users))
		put(c, "think", distNode(w.Closed.Think))
		put(n, "closed", c)
	}
	if len(w.Params) > 0 {
		ps := mapping(false)
		for _, p := range w.Params {
			pmf := mapping(true)
			for i, v := range p.Values {
				put(pmf, v, num(p.Probs[i]))
			}
			pn := mapping(true)
			put(pn, "pmf", pmf)
			put(ps, p.Name, pn)
		}
		put(n, "params", ps)
	}
	put(n, "steps", stepsNode(w.Steps))
	return n
}

func distNode(d Dist) *yaml.Node {
	switch d.Kind {
	case DistEmpirical, DistHistogram:
		values, weights := d.Table()
		vs := sequence(true)
		for _, v := range values {
			vs.Content = append(vs.Content, str(FormatDuration(v)))
		}
		ws := sequence(true)
		for _, w := range weights {
			ws.Content = append(ws.Content, num(w))
		}
		body := mapping(true)
		outer := mapping(true)
		if d.Kind == DistEmpirical {
			put(body, "values", vs)
			put(body, "weights", ws)
			put(outer, "empirical", body)
		} else {
			put(body, "bounds", vs)
			put(body, "counts", ws)
			put(outer, "histogram", body)
		}
		return outer
	}
	return str(d.String())
}

func countNode(c Count) *yaml.Node {
	if c.Kind == CountPMF {
		values, probs := c.PMF()
		pmf := mapping(true)
		for i, v := range values {
			put(pmf, strconv.Itoa(v), num(probs[i]))
		}
		n := mapping(true)
		put(n, "pmf", pmf)
		return n
	}
	if c.Kind == CountConst {
		v, _ := strconv.Atoi(c.String())
		return integer(v)
	}
	return str(c.String())
}

func stepsNode(steps []Step) *yaml.Node {
	n := sequence(len(steps) == 0)
	for i := range steps {
		n.Content = append(n.Content, stepNode(&steps[i]))
	}
	return n
}

// leaf reports whether a step list holds only one-line steps, so that it
// reads well on one line.
func leaf(steps []Step) bool {
	if len(steps) > 1 {
		return false
	}
	for _, s := range steps {
		switch s.Kind {
		case StepCPU, StepDelay, StepCall, StepSend, StepAcquire, StepRelease:
		default:
			return false
		}
		if s.Kind != StepCall && s.Kind != StepSend && (s.Demand.Kind == DistEmpirical || s.Demand.Kind == DistHistogram) {
			return false
		}
	}
	return true
}

func flowSteps(steps []Step) *yaml.Node {
	n := stepsNode(steps)
	if leaf(steps) {
		n.Style = yaml.FlowStyle
		for _, c := range n.Content {
			c.Style = yaml.FlowStyle
		}
	}
	return n
}

func stepNode(s *Step) *yaml.Node {
	n := mapping(false)
	key := s.Kind.String()
	switch s.Kind {
	case StepCPU, StepDelay:
		put(n, key, distNode(s.Demand))
	case StepDisk:
		if s.Disk == "" {
			put(n, key, distNode(s.Demand))
		} else {
			d := mapping(true)
			put(d, "name", str(s.Disk))
			put(d, "demand", distNode(s.Demand))
			put(n, key, d)
		}
	case StepCall, StepSend:
		put(n, key, str(s.Target))
	case StepLoop:
		l := mapping(false)
		put(l, "times", countNode(s.Times))
		put(l, "steps", flowSteps(s.Steps))
		put(n, key, l)
	case StepBranch:
		bs := sequence(false)
		for _, b := range s.Branches {
			bn := mapping(false)
			put(bn, "p", num(b.P))
			put(bn, "steps", flowSteps(b.Steps))
			bs.Content = append(bs.Content, bn)
		}
		put(n, key, bs)
	case StepParallel:
		ps := sequence(false)
		for _, list := range s.Parallel {
			ps.Content = append(ps.Content, flowSteps(list))
		}
		put(n, key, ps)
	case StepHold:
		h := mapping(false)
		put(h, "resource", str(s.Resource))
		if s.Units > 1 {
			put(h, "units", integer(s.Units))
		}
		put(h, "steps", flowSteps(s.Steps))
		put(n, key, h)
	case StepAcquire, StepRelease:
		put(n, key, str(s.Resource))
		if s.Units > 1 {
			put(n, "units", integer(s.Units))
		}
	case StepSwitch:
		sw := mapping(false)
		put(sw, "on", str(s.On))
		cases := mapping(false)
		for _, c := range s.Cases {
			put(cases, c.Value, flowSteps(c.Steps))
		}
		put(sw, "cases", cases)
		if s.HasDefault || len(s.Default) > 0 {
			put(sw, "default", flowSteps(s.Default))
		}
		put(n, key, sw)
	}
	return n
}

// writeJSON writes a node tree built by node() as indented JSON, keeping the
// order of keys.
func writeJSON(buf *bytes.Buffer, n *yaml.Node, indent string) error {
	switch n.Kind {
	case yaml.MappingNode:
		if len(n.Content) == 0 {
			buf.WriteString("{}")
			return nil
		}
		buf.WriteString("{\n")
		for i := 0; i < len(n.Content); i += 2 {
			buf.WriteString(indent + "  ")
			k, _ := json.Marshal(n.Content[i].Value)
			buf.Write(k)
			buf.WriteString(": ")
			if err := writeJSON(buf, n.Content[i+1], indent+"  "); err != nil {
				return err
			}
			if i+2 < len(n.Content) {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString(indent + "}")
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			buf.WriteString("[]")
			return nil
		}
		buf.WriteString("[\n")
		for i, c := range n.Content {
			buf.WriteString(indent + "  ")
			if err := writeJSON(buf, c, indent+"  "); err != nil {
				return err
			}
			if i+1 < len(n.Content) {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString(indent + "]")
	default:
		switch n.Tag {
		case "!!int", "!!float", "!!bool":
			buf.WriteString(n.Value)
		default:
			v, err := json.Marshal(n.Value)
			if err != nil {
				return fmt.Errorf("encode model: %w", err)
			}
			buf.Write(v)
		}
	}
	return nil
}

// Clone returns a deep copy of a model, made by encoding and decoding it.
func (m *Model) Clone() (*Model, error) {
	var buf bytes.Buffer
	if err := m.Encode(&buf, YAML); err != nil {
		return nil, err
	}
	c, err := Decode(buf.Bytes(), m.File)
	if err != nil {
		return nil, fmt.Errorf("clone model: %w", err)
	}
	return c, nil
}
