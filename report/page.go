package report

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
)

// Write renders the report of m and its results as one self-contained HTML
// page: styles, script and pictures inline, nothing fetched.
func Write(w io.Writer, m *model.Model, r *Results) error {
	if r == nil || r.Predicted == nil {
		return fmt.Errorf("report of %s: no prediction to show", m.Name)
	}
	p := newPage(m, r)
	if err := pageTemplate.Execute(w, p); err != nil {
		return fmt.Errorf("report of %s: %w", m.Name, err)
	}
	return nil
}

// page is what the template shows.
type page struct {
	Model       string
	Subtitle    string
	Cards       []card
	Summary     []template.HTML
	Diagram     template.HTML
	RTCharts    []template.HTML
	RTNote      string
	UtilBars    template.HTML
	UtilLines   template.HTML
	UtilTable   *table
	Workloads   *table
	Resources   *table
	Operations  *table
	Sweep       *table
	Extraction  string
	Evidence    []string
	Warnings    []string
	SolverNotes []string
	HasMeasured bool
	HasSweep    bool
}

// card is one key figure of the summary.
type card struct {
	Label, Value, Note string
	Hot                bool
}

// table is a sortable table.
type table struct {
	ID   string
	Head []column
	// Group, when set, is a header row above Head: labels and spans.
	Group []group
	Rows  [][]cell
}

type group struct {
	Label string
	Span  int
}

type column struct {
	Label, Title string
	Num          bool
}

// cell is a table cell; Sort, when set, is the number it sorts by.
type cell struct {
	Text, Sort, Class, Title string
	Style                    template.CSS
}

func textCell(s string) cell { return cell{Text: s} }

// numCell is a number with its text.
func numCell(v float64, text string) cell {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return cell{Text: text, Class: "num"}
	}
	return cell{Text: text, Sort: strconv.FormatFloat(v, 'g', 8, 64), Class: "num"}
}

// missing is an empty number cell, sorted last.
func missing() cell { return cell{Text: "–", Class: "num none"} }

func durationCell(v *float64) cell {
	if v == nil {
		return missing()
	}
	return numCell(*v, textout.Duration(*v))
}

func percentCell(v float64) cell {
	c := numCell(v, fmtUtil(v))
	if v > 1.0005 {
		c.Title = "the solver puts it at " + fmtPercent(v) + ": more than the resource has"
	}
	return c
}

// errorCell is the relative difference of a prediction from a measurement.
func errorCell(pred, meas *float64) cell {
	if pred == nil || meas == nil || *meas == 0 {
		return missing()
	}
	e := (*pred - *meas) / *meas
	c := numCell(e, fmt.Sprintf("%+.1f %%", e*100))
	switch a := math.Abs(e); {
	case a > 0.3:
		c.Class += " bad"
	case a > 0.1:
		c.Class += " warn"
	}
	return c
}

func ptr(v float64) *float64 { return &v }

func newPage(m *model.Model, r *Results) *page {
	p := &page{Model: modelName(m)}
	pred := r.Predicted
	p.HasMeasured = r.Measured != nil
	p.HasSweep = r.Sweep != nil && len(r.Sweep.Points) > 0
	sub := []string{fmt.Sprintf("%s, %s, %s",
		textout.Plural(len(m.Components), "component"), textout.Plural(len(m.Hosts), "host"), textout.Plural(len(m.Workloads), "workload"))}
	if pred.Stable {
		sub = append(sub, "solved by "+solverWords(pred))
	} else {
		sub = append(sub, "unstable at the observed load, where "+solverWords(pred)+" has nothing to solve")
	}
	if m.File != "" {
		sub = append(sub, "model file "+m.File)
	}
	p.Subtitle = strings.Join(sub, " · ")
	p.Cards, p.Summary = summarize(m, r)
	p.Diagram = template.HTML(buildDiagram(m, r).svg())
	for i, w := range m.Workloads {
		if observedLoad(w) > 0 {
			p.RTCharts = append(p.RTCharts, template.HTML(responseChart(m, r, w, i)))
		}
	}
	p.RTNote = "Lines: the model's prediction as load grows (all workloads scaled together)."
	if len(p.RTCharts) == 0 {
		p.RTNote = "No workload sends requests, so there is no load to grow and nothing to chart."
	} else if !hasPercentiles(r) {
		p.RTNote += " The analytical solver gives means only; percentiles come from simulation (--solver sim)."
	}
	if r.Sweep != nil && len(r.Sweep.Fallback) > 0 {
		p.RTNote += " The load levels were simulated, outside the analytical solver's reach: " + strings.Join(r.Sweep.Fallback, "; ") + "."
	}
	p.UtilBars = template.HTML(utilizationBars(m, r))
	if p.HasSweep {
		p.UtilLines = template.HTML(utilizationLines(r))
		p.UtilTable = utilizationTable(r)
		p.Sweep = sweepTable(m, r)
	}
	p.Workloads = workloadTable(m, r)
	p.Resources = resourceTable(m, r)
	p.Operations = operationTable(m, r)
	if e := r.Extraction; e != nil {
		share := 0.0
		if e.Spans > 0 {
			share = float64(e.Modeled) / float64(e.Spans)
		}
		cpu := "CPU demands from measured CPU time (span attribute perfcast.cpu.time)"
		if !e.CPUMeasured {
			cpu = "CPU demands estimated from each operation's own time (no CPU time in the spans)"
		}
		p.Extraction = fmt.Sprintf("%s traces (%s spans, %.0f %% of them modelled, %s partial traces) observed over %s; %s.",
			fmtCount(e.Traces), fmtCount(e.Spans), share*100, fmtCount(e.Partial), textout.Duration(e.Duration), cpu)
		p.Evidence = e.Evidence
		p.Warnings = e.Warnings
	}
	p.SolverNotes = pred.Warnings
	return p
}

