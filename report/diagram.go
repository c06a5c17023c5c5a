package report

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// Characters that fit on one line of a box.
const (
	titleChars = 25
	lineChars  = 29
)

// buildDiagram lays out the architecture of m with the rates and
// utilizations of r.
func buildDiagram(m *model.Model, r *Results) *diagram {
	d := &diagram{}
	pred := r.Predicted
	util := func(res string) (float64, bool) {
		if pred == nil || pred.Resources[res] == nil {
			return 0, false
		}
		return pred.Resources[res].Utilization, true
	}
	reached := map[string]bool{}
	for _, w := range m.Workloads {
		n := &diagramNode{name: w.Name, workload: true}
		switch {
		case w.Open != nil:
			n.lines = append(n.lines, "open arrivals · "+textout.Rate(w.Open.Rate))
		case w.Closed != nil:
			n.lines = append(n.lines, fmt.Sprintf("%s users · think %s", fmtCount(int64(w.Closed.Users)), textout.Duration(w.Closed.Think.Mean())))
			if rate := workloadRate(w, pred); rate > 0 {
				n.lines = append(n.lines, "→ "+textout.Rate(rate))
			}
		}
		if pred != nil && pred.Stable {
			if wr := pred.Workloads[w.Name]; wr != nil && !noRequests(wr) {
				line := "mean " + textout.Duration(wr.ResponseTime.Mean)
				if wr.ResponseTime.P95 != nil {
					line += " · p95 " + textout.Duration(*wr.ResponseTime.P95)
				}
				n.lines = append(n.lines, line)
			}
		}
		d.nodes = append(d.nodes, n)
		for id := range m.Demands(w).Visits {
			reached[id] = true
		}
	}
	nodeOf := map[string]*diagramNode{}
	hostOf := map[string]*diagramHost{}
	for _, h := range m.Hosts {
		dh := &diagramHost{name: h.Name, hotLine: -1}
		cores := textout.Plural(h.CPU.Cores, "core")
		if h.CPU.Limited() {
			cores += ", limited to " + trimSig3(h.CPU.Limit)
		}
		if h.CPU.Speed > 0 && h.CPU.Speed != 1 {
			cores += ", speed " + trimSig3(h.CPU.Speed)
		}
		if v := h.CPU.SpeedVariation; h.CPU.VariesOverTime() {
			cores += ", speed varies (cv " + trimSig3(v) + " every " + model.FormatDuration(h.CPU.SpeedWindow) + ")"
		} else if v > 0 {
			cores += ", speed varies (cv " + trimSig3(v) + ")"
		}
		if pred != nil {
			if f, ok := pred.SpeedFactors[h.Name]; ok {
				cores += ", curve ×" + trimSig3(f)
			}
		}
		dh.lines = append(dh.lines, cores)
		if u, ok := util(model.CPUResource(h.Name)); ok {
			if r.Bottleneck == model.CPUResource(h.Name) {
				dh.hot, dh.hotLine = true, len(dh.lines)
			}
			dh.lines = append(dh.lines, "CPU "+fmtUtil(u)+" busy")
		}
		for _, disk := range h.Disks {
			line := "disk " + disk.Name
			if u, ok := util(model.DiskResource(h.Name, disk.Name)); ok {
				line += " " + fmtUtil(u) + " busy"
			}
			if r.Bottleneck == model.DiskResource(h.Name, disk.Name) {
				dh.hot, dh.hotLine = true, len(dh.lines)
			}
			dh.lines = append(dh.lines, line)
		}
		for _, p := range m.Passive {
			if p.Host != h.Name {
				continue
			}
			line := fmt.Sprintf("pool %s of %d", p.Name, p.Capacity)
			if p.Partitioned {
				line += ", a queue each"
			}
			if u, ok := util(p.Name); ok {
				line += " · " + fmtUtil(u) + " busy"
			}
			if r.Bottleneck == p.Name {
				dh.hot, dh.hotLine = true, len(dh.lines)
			}
			dh.lines = append(dh.lines, line)
		}
		hostOf[h.Name] = dh
	}
	opRate := func(id string) float64 {
		if pred != nil && pred.Operations[id] != nil {
			return pred.Operations[id].Throughput
		}
		return 0
	}
	for _, c := range m.Components {
		n := &diagramNode{name: c.Name, host: c.Host}
		n.lines = append(n.lines, textout.Plural(len(c.Operations), "operation"))
		if c.Threads != model.Unlimited {
			line := textout.Plural(c.Threads, "thread")
			if u, ok := util(model.ThreadsResource(c.Name)); ok {
				line += " · " + fmtUtil(u) + " busy"
			}
			n.lines = append(n.lines, line)
		}
		// The mean delay per call into the component, weighted by how
		// often each operation runs.
		var delay, weight, plain float64
		for _, op := range c.Operations {
			l := r.Operations[op.ID()]
			w := opRate(op.ID())
			delay += w * l.Delay
			weight += w
			plain += l.Delay
		}
		if weight > 0 {
			delay /= weight
		} else if len(c.Operations) > 0 {
			delay = plain / float64(len(c.Operations))
		}
		if delay > 0 {
			n.lines = append(n.lines, "+ "+textout.Duration(delay)+" delay per call")
		}
		n.hot = r.Bottleneck == model.ThreadsResource(c.Name)
		nodeOf[c.Name] = n
		d.nodes = append(d.nodes, n)
		h := hostOf[c.Host]
		if h == nil {
			h = &diagramHost{name: c.Host, hotLine: -1}
			hostOf[c.Host] = h
			d.hosts = append(d.hosts, h)
		}
		h.nodes = append(h.nodes, n)
	}
	var hosts []*diagramHost
	for _, h := range m.Hosts {
		if dh := hostOf[h.Name]; len(dh.nodes) > 0 {
			hosts = append(hosts, dh)
		}
	}
	d.hosts = append(hosts, d.hosts...)
	workloadNode := map[string]*diagramNode{}
	for _, n := range d.nodes {
		if n.workload {
			workloadNode[n.name] = n
		}
	}
	for _, c := range r.Calls {
		from := nodeOf[c.From]
		if c.From == "" {
			from = workloadNode[c.Workload]
		}
		to := nodeOf[c.To]
		if from == nil || to == nil || from == to {
			continue
		}
		d.edges = append(d.edges, &diagramEdge{from: from, to: to, rate: c.Rate, async: c.Async})
	}
	d.layout(m, reached)
	return d
}

