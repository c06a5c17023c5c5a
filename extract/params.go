package extract

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/trace"
)

// Request parameters (Brosig et al.'s parametric dependencies): attributes
// named in the configuration are read once per request, at its entry span or
// else the first span of the trace that has them. While folding, a numeric
// value is kept only as a fine bucket (a quarter of a doubling wide) and a
// text value as itself (up to maxCategories per parameter), so memory stays
// bounded and states merge; when the model is generated, the buckets are
// joined into a few bins of about equal probability, and operations whose
// calls or CPU demand differ between bins get a switch on the parameter.

// maxCategories bounds the distinct text values kept per parameter.
const maxCategories = 64

// defaultParamBins is the number of bins of a numeric parameter.
const defaultParamBins = 3

// bucketsPerDoubling sets the resolution of numeric buckets.
const bucketsPerDoubling = 4

// otherCategory collects the text values beyond maxCategories.
const otherCategory = "s:other"

// paramStats is what one operation did for one bucket of one parameter.
type paramStats struct {
	count    int64
	demand   *sample // CPU demand, or own time when CPU is not measured
	variants map[string]*variant
}

// requestParams finds the request parameters of a request entering at n:
// the parameter name and the bucket of its value.
func requestParams(n *trace.Node, cfg *Config, seen map[string]map[string]bool) map[string]string {
	if cfg == nil || len(cfg.Params) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, p := range cfg.Params {
		if v, ok := findAttr(n, p); ok {
			if seen[p] == nil {
				seen[p] = map[string]bool{}
			}
			b := bucketOf(v, seen[p])
			seen[p][b] = true
			out[p] = b
		}
	}
	return out
}

// findAttr looks for an attribute on n, then on its descendants, breadth
// first, over at most findAttrMax spans. The queue starts on the stack:
// every request is searched for the session id, and most trees are small.
func findAttr(n *trace.Node, key string) (string, bool) {
	var buf [64]*trace.Node
	queue := append(buf[:0], n)
	for i := 0; i < len(queue) && i < findAttrMax; i++ {
		c := queue[i]
		if v, ok := c.Span.Lookup(key); ok {
			return v, true
		}
		queue = append(queue, c.Children...)
	}
	return "", false
}

// findAttrMax bounds the spans findAttr looks at.
const findAttrMax = 100000

// bucketOf maps a value to its bucket key: `n:INDEX` for numbers (INDEX the
// log-scale bucket, or `n:zero`), `s:VALUE` for text.
func bucketOf(v string, seen map[string]bool) string {
	if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		if f <= 0 {
			return "n:zero"
		}
		return "n:" + strconv.Itoa(int(math.Floor(math.Log2(f)*bucketsPerDoubling)))
	}
	key := "s:" + v
	if seen != nil && !seen[key] && len(seen) >= maxCategories {
		return otherCategory
	}
	return key
}

// bucketIndex is a numeric bucket's position on the log scale; zero comes
// first, far below every positive value.
func bucketIndex(key string) float64 {
	if key == "n:zero" {
		return -4096
	}
	i, _ := strconv.Atoi(strings.TrimPrefix(key, "n:"))
	return float64(i)
}

// bucketLow is the smallest value of a numeric bucket.
func bucketLow(key string) float64 {
	if key == "n:zero" {
		return 0
	}
	i, _ := strconv.Atoi(strings.TrimPrefix(key, "n:"))
	return math.Exp2(float64(i) / bucketsPerDoubling)
}

// foldParams records one execution of op under the request's parameters.
func (op *opStats) foldParams(params map[string]string, demand float64, sig string, elems []occurrence) {
	for p, b := range params {
		byBucket := op.params[p]
		if byBucket == nil {
			byBucket = map[string]*paramStats{}
			op.params[p] = byBucket
		}
		ps := byBucket[b]
		if ps == nil {
			ps = &paramStats{demand: newSample(), variants: map[string]*variant{}}
			byBucket[b] = ps
		}
		ps.count++
		ps.demand.add(demand)
		v := ps.variants[sig]
		if v == nil {
			v = &variant{elems: shape(elems)}
			ps.variants[sig] = v
		}
		v.count++
		v.record(elems)
	}
}

func mergeParamStats(a, b map[string]map[string]*paramStats) {
	for p, byBucket := range b {
		if a[p] == nil {
			a[p] = map[string]*paramStats{}
		}
		for bk, ps := range byBucket {
			m := a[p][bk]
			if m == nil {
				m = &paramStats{demand: newSample(), variants: map[string]*variant{}}
				a[p][bk] = m
			}
			m.merge(ps)
		}
	}
}