// solverWords says how a result was computed.
func solverWords(r *solve.Result) string {
	switch {
	case r.Solver == "sim" && r.Sim != nil && r.Sim.Replications > 0:
		return fmt.Sprintf("simulation (seed %d, %s requests)", r.Sim.Seed, fmtCount(r.Sim.Requests))
	case r.Solver == "sim":
		return "simulation"
	case r.Solver == "mva" && r.MVA != nil:
		return "mean-value analysis (" + r.MVA.Method + ")"
	case r.Solver == "mva":
		return "mean-value analysis"
	}
	return r.Solver
}

// modelName is the model's name, or its file's without the extension.
func modelName(m *model.Model) string {
	if n := m.DisplayName(); n != "" {
		return n
	}
	return "(unnamed)"
}

// hasPercentiles reports whether the predictions carry percentiles.
func hasPercentiles(r *Results) bool {
	for _, wr := range r.Predicted.Workloads {
		if wr.ResponseTime.P95 != nil {
			return true
		}
	}
	if r.Sweep != nil {
		for _, pt := range r.Sweep.Points {
			for _, wr := range pt.Result.Workloads {
				if wr.ResponseTime.P95 != nil {
					return true
				}
			}
		}
	}
	return false
}

// entryOperations lists the operations a workload's requests call first.
func entryOperations(w *model.Workload) []string {
	own := &ownLoad{calls: map[string]float64{}, sends: map[string]float64{}}
	walkOwn(w.Steps, nil, w, 1, own, 0)
	return slices.Sorted(maps.Keys(own.calls))
}