// svgText writes escaped text.
func svgText(s string) string { return html.EscapeString(s) }

// svg renders the diagram.
func (d *diagram) svg() string {
	var b strings.Builder
	w, h := formatFloat(d.width), formatFloat(d.height)
	// The picture shrinks to the page's width, down to 70 %, and scrolls
	// beyond.
	fmt.Fprintf(&b, `<svg class="diagram" id="diagram" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="%s" height="%s" style="min-width: %spx" role="img" aria-labelledby="diagram-title">`, w, h, w, h, formatFloat(d.width*0.7))
	b.WriteString(`<title id="diagram-title">Architecture: components on their hosts, and the calls between them per second at the observed load</title>`)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path class="arrowhead" d="M0,1 L10,5 L0,9 z"/></marker></defs>`)
	for _, host := range d.hosts {
		class := "host"
		if host.hot {
			class += " hot"
		}
		fmt.Fprintf(&b, `<g class="%s"><rect x="%s" y="%s" width="%s" height="%s" rx="8"/>`, class, formatFloat(host.X), formatFloat(host.Y), formatFloat(host.W), formatFloat(host.H))
		tx, ty := host.X+nodePad, host.Y+nodePad+13
		fmt.Fprintf(&b, `<text class="htitle" x="%s" y="%s"><title>host %s</title>%s</text>`, formatFloat(tx), formatFloat(ty), svgText(host.name), svgText(truncate("host "+host.name, titleChars)))
		ty += titleH - 13 + lineH - 3
		for i, line := range host.lines {
			class := "hline"
			if i == host.hotLine {
				class += " hotline"
			}
			fmt.Fprintf(&b, `<text class="%s" x="%s" y="%s">%s</text>`, class, formatFloat(tx), formatFloat(ty), svgText(truncate(line, lineChars+2)))
			ty += lineH
		}
		b.WriteString(`</g>`)
	}
	maxRate := 0.0
	for _, e := range d.edges {
		maxRate = math.Max(maxRate, e.rate)
	}
	for _, e := range d.edges {
		class := "edge"
		if e.async {
			class += " async"
		}
		width := 1.2
		if maxRate > 0 {
			width += 2.8 * math.Sqrt(e.rate/maxRate)
		}
		p := e.p
		verb := "calls"
		if e.async {
			verb = "sends"
		}
		fmt.Fprintf(&b, `<path class="%s" stroke-width="%s" marker-end="url(#arrow)" d="M%s,%s C%s,%s %s,%s %s,%s"><title>%s → %s: %s %s per second</title></path>`,
			class, formatFloat(width),
			formatFloat(p[0][0]), formatFloat(p[0][1]), formatFloat(p[1][0]), formatFloat(p[1][1]),
			formatFloat(p[2][0]), formatFloat(p[2][1]), formatFloat(p[3][0]), formatFloat(p[3][1]),
			svgText(e.from.name), svgText(e.to.name), textout.Sig3(e.rate), verb)
	}
	for _, n := range d.nodes {
		class := "node"
		if n.workload {
			class += " workload"
		}
		if n.hot {
			class += " hot"
		}
		kind := "component"
		if n.workload {
			kind = "workload"
		}
		fmt.Fprintf(&b, `<g class="%s"><rect x="%s" y="%s" width="%s" height="%s" rx="6"/>`, class, formatFloat(n.X), formatFloat(n.Y), formatFloat(n.W), formatFloat(n.H))
		tx, ty := n.X+nodePad, n.Y+nodePad+13
		fmt.Fprintf(&b, `<text class="ntitle" x="%s" y="%s"><title>%s %s</title>%s</text>`, formatFloat(tx), formatFloat(ty), kind, svgText(n.name), svgText(truncate(n.name, titleChars)))
		ty += titleH - 13 + lineH - 2
		for _, line := range n.lines {
			fmt.Fprintf(&b, `<text class="nline" x="%s" y="%s">%s</text>`, formatFloat(tx), formatFloat(ty), svgText(truncate(line, lineChars)))
			ty += lineH
		}
		b.WriteString(`</g>`)
	}
	for _, e := range d.edges {
		fmt.Fprintf(&b, `<text class="elabel" x="%s" y="%s" text-anchor="middle">%s</text>`, formatFloat(e.label[0]), formatFloat(e.label[1]-labelLift+4), svgText(textout.Rate(e.rate)))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// resourceWords describes a resource for a reader: "the CPU of host db (8
// cores)".
func resourceWords(m *model.Model, res string) string {
	for _, h := range m.Hosts {
		if res == model.CPUResource(h.Name) {
			s := fmt.Sprintf("the CPU of host %s (%s", h.Name, textout.Plural(h.CPU.Cores, "core"))
			if h.CPU.Limited() {
				s += fmt.Sprintf(" limited to %s", trimSig3(h.CPU.Limit))
			}
			if h.Replicas > 1 {
				s += fmt.Sprintf(" on each of %d replicas", h.Replicas)
			}
			return s + ")"
		}
		for _, disk := range h.Disks {
			if res == model.DiskResource(h.Name, disk.Name) {
				return fmt.Sprintf("disk %s of host %s", disk.Name, h.Name)
			}
		}
	}
	for _, c := range m.Components {
		if res == model.ThreadsResource(c.Name) {
			return fmt.Sprintf("the thread pool of component %s (%s)", c.Name, textout.Plural(c.Threads, "thread"))
		}
	}
	if p := m.PassiveResource(res); p != nil {
		if p.Partitioned {
			return fmt.Sprintf("the pool %s (capacity %d, a queue per unit)", p.Name, p.Capacity)
		}
		return fmt.Sprintf("the pool %s (capacity %d)", p.Name, p.Capacity)
	}
	return res
}

// stable reports whether a result exists and is stable.
func stable(r *solve.Result) bool { return r != nil && r.Stable }