// merge adds o's executions, copying what it takes over so that o stays
// unchanged.
func (ps *paramStats) merge(o *paramStats) {
	ps.count += o.count
	ps.demand.merge(o.demand)
	for sig, v := range o.variants {
		w := ps.variants[sig]
		if w == nil {
			w = &variant{elems: cloneShape(v.elems)}
			ps.variants[sig] = w
		}
		w.count += v.count
		mergeElems(w.elems, v.elems)
	}
}

// paramBins decides the bins of every parameter from the entries' bucket
// counts: for each parameter, the label of each bucket.
func (g *generator) paramBins() map[string]map[string]string {
	out := map[string]map[string]string{}
	counts := map[string]map[string]int64{}
	for _, e := range g.s.entries {
		for p, byBucket := range e.params {
			if counts[p] == nil {
				counts[p] = map[string]int64{}
			}
			for b, n := range byBucket {
				counts[p][b] += n
			}
		}
	}
	bins := g.cfg.ParamBins
	if bins < 2 {
		bins = defaultParamBins
	}
	for _, p := range slices.Sorted(maps.Keys(counts)) {
		c := counts[p]
		labels := map[string]string{}
		var numeric, text []string
		for b := range c {
			if strings.HasPrefix(b, "n:") {
				numeric = append(numeric, b)
			} else {
				text = append(text, b)
			}
		}
		// Text values: each its own bin.
		sort.Strings(text)
		for _, b := range text {
			labels[b] = strings.TrimPrefix(b, "s:")
		}
		// Numbers: equal-probability bins over the ordered buckets.
		sort.Slice(numeric, func(i, j int) bool { return bucketLow(numeric[i]) < bucketLow(numeric[j]) })
		var total int64
		for _, b := range numeric {
			total += c[b]
		}
		weights := make([]float64, len(numeric))
		xs := make([]float64, len(numeric))
		for i, b := range numeric {
			weights[i] = float64(c[b])
			xs[i] = bucketIndex(b)
		}
		var groups [][]string
		for _, g := range naturalBreaks(xs, weights, bins) {
			groups = append(groups, numeric[g[0]:g[1]])
		}
		for i, grp := range groups {
			lo := bucketLow(grp[0])
			label := ""
			if i == len(groups)-1 {
				label = fmt.Sprintf("%s+", formatBound(lo))
			} else {
				hi := bucketLow(groups[i+1][0])
				label = fmt.Sprintf("%s-%s", formatBound(lo), formatBound(hi))
			}
			for _, b := range grp {
				labels[b] = label
			}
		}
		distinct := map[string]bool{}
		for _, l := range labels {
			distinct[l] = true
		}
		if len(distinct) >= 2 {
			out[p] = labels
		}
	}
	return out
}

// naturalBreaks splits buckets at positions xs (ascending log-values), with
// the given counts, into at most k contiguous groups that minimize the
// count-weighted spread of log-values within groups (Fisher's optimal
// partition, known as Jenks' natural breaks), so that the bins follow the
// clusters of the values rather than cut through them. It returns the
// groups as [start, end) index pairs.
func naturalBreaks(xs, weights []float64, k int) [][2]int {
	n := len(weights)
	if n == 0 {
		return nil
	}
	k = min(k, n)
	// Prefix sums of w, w·x and w·x².
	sw, swx, swx2 := make([]float64, n+1), make([]float64, n+1), make([]float64, n+1)
	for i, w := range weights {
		x := xs[i]
		sw[i+1] = sw[i] + w
		swx[i+1] = swx[i] + w*x
		swx2[i+1] = swx2[i] + w*x*x
	}
	cost := func(i, j int) float64 { // buckets i..j-1
		w := sw[j] - sw[i]
		if w == 0 {
			return 0
		}
		m := (swx[j] - swx[i]) / w
		return (swx2[j] - swx2[i]) - w*m*m
	}
	inf := math.Inf(1)
	best := make([][]float64, k+1)
	from := make([][]int, k+1)
	for g := range best {
		best[g] = make([]float64, n+1)
		from[g] = make([]int, n+1)
		for j := range best[g] {
			best[g][j] = inf
		}
	}
	best[0][0] = 0
	for g := 1; g <= k; g++ {
		for j := g; j <= n; j++ {
			for i := g - 1; i < j; i++ {
				if c := best[g-1][i] + cost(i, j); c < best[g][j]-1e-12 {
					best[g][j], from[g][j] = c, i
				}
			}
		}
	}
	groups := make([][2]int, k)
	j := n
	for g := k; g >= 1; g-- {
		i := from[g][j]
		groups[g-1] = [2]int{i, j}
		j = i
	}
	return groups
}

// formatBound prints a bin bound readably.
func formatBound(v float64) string {
	return strconv.FormatFloat(round(v, 3), 'g', -1, 64)
}