// summarize writes the key figures and the summary in plain words.
func summarize(m *model.Model, r *Results) ([]card, []template.HTML) {
	var cards []card
	var paras []template.HTML
	esc := template.HTMLEscapeString
	b := func(s string) string { return "<strong>" + esc(s) + "</strong>" }
	pred := r.Predicted

	if e := r.Extraction; e != nil {
		paras = append(paras, template.HTML(fmt.Sprintf(
			"perfcast built this model from %s traces (%s spans) observed over %s: %s on %s, %s.",
			fmtCount(e.Traces), fmtCount(e.Spans), esc(textout.Duration(e.Duration)),
			esc(textout.Plural(len(m.Components), "component")), esc(textout.Plural(len(m.Hosts), "host")), esc(textout.Plural(len(m.Workloads), "workload")))))
	} else {
		paras = append(paras, template.HTML(fmt.Sprintf("Model %s: %s on %s, %s.", b(modelName(m)),
			esc(textout.Plural(len(m.Components), "component")), esc(textout.Plural(len(m.Hosts), "host")), esc(textout.Plural(len(m.Workloads), "workload")))))
	}

	var loads []string
	for _, w := range m.Workloads {
		switch {
		case w.Open != nil:
			loads = append(loads, fmt.Sprintf("%s arrives at %s requests per second", b(w.Name), esc(textout.Sig3(w.Open.Rate))))
		case w.Closed != nil:
			s := fmt.Sprintf("%s has %s users who think %s between requests", b(w.Name), esc(fmtCount(int64(w.Closed.Users))), esc(textout.Duration(w.Closed.Think.Mean())))
			if x := workloadRate(w, pred); x > 0 {
				s += fmt.Sprintf(" (%s requests per second)", esc(textout.Sig3(x)))
			}
			loads = append(loads, s)
		}
	}
	if len(loads) > 0 {
		paras = append(paras, template.HTML("At the observed load, "+strings.Join(loads, "; ")+"."))
	}

	sat := r.Saturation
	switch {
	case sat == nil:
		paras = append(paras, template.HTML("No resource carries any load in this model, so nothing saturates."))
		cards = append(cards, card{Label: "Bottleneck", Value: "none", Note: "no resource carries load"})
	default:
		what := resourceWords(m, sat.Resource)
		cards = append(cards, card{Label: "Bottleneck", Value: sat.Resource, Note: what, Hot: true})
		busy := "it is %s busy"
		if rr := r.Predicted.Resources[sat.Resource]; rr != nil && rr.LimitUtilization != nil {
			busy = "it uses %s of its CPU limit"
		}
		s := fmt.Sprintf("The bottleneck is %s, %s: "+busy+" at the observed load.",
			b(sat.Resource), esc(what), esc(fmtUtil(sat.Utilization)))
		s += speedAtSaturation(m, sat)
		at := saturationLoads(m, sat)
		switch {
		case sat.ClosedOnly:
			s += fmt.Sprintf(" As users are added, it is fully busy from about %s (%s the observed population): past that, throughput stays flat and each added user only lengthens every response time.",
				b(strings.Join(at, ", ")), esc(fmtFactor(sat.Factor)))
			cards = append(cards, card{Label: "Saturates at", Value: strings.Join(at, ", "), Note: fmtFactor(sat.Factor) + " the observed users"})
		case sat.Factor <= 1:
			s += fmt.Sprintf(" The model cannot serve the observed load: it saturates at %s the observed load (%s).",
				b(fmtFactor(sat.Factor)), esc(strings.Join(at, ", ")))
			if r.Extraction != nil || r.Measured != nil {
				s += " The measured system did serve it, so some demand in the model is too high; see the warnings below."
			}
			cards = append(cards, card{Label: "Saturates at", Value: fmtFactor(sat.Factor) + " load", Note: "below the observed load", Hot: true})
		default:
			s += fmt.Sprintf(" It saturates when the load reaches %s the observed load (%s); beyond that, requests queue without bound. Response times climb well before that point (see the charts).",
				b(fmtFactor(sat.Factor)), esc(strings.Join(at, ", ")))
			cards = append(cards, card{Label: "Saturates at", Value: fmtFactor(sat.Factor) + " load", Note: strings.Join(at, ", ")})
		}
		if sat.Source == "sweep" && sat.Bound != nil {
			s += fmt.Sprintf(" (The utilization law alone points at %s, saturating at %s; but solving the model at growing loads shows %s running out first, because whoever holds it also waits for what it calls.)",
				esc(sat.Bound.Resource), esc(fmtFactor(sat.Bound.Factor)), esc(sat.Resource))
		}
		if sat.Factor > 1 {
			head := sat.Factor - 1
			if sat.ClosedOnly {
				s += fmt.Sprintf(" Headroom: %s more users before the bottleneck is fully busy.", b(fmt.Sprintf("%.0f %%", head*100)))
				cards = append(cards, card{Label: "Headroom", Value: fmt.Sprintf("+%.0f %%", head*100), Note: "more users before saturation"})
			} else {
				s += fmt.Sprintf(" Headroom: the load can grow by %s before the bottleneck is fully busy.", b(fmt.Sprintf("%.0f %%", head*100)))
				cards = append(cards, card{Label: "Headroom", Value: fmt.Sprintf("+%.0f %%", head*100), Note: "more load before saturation"})
			}
		}
		paras = append(paras, template.HTML(s))
	}
	if !pred.Stable {
		paras = append(paras, template.HTML(esc("At the observed load the model is unstable: some resource cannot keep up, so no response time is predicted there.")))
	}

	// Response times per workload and entry operation.
	if !solve.HasLoad(m) {
		paras = append(paras, template.HTML(esc("No workload sends requests (every open rate and user count is zero): there is no response time to predict, and every resource is idle.")))
	}
	var items []string
	first := true
	for _, w := range m.Workloads {
		wr := pred.Workloads[w.Name]
		if wr == nil || !pred.Stable || noRequests(wr) {
			continue
		}
		s := fmt.Sprintf("%s: mean %s", b(w.Name), esc(textout.Duration(wr.ResponseTime.Mean)))
		if wr.ResponseTime.P95 != nil {
			s += ", p95 " + esc(textout.Duration(*wr.ResponseTime.P95))
		}
		if ct := wr.CompletionTime; ct != nil && ct.Mean > wr.ResponseTime.Mean*1.01 {
			s += "; with its asynchronous work, mean " + esc(textout.Duration(ct.Mean))
			if ct.P95 != nil {
				s += ", p95 " + esc(textout.Duration(*ct.P95))
			}
		}
		if r.Measured != nil {
			if mr := r.Measured.Workloads[w.Name]; mr != nil {
				s += fmt.Sprintf(" (measured: mean %s", esc(textout.Duration(mr.ResponseTime.Mean)))
				if mr.ResponseTime.P95 != nil {
					s += ", p95 " + esc(textout.Duration(*mr.ResponseTime.P95))
				}
				s += ")"
			}
		}
		if first {
			v := textout.Duration(wr.ResponseTime.Mean)
			label := "Mean response"
			if wr.ResponseTime.P95 != nil {
				v, label = textout.Duration(*wr.ResponseTime.P95), "p95 response"
			}
			cards = append(cards, card{Label: label, Value: v, Note: w.Name + " at the observed load"})
			first = false
		}
		entries := entryOperations(w)
		if len(entries) > 1 || (len(entries) == 1 && entries[0] != w.Name) {
			var sub []string
			for _, id := range entries {
				or := pred.Operations[id]
				if or == nil {
					continue
				}
				t := fmt.Sprintf("%s: mean %s", esc(id), esc(textout.Duration(or.ResponseTime.Mean)))
				if or.ResponseTime.P95 != nil {
					t += ", p95 " + esc(textout.Duration(*or.ResponseTime.P95))
				}
				sub = append(sub, "<li>"+t+"</li>")
			}
			if len(sub) > 0 {
				s += "<ul>" + strings.Join(sub, "") + "</ul>"
			}
		}
		items = append(items, "<li>"+s+"</li>")
	}
	if len(items) > 0 {
		head := "Predicted response times at the observed load"
		if !hasPercentiles(r) {
			head += " (means; percentiles need simulation)"
		}
		paras = append(paras, template.HTML(esc(head)+":<ul>"+strings.Join(items, "")+"</ul>"))
	}
	if e := r.Extraction; e != nil && len(e.Warnings) > 0 {
		paras = append(paras, template.HTML(fmt.Sprintf(`The extraction rests on %s; see <a href="#evidence">evidence and warnings</a>.`,
			esc(textout.Plural(len(e.Warnings), "assumption or warning")))))
	}
	return cards, paras
}

// noRequests reports whether a workload's result served no request, so
// that it has no response time to show.
func noRequests(wr *solve.WorkloadResult) bool {
	return wr.Throughput == 0 && wr.ResponseTime.Mean == 0
}

// speedAtSaturation explains, for a CPU whose speed changes, why the load
// where it saturates is not the observed load over its utilization: the
// utilization law takes the speed it has when fully busy (Saturate).
func speedAtSaturation(m *model.Model, sat *Saturation) string {
	if sat.Source != "bounds" || !(sat.Utilization > 0) || math.Abs(sat.Factor*sat.Utilization-1) < 0.02 {
		return ""
	}
	var why []string
	for _, h := range m.Hosts {
		if sat.Resource != model.CPUResource(h.Name) {
			continue
		}
		if len(h.CPU.SpeedCurve) > 0 {
			why = append(why, "speed_curve")
		}
		if h.CPU.SpeedVariation > 0 {
			why = append(why, "speed_variation")
		}
	}
	if len(why) == 0 {
		return ""
	}
	esc := template.HTMLEscapeString
	return fmt.Sprintf(" Where it saturates follows from its speed when fully busy, which its %s sets, not from its speed at the observed load: at that speed the observed load would keep it %s busy.",
		esc(strings.Join(why, " and ")), esc(fmtUtil(1/sat.Factor)))
}

// saturationLoads writes the load at saturation per workload.
func saturationLoads(m *model.Model, sat *Saturation) []string {
	var out []string
	for _, w := range m.Workloads {
		switch {
		case w.Open != nil:
			if v, ok := sat.At["workload."+w.Name+".open.rate"]; ok {
				out = append(out, fmt.Sprintf("%s at %s requests/s", w.Name, textout.Sig3(v)))
			}
		case w.Closed != nil:
			if v, ok := sat.At["workload."+w.Name+".closed.users"]; ok {
				out = append(out, fmt.Sprintf("%s users of %s", fmtCount(int64(math.Round(v))), w.Name))
			}
		}
	}
	return out
}

// chartID makes an element id from a prefix and an index.
func chartID(prefix string, i int) string { return prefix + "-" + strconv.Itoa(i) }