// workloadParams gives the parameters of a workload whose requests enter
// at the given operations as model params, their values' probabilities
// over all of them.
func (g *generator) workloadParams(entries []*entryStats, bins map[string]map[string]string) []*model.Param {
	byParam := map[string]map[string]int64{}
	for _, e := range entries {
		for p, byBucket := range e.params {
			if byParam[p] == nil {
				byParam[p] = map[string]int64{}
			}
			for b, n := range byBucket {
				byParam[p][b] += n
			}
		}
	}
	var out []*model.Param
	for _, p := range slices.Sorted(maps.Keys(byParam)) {
		labels := bins[p]
		if labels == nil {
			continue
		}
		byLabel := map[string]int64{}
		for b, n := range byParam[p] {
			byLabel[labels[b]] += n
		}
		values := slices.Sorted(maps.Keys(byLabel))
		counts := make([]int64, len(values))
		for i, v := range values {
			counts[i] = byLabel[v]
		}
		out = append(out, &model.Param{Name: p, Values: values, Probs: roundedProbs(counts)})
	}
	return out
}

// paramSwitch builds, for an operation whose CPU demand or calls depend on a
// request parameter, a switch on it: per bin the CPU demand seen in that bin
// and the calls. It returns nil when no parameter matters.
func (g *generator) paramSwitch(id string, op *opStats, bins map[string]map[string]string) []model.Step {
	for _, p := range slices.Sorted(maps.Keys(op.params)) {
		labels := bins[p]
		if labels == nil {
			continue
		}
		byLabel := map[string]*paramStats{}
		for _, b := range slices.Sorted(maps.Keys(op.params[p])) {
			l := labels[b]
			agg := byLabel[l]
			if agg == nil {
				agg = &paramStats{demand: newSample(), variants: map[string]*variant{}}
				byLabel[l] = agg
			}
			agg.merge(op.params[p][b])
		}
		if len(byLabel) < 2 {
			continue
		}
		byBin := map[string]map[string]*variant{}
		merged := map[string]*variant{}
		for l, ps := range byLabel {
			byBin[l] = ps.variants
			for sig, v := range ps.variants {
				w := merged[sig]
				if w == nil {
					w = &variant{elems: cloneShape(v.elems)}
					merged[sig] = w
				}
				w.count += v.count
			}
		}
		callsDiffer := classesDiffer(byBin, merged)
		demandDiffers := demandsDiffer(byLabel)
		if !callsDiffer && !demandDiffers {
			continue
		}
		sw := model.Step{Kind: model.StepSwitch, On: p}
		for _, l := range slices.Sorted(maps.Keys(byLabel)) {
			ps := byLabel[l]
			var steps []model.Step
			if d := ps.demand; d.mean() > 0 {
				f := g.fit(id+" cpu "+p+"="+l, d)
				if scale := g.ownScale(op); scale != 1 {
					f = withMean(f, f.Mean()*scale)
				}
				steps = append(steps, model.Step{Kind: model.StepCPU, Demand: f})
			}
			steps = append(steps, g.variantSteps(ps.variants)...)
			sw.Cases = append(sw.Cases, model.Case{Value: l, Steps: steps})
		}
		what := []string{}
		if demandDiffers {
			what = append(what, "CPU demand")
		}
		if callsDiffer {
			what = append(what, "calls")
		}
		g.rep.evidencef("%s: %s depend on the request parameter %s: a switch on it over %d bins", id, strings.Join(what, " and "), p, len(byLabel))
		return []model.Step{sw}
	}
	return nil
}

// demandsDiffer tests whether the mean demand differs between bins: by more
// than 10 % and, by Welch's t test, at the 0.1 % level, for some pair of
// bins.
func demandsDiffer(byLabel map[string]*paramStats) bool {
	labels := slices.Sorted(maps.Keys(byLabel))
	for i := range labels {
		for j := i + 1; j < len(labels); j++ {
			a, b := byLabel[labels[i]].demand, byLabel[labels[j]].demand
			if a.n < 10 || b.n < 10 {
				continue
			}
			ma, mb := a.mean(), b.mean()
			if math.Abs(ma-mb) <= 0.1*math.Max(ma, mb) {
				continue
			}
			se := math.Sqrt(a.variance()/float64(a.n) + b.variance()/float64(b.n))
			if se == 0 {
				return true
			}
			z := math.Abs(ma-mb) / se
			if 2*(1-distuv.UnitNormal.CDF(z)) < classSwitchP {
				return true
			}
		}
	}
	return false
}

// foldParams records a request's parameters at its entry.
func (e *entryStats) foldParams(params map[string]string) {
	for p, b := range params {
		e.foldParamCount(p, b, 1)
	}
}

func (e *entryStats) foldParamCount(p, b string, n int64) {
	if e.params == nil {
		e.params = map[string]map[string]int64{}
	}
	if e.params[p] == nil {
		e.params[p] = map[string]int64{}
	}
	e.params[p][b] += n
}