// responseChart draws a workload's response time against its load.
func responseChart(m *model.Model, r *Results, w *model.Workload, i int) string {
	c := &lineChart{
		id:     chartID("rt", i),
		title:  "Response time of " + w.Name + " against load",
		yLabel: "response time",
		yAxis:  timeAxis,
		yFmt:   textout.Duration,
		xFmt:   func(v float64) string { return textout.Sig3(v) + "/s" },
		xLabel: w.Name + ": requests per second",
	}
	if w.Closed != nil {
		c.xFmt = func(v float64) string { return textout.Sig3(v) }
		c.xLabel = w.Name + ": users"
	}
	load := observedLoad(w)
	var mean, p95, done [][2]float64
	asyncMatters := false
	if r.Sweep != nil {
		for _, pt := range r.Sweep.Points {
			if !stable(pt.Result) {
				continue
			}
			wr := pt.Result.Workloads[w.Name]
			if wr == nil {
				continue
			}
			x := pt.Load[w.Name]
			mean = append(mean, [2]float64{x, wr.ResponseTime.Mean})
			if wr.ResponseTime.P95 != nil {
				p95 = append(p95, [2]float64{x, *wr.ResponseTime.P95})
			}
			if ct := wr.CompletionTime; ct != nil {
				done = append(done, [2]float64{x, ct.Mean})
				asyncMatters = asyncMatters || ct.Mean > wr.ResponseTime.Mean*1.01
			}
		}
	}
	if len(mean) > 0 {
		c.series = append(c.series, series{name: "predicted mean", class: "c0", pts: mean})
		c.legend = append(c.legend, legendItem{name: "predicted mean", class: "c0"})
	}
	if len(p95) > 0 {
		c.series = append(c.series, series{name: "predicted p95", class: "c0", dashed: true, pts: p95})
		c.legend = append(c.legend, legendItem{name: "predicted p95", class: "c0", dashed: true})
	}
	if asyncMatters {
		c.series = append(c.series, series{name: "predicted mean until asynchronous work ends", class: "c2", pts: done})
		c.legend = append(c.legend, legendItem{name: "mean with asynchronous work", class: "c2"})
	}
	if wr := r.Predicted.Workloads[w.Name]; wr != nil && r.Predicted.Stable {
		c.markers = append(c.markers, marker{x: load, y: wr.ResponseTime.Mean, class: "c0", shape: "circle",
			title: "predicted mean at the observed load: " + textout.Duration(wr.ResponseTime.Mean)})
		c.legend = append(c.legend, legendItem{name: "predicted, observed load", class: "c0", shape: "circle"})
		if wr.ResponseTime.P95 != nil {
			c.markers = append(c.markers, marker{x: load, y: *wr.ResponseTime.P95, class: "c0", shape: "circle", open: true,
				title: "predicted p95 at the observed load: " + textout.Duration(*wr.ResponseTime.P95)})
		}
	}
	if r.Measured != nil {
		if mr := r.Measured.Workloads[w.Name]; mr != nil {
			x := load
			c.markers = append(c.markers, marker{x: x, y: mr.ResponseTime.Mean, class: "meas", shape: "diamond",
				title: "measured mean: " + textout.Duration(mr.ResponseTime.Mean)})
			c.legend = append(c.legend, legendItem{name: "measured mean", class: "meas", shape: "diamond"})
			if mr.ResponseTime.P95 != nil {
				c.markers = append(c.markers, marker{x: x, y: *mr.ResponseTime.P95, class: "meas", shape: "diamond", open: true,
					title: "measured p95: " + textout.Duration(*mr.ResponseTime.P95)})
				c.legend = append(c.legend, legendItem{name: "measured p95", class: "meas", shape: "diamond", open: true})
			}
		}
	}
	c.vlines = append(c.vlines, vline{x: load, label: "observed", class: "obs"})
	if sat := r.Saturation; sat != nil {
		key := "workload." + w.Name + ".open.rate"
		if w.Closed != nil {
			key = "workload." + w.Name + ".closed.users"
		}
		if v, ok := sat.At[key]; ok && v > 0 {
			c.vlines = append(c.vlines, vline{x: v, label: "saturation", class: "sat"})
		}
	}
	return c.svg()
}

// resourceOrder lists the resources of the prediction, the busiest first.
func resourceOrder(res map[string]*solve.ResourceResult) []string {
	names := slices.Sorted(maps.Keys(res))
	slices.SortStableFunc(names, func(a, b string) int {
		return cmp.Compare(res[b].Utilization, res[a].Utilization)
	})
	return names
}

// utilizationBars draws every resource's utilization at the observed load.
func utilizationBars(m *model.Model, r *Results) string {
	var bars []bar
	for _, name := range resourceOrder(r.Predicted.Resources) {
		u := r.Predicted.Resources[name].Utilization
		br := bar{label: name, value: u, hot: name == r.Bottleneck,
			title: fmt.Sprintf("%s, %s: %s predicted", name, resourceWords(m, name), fmtPercent(u))}
		if r.Measured != nil && r.Measured.Resources[name] != nil {
			v := r.Measured.Resources[name].Utilization
			br.measured = &v
			br.title += ", " + fmtPercent(v) + " measured"
		}
		bars = append(bars, br)
	}
	return barChart("util-observed", "Utilization of every resource at the observed load", bars)
}

// maxColoured is the number of resources besides the bottleneck that get a
// colour of their own in the utilization chart.
const maxColoured = 7

// utilizationLines draws the utilization of every resource against load.
func utilizationLines(r *Results) string {
	c := &lineChart{
		id:     "util-sweep",
		title:  "Utilization of every resource against load",
		xLabel: "load, as a multiple of the observed load",
		xFmt:   fmtFactor,
		yLabel: "utilization",
		yAxis:  percentAxis,
		yFmt:   fmtPercent,
		yMax:   1,
		hlines: []float64{1},
	}
	peak := map[string]float64{}
	pts := map[string][][2]float64{}
	for _, pt := range r.Sweep.Points {
		if !stable(pt.Result) {
			continue
		}
		for name, rr := range pt.Result.Resources {
			pts[name] = append(pts[name], [2]float64{pt.Factor, rr.Utilization})
			peak[name] = math.Max(peak[name], rr.Utilization)
		}
	}
	names := slices.Sorted(maps.Keys(pts))
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(peak[b], peak[a]) })
	coloured := 0
	muted := 0
	for _, name := range names {
		s := series{name: name, pts: pts[name]}
		switch {
		case name == r.Bottleneck:
			s.class, s.width = "hot", 3.5
			c.legend = append([]legendItem{{name: name + " (bottleneck)", class: "hot"}}, c.legend...)
		case coloured < maxColoured:
			s.class = "c" + strconv.Itoa(coloured+1)
			coloured++
			c.legend = append(c.legend, legendItem{name: name, class: s.class})
		default:
			s.class, s.width = "muted", 1.2
			muted++
		}
		c.series = append(c.series, s)
	}
	if muted > 0 {
		c.legend = append(c.legend, legendItem{name: textout.Plural(muted, "other resource"), class: "muted"})
	}
	c.vlines = append(c.vlines, vline{x: 1, label: "observed", class: "obs"})
	if sat := r.Saturation; sat != nil && !sat.ClosedOnly {
		c.vlines = append(c.vlines, vline{x: sat.Factor, label: "saturation", class: "sat"})
	}
	return c.svg()
}

// heat colours a utilization cell.
func heat(u float64) template.CSS {
	a := math.Min(math.Max(u, 0), 1)
	return template.CSS(fmt.Sprintf("background: rgba(217, 72, 15, %.2f)", a*0.55))
}

// utilizationTable lists every resource's utilization at every load level.
func utilizationTable(r *Results) *table {
	t := &table{ID: "util-table", Head: []column{{Label: "Resource"}}}
	for _, pt := range r.Sweep.Points {
		t.Head = append(t.Head, column{Label: fmtFactor(pt.Factor), Title: "utilization at " + fmtFactor(pt.Factor) + " the observed load", Num: true})
	}
	for _, name := range resourceOrder(r.Predicted.Resources) {
		row := []cell{textCell(name)}
		if name == r.Bottleneck {
			row[0].Class = "hotcell"
		}
		for _, pt := range r.Sweep.Points {
			rr := pt.Result.Resources[name]
			if rr == nil || !pt.Result.Stable {
				row = append(row, missing())
				continue
			}
			c := percentCell(rr.Utilization)
			c.Style = heat(rr.Utilization)
			row = append(row, c)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// workloadTable compares measured and predicted figures per workload.
func workloadTable(m *model.Model, r *Results) *table {
	pred, meas := r.Predicted, r.Measured
	t := &table{ID: "workloads"}
	if meas == nil {
		t.Head = []column{{Label: "Workload"}, {Label: "Throughput", Num: true}, {Label: "Mean", Num: true},
			{Label: "p50", Num: true}, {Label: "p95", Num: true}, {Label: "p99", Num: true}}
		for _, w := range m.Workloads {
			wr := pred.Workloads[w.Name]
			if wr == nil || !pred.Stable {
				t.Rows = append(t.Rows, []cell{textCell(w.Name), missing(), missing(), missing(), missing(), missing()})
				continue
			}
			rt := wr.ResponseTime
			t.Rows = append(t.Rows, []cell{textCell(w.Name), numCell(wr.Throughput, textout.Rate(wr.Throughput)),
				durationCell(&rt.Mean), durationCell(rt.P50), durationCell(rt.P95), durationCell(rt.P99)})
		}
		return t
	}
	t.Group = []group{{"", 1}, {"Throughput", 2}, {"Mean response time", 3}, {"p95", 3}, {"p99", 2}}
	t.Head = []column{{Label: "Workload"},
		{Label: "measured", Num: true}, {Label: "predicted", Num: true},
		{Label: "measured", Num: true}, {Label: "predicted", Num: true}, {Label: "error", Num: true, Title: "(predicted − measured) / measured"},
		{Label: "measured", Num: true}, {Label: "predicted", Num: true}, {Label: "error", Num: true, Title: "(predicted − measured) / measured"},
		{Label: "measured", Num: true}, {Label: "predicted", Num: true}}
	for _, w := range m.Workloads {
		row := []cell{textCell(w.Name)}
		mr := meas.Workloads[w.Name]
		wr := pred.Workloads[w.Name]
		if !pred.Stable {
			wr = nil
		}
		get := func(x *solve.WorkloadResult, f func(*solve.WorkloadResult) *float64) *float64 {
			if x == nil {
				return nil
			}
			return f(x)
		}
		thr := func(x *solve.WorkloadResult) *float64 { return ptr(x.Throughput) }
		mean := func(x *solve.WorkloadResult) *float64 { return ptr(x.ResponseTime.Mean) }
		p95 := func(x *solve.WorkloadResult) *float64 { return x.ResponseTime.P95 }
		p99 := func(x *solve.WorkloadResult) *float64 { return x.ResponseTime.P99 }
		rate := func(v *float64) cell {
			if v == nil {
				return missing()
			}
			return numCell(*v, textout.Rate(*v))
		}
		row = append(row, rate(get(mr, thr)), rate(get(wr, thr)),
			durationCell(get(mr, mean)), durationCell(get(wr, mean)), errorCell(get(wr, mean), get(mr, mean)),
			durationCell(get(mr, p95)), durationCell(get(wr, p95)), errorCell(get(wr, p95), get(mr, p95)),
			durationCell(get(mr, p99)), durationCell(get(wr, p99)))
		t.Rows = append(t.Rows, row)
	}
	return t
}

// servers is a resource's number of servers over all replicas.
func servers(m *model.Model, res string) int {
	if n := m.Servers(res); n > 0 {
		return n
	}
	for _, c := range m.Components {
		if res == model.ThreadsResource(c.Name) {
			replicas := 1
			if h := m.Host(c.Host); h != nil {
				replicas = h.Replicas
			}
			return c.Threads * replicas
		}
	}
	if p := m.PassiveResource(res); p != nil {
		replicas := 1
		if h := m.Host(p.Host); h != nil {
			replicas = h.Replicas
		}
		return p.Capacity * replicas
	}
	return 0
}

// resourceTable lists every resource at the observed load.
func resourceTable(m *model.Model, r *Results) *table {
	t := &table{ID: "resources", Head: []column{{Label: "Resource"}, {Label: "What"}, {Label: "Servers", Num: true, Title: "cores, disk servers, threads or units, over all replicas"},
		{Label: "Utilization", Num: true, Title: "predicted at the observed load"}}}
	if r.Measured != nil {
		t.Head = append(t.Head, column{Label: "Measured", Num: true, Title: "from the CPU time the spans report"})
	}
	t.Head = append(t.Head, column{Label: "Wait", Num: true, Title: "mean time a request waits for the resource, predicted"})
	if r.Saturation != nil {
		t.Head = append(t.Head, column{Label: "Saturates at", Num: true, Title: "load, as a multiple of the observed load, at which this resource alone would be fully busy"})
	}
	for _, name := range resourceOrder(r.Predicted.Resources) {
		rr := r.Predicted.Resources[name]
		row := []cell{textCell(name), textCell(resourceWords(m, name))}
		if name == r.Bottleneck {
			row[0].Class = "hotcell"
		}
		n := servers(m, name)
		row = append(row, numCell(float64(n), fmtCount(int64(n))), percentCell(rr.Utilization))
		if r.Measured != nil {
			if mr := r.Measured.Resources[name]; mr != nil {
				row = append(row, percentCell(mr.Utilization))
			} else {
				row = append(row, missing())
			}
		}
		if rr.Wait != nil {
			row = append(row, durationCell(&rr.Wait.Mean))
		} else {
			row = append(row, missing())
		}
		if sat := r.Saturation; sat != nil {
			if name == sat.Resource {
				row = append(row, numCell(sat.Factor, fmtFactor(sat.Factor)))
			} else if rr.Utilization > 0 && r.Predicted.Stable {
				f := 1 / rr.Utilization
				row = append(row, numCell(f, fmtFactor(f)))
			} else {
				row = append(row, missing())
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// operationTable lists every operation: rate, own demands, response times.
// Traces measure spans, so where a request waits before its operation's
// span starts (for a thread, a CPU slot: solve.OperationResult.Span), the
// predicted figures set next to the measured ones are the span's, and the
// response time from the request's arrival has a column of its own.
func operationTable(m *model.Model, r *Results) *table {
	pred, meas := r.Predicted, r.Measured
	spans := false
	if meas != nil && pred.Stable {
		for _, or := range pred.Operations {
			spans = spans || (or != nil && or.Span != nil)
		}
	}
	t := &table{ID: "operations", Head: []column{{Label: "Operation"},
		{Label: "Calls/s", Num: true, Title: "executions per second at the observed load, predicted"},
		{Label: "CPU per call", Num: true, Title: "the operation's own CPU time per execution, without the operations it calls"},
		{Label: "Delay per call", Num: true, Title: "pure delay per execution: services outside the model, off-CPU waits"},
		{Label: "Mean", Num: true, Title: "predicted mean response time"}}}
	if spans {
		t.Head[len(t.Head)-1].Title = "predicted mean response time from the request's arrival at the component, waits before its span starts included"
		t.Head = append(t.Head, column{Label: "Span mean", Num: true, Title: "predicted mean time the operation's span covers, without the waits before it starts (for a thread, a CPU slot)"})
	}
	if meas != nil {
		t.Head = append(t.Head, column{Label: "Mean measured", Num: true, Title: "the spans' mean duration in the traces"})
	}
	t.Head = append(t.Head, column{Label: "p95", Num: true, Title: "predicted"})
	if spans {
		t.Head[len(t.Head)-1].Title = "predicted, of the time the span covers"
	}
	if meas != nil {
		t.Head = append(t.Head, column{Label: "p95 measured", Num: true})
	}
	// span is what an operation's span covers: the measured response
	// time, the predicted one less the waits before the span starts.
	span := func(x *solve.OperationResult) *solve.Times {
		switch {
		case x == nil:
			return nil
		case spans && x.Span != nil:
			return x.Span
		}
		return &x.ResponseTime
	}
	mean := func(x *solve.Times) *float64 {
		if x == nil {
			return nil
		}
		return ptr(x.Mean)
	}
	p95 := func(x *solve.Times) *float64 {
		if x == nil {
			return nil
		}
		return x.P95
	}
	for _, c := range m.Components {
		for _, op := range c.Operations {
			id := op.ID()
			or := pred.Operations[id]
			if !pred.Stable {
				or = nil
			}
			load := r.Operations[id]
			row := []cell{textCell(id)}
			if or != nil {
				row = append(row, numCell(or.Throughput, textout.Rate(or.Throughput)))
			} else {
				row = append(row, missing())
			}
			row = append(row, numCell(load.CPU, textout.Duration(load.CPU)), numCell(load.Delay, textout.Duration(load.Delay)))
			var mo *solve.OperationResult
			if meas != nil {
				mo = meas.Operations[id]
			}
			if spans {
				var rt *solve.Times
				if or != nil {
					rt = &or.ResponseTime
				}
				row = append(row, durationCell(mean(rt)))
			}
			row = append(row, durationCell(mean(span(or))))
			if meas != nil {
				row = append(row, durationCell(mean(span(mo))))
			}
			row = append(row, durationCell(p95(span(or))))
			if meas != nil {
				row = append(row, durationCell(p95(span(mo))))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}

// sweepTable lists the load levels.
func sweepTable(m *model.Model, r *Results) *table {
	t := &table{ID: "sweep", Head: []column{{Label: "Load", Num: true, Title: "multiple of the observed load"}}}
	for _, w := range m.Workloads {
		t.Head = append(t.Head,
			column{Label: w.Name + " load", Num: true},
			column{Label: w.Name + " mean", Num: true},
			column{Label: w.Name + " p95", Num: true})
	}
	t.Head = append(t.Head, column{Label: "Busiest resource"}, column{Label: "Its utilization", Num: true}, column{Label: "Solver"})
	for _, pt := range r.Sweep.Points {
		res := pt.Result
		row := []cell{numCell(pt.Factor, fmtFactor(pt.Factor))}
		for _, w := range m.Workloads {
			row = append(row, numCell(pt.Load[w.Name], fmtLoad(w, pt.Load[w.Name])))
			wr := res.Workloads[w.Name]
			if wr == nil || !res.Stable {
				row = append(row, cell{Text: "unstable", Class: "num bad"}, missing())
				continue
			}
			row = append(row, durationCell(&wr.ResponseTime.Mean), durationCell(wr.ResponseTime.P95))
		}
		busiest := res.Bottleneck
		if busiest == "" {
			if names := resourceOrder(res.Resources); len(names) > 0 {
				busiest = names[0]
			}
		}
		row = append(row, textCell(busiest))
		if rr := res.Resources[busiest]; rr != nil {
			c := percentCell(rr.Utilization)
			c.Style = heat(rr.Utilization)
			row = append(row, c)
		} else {
			row = append(row, missing())
		}
		row = append(row, textCell(res.Solver))
		t.Rows = append(t.Rows, row)
	}
	return t
}

var pageTemplate = template.Must(template.New("report").Parse(pageHTML))
