package report

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

// Diagram geometry, in SVG user units (pixels at 100 %).
const (
	nodeW    = 200.0 // width of a component or workload box
	nodePad  = 8.0   // inner padding of a box
	titleH   = 17.0  // height of a box's title line
	lineH    = 15.0  // height of a box's other lines
	hostPad  = 10.0  // padding between a host box and its components
	nodeGap  = 10.0  // vertical gap between components of one host
	colGap   = 110.0 // horizontal gap between columns, where edge labels go
	blockGap = 26.0  // vertical gap between boxes of one column
	margin   = 16.0
)

// box is a rectangle.
type box struct{ X, Y, W, H float64 }

func (b box) right() float64   { return b.X + b.W }
func (b box) bottom() float64  { return b.Y + b.H }
func (b box) centerY() float64 { return b.Y + b.H/2 }

// overlaps reports whether two boxes share more than an edge.
func (b box) overlaps(o box) bool {
	return b.X < o.right() && o.X < b.right() && b.Y < o.bottom() && o.Y < b.bottom()
}

// contains reports whether o lies inside b.
func (b box) contains(o box) bool {
	return o.X >= b.X && o.Y >= b.Y && o.right() <= b.right() && o.bottom() <= b.bottom()
}

// diagramNode is a component, or the users of a workload.
type diagramNode struct {
	name     string
	workload bool
	host     string
	lines    []string
	// hot marks the node whose thread pool is the bottleneck.
	hot   bool
	layer int
	col   int // the column the layout put it in
	box
	// leftPorts and rightPorts are the edge ends on either side.
	leftPorts, rightPorts []*portUse
}

// portUse is one end of an edge on a side of a box.
type portUse struct {
	edge  *diagramEdge
	other *diagramNode
	start bool // the edge leaves here
	y     float64
}

// diagramHost is a host box and the components it runs.
type diagramHost struct {
	name  string
	lines []string
	// hot marks the host whose CPU or disk is the bottleneck; hotLine the
	// line that names it.
	hot     bool
	hotLine int
	nodes   []*diagramNode
	box
}

// diagramEdge is a call edge, routed as a cubic Bézier curve.
type diagramEdge struct {
	from, to *diagramNode
	rate     float64
	async    bool
	// p holds the four control points: start, two handles, end.
	p [4][2]float64
	// label is where the rate is written.
	label [2]float64
}

// diagram is a laid out architecture.
type diagram struct {
	width, height float64
	hosts         []*diagramHost
	nodes         []*diagramNode
	edges         []*diagramEdge
}

// block is what a column stacks: a host box, or a workload's box.
type block struct {
	host      *diagramHost
	node      *diagramNode
	col, last int // the first and last column it spans
	name      string
	key       float64 // ordering key within the column
	box
}

// operationDepths gives every operation its call depth: 1 for the
// operations the workloads call, and one more than its deepest caller for
// the others (the longest call path from a workload). Operations no workload
// reaches, and those on a call cycle, get depth 1.
func operationDepths(m *model.Model) map[string]int {
	targets := map[string][]string{}
	indeg := map[string]int{}
	var ids []string
	for _, c := range m.Components {
		h := m.Host(c.Host)
		for _, op := range c.Operations {
			id := op.ID()
			ids = append(ids, id)
			own := &ownLoad{calls: map[string]float64{}, sends: map[string]float64{}}
			walkOwn(op.Steps, h, nil, 1, own, 0)
			seen := map[string]bool{}
			for _, t := range slices.Sorted(maps.Keys(own.calls)) {
				seen[t] = true
			}
			for t := range own.sends {
				seen[t] = true
			}
			for _, t := range slices.Sorted(maps.Keys(seen)) {
				if m.Operation(t) != nil && t != id {
					targets[id] = append(targets[id], t)
					indeg[t]++
				}
			}
		}
	}
	depth := map[string]int{}
	var queue []string
	for _, id := range ids {
		depth[id] = 1
		if indeg[id] == 0 {
			queue = append(queue, id)
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, t := range targets[id] {
			depth[t] = max(depth[t], depth[id]+1)
			if indeg[t]--; indeg[t] == 0 {
				queue = append(queue, t)
			}
		}
	}
	return depth
}

// layout places the diagram's boxes in columns by call depth, workloads on
// the left; a host's box spans the columns of its components, which stand
// in their own columns inside it. Boxes are stacked in each column near the
// boxes they are connected to, ordered to reduce crossings. Then the edges
// are routed. The result depends only on its input.
func (d *diagram) layout(m *model.Model, reached map[string]bool) {
	depths := operationDepths(m)
	byName := map[string]*diagramNode{}
	for _, n := range d.nodes {
		if !n.workload {
			byName[n.name] = n
		}
	}
	for _, c := range m.Components {
		n := byName[c.Name]
		if n == nil {
			continue
		}
		best, bestReached := math.MaxInt, math.MaxInt
		for _, op := range c.Operations {
			dep := depths[op.ID()]
			best = min(best, dep)
			if reached[op.ID()] {
				bestReached = min(bestReached, dep)
			}
		}
		if bestReached != math.MaxInt {
			best = bestReached
		}
		if best == math.MaxInt {
			best = 1
		}
		n.layer = best
	}
	// Close gaps between used layers: they become the columns.
	used := map[int]bool{0: true}
	for _, n := range d.nodes {
		used[n.layer] = true
	}
	index := map[int]int{}
	for i, c := range slices.Sorted(maps.Keys(used)) {
		index[c] = i
	}
	for _, n := range d.nodes {
		n.col = index[n.layer]
	}
	// Blocks: a workload's box, or a host's box over its columns.
	var blocks []*block
	blockOf := map[*diagramNode]*block{}
	for _, n := range d.nodes {
		if n.workload {
			b := &block{node: n, col: 0, last: 0, name: "0" + n.name}
			blocks = append(blocks, b)
			blockOf[n] = b
		}
	}
	for _, h := range d.hosts {
		b := &block{host: h, col: math.MaxInt, last: 0, name: "1" + h.name}
		for _, n := range h.nodes {
			b.col, b.last = min(b.col, n.col), max(b.last, n.col)
			blockOf[n] = b
		}
		blocks = append(blocks, b)
	}
	ncol := len(index)
	columns := make([][]*block, ncol)
	for _, b := range blocks {
		columns[b.col] = append(columns[b.col], b)
	}
	// Neighbours between blocks, weighted by the number of edges.
	neigh := map[*block]map[*block]float64{}
	link := func(a, b *block) {
		if a == b {
			return
		}
		if neigh[a] == nil {
			neigh[a] = map[*block]float64{}
		}
		neigh[a][b]++
	}
	for _, e := range d.edges {
		link(blockOf[e.from], blockOf[e.to])
		link(blockOf[e.to], blockOf[e.from])
	}
	// Order the blocks that start in each column: start by name, then
	// sweep right and left, sorting each column by the mean position of
	// its neighbours in the column just done.
	position := map[*block]float64{}
	for _, col := range columns {
		slices.SortStableFunc(col, func(x, y *block) int { return cmp.Compare(x.name, y.name) })
		for i, b := range col {
			position[b] = float64(i)
		}
	}
	reorder := func(col []*block, ref int) {
		for _, b := range col {
			var sum, w float64
			for nb, k := range neigh[b] {
				if nb.col == ref {
					sum += k * position[nb]
					w += k
				}
			}
			b.key = position[b]
			if w > 0 {
				b.key = sum / w
			}
		}
		slices.SortStableFunc(col, func(x, y *block) int {
			if c := cmp.Compare(x.key, y.key); c != 0 {
				return c
			}
			return cmp.Compare(x.name, y.name)
		})
		for i, b := range col {
			position[b] = float64(i)
		}
	}
	for range 4 {
		for c := 1; c < ncol; c++ {
			reorder(columns[c], c-1)
		}
		for c := ncol - 2; c >= 0; c-- {
			reorder(columns[c], c+1)
		}
	}
	// Sizes: components stack in their column of the host's box.
	for _, n := range d.nodes {
		n.W = nodeW
		n.H = 2*nodePad + titleH + lineH*float64(len(n.lines))
	}
	for _, b := range blocks {
		b.W = float64(b.last-b.col)*(nodeW+2*hostPad+colGap) + nodeW + 2*hostPad
		if b.node != nil {
			b.H = b.node.H
			continue
		}
		stack := map[int]float64{}
		for _, n := range b.host.nodes {
			if stack[n.col] > 0 {
				stack[n.col] += nodeGap
			}
			stack[n.col] += n.H
		}
		tallest := 0.0
		for _, h := range stack {
			tallest = max(tallest, h)
		}
		b.H = hostHeaderHeight(b.host) + tallest + hostPad
	}
	// Vertical positions, column by column: each block near the mean
	// height of its neighbours placed already, below everything placed in
	// the columns it spans.
	bottom := make([]float64, ncol)
	for c := range bottom {
		bottom[c] = margin - blockGap
	}
	center := map[*block]float64{}
	for c, col := range columns {
		for _, b := range col {
			want := 0.0
			for k := b.col; k <= b.last; k++ {
				want = max(want, bottom[k]+blockGap)
			}
			var sum, w float64
			for nb, k := range neigh[b] {
				if y, ok := center[nb]; ok {
					sum += k * y
					w += k
				}
			}
			if w > 0 {
				want = max(want, sum/w-b.H/2)
			}
			b.X, b.Y = columnX(c), want
			center[b] = b.Y + b.H/2
			for k := b.col; k <= b.last; k++ {
				bottom[k] = b.Y + b.H
			}
		}
	}
	// Place the boxes inside the blocks.
	for _, b := range blocks {
		if b.node != nil {
			b.node.X, b.node.Y = b.X+hostPad, b.Y
			continue
		}
		h := b.host
		h.box = b.box
		y := map[int]float64{}
		for _, n := range h.nodes {
			if _, ok := y[n.col]; !ok {
				y[n.col] = b.Y + hostHeaderHeight(h)
			}
			n.X, n.Y = columnX(n.col)+hostPad, y[n.col]
			y[n.col] += n.H + nodeGap
		}
	}
	d.width, d.height = 0, 0
	for _, b := range blocks {
		d.width = max(d.width, b.right()+margin)
		d.height = max(d.height, b.bottom()+margin)
	}
	d.route()
	d.placeLabels()
	for _, e := range d.edges {
		d.width = max(d.width, e.label[0]+60, e.p[1][0]+margin, e.p[2][0]+margin)
		d.height = max(d.height, e.label[1]+margin)
	}
}

// hostHeaderHeight is the height of a host box above its first component.
func hostHeaderHeight(h *diagramHost) float64 {
	return nodePad + titleH + lineH*float64(len(h.lines)) + nodePad
}

// route gives every edge its ports and its curve.
func (d *diagram) route() {
	for _, n := range d.nodes {
		n.leftPorts, n.rightPorts = nil, nil
	}
	type kind int
	const (
		forward kind = iota
		sameColumn
		backward
	)
	kinds := map[*diagramEdge]kind{}
	for _, e := range d.edges {
		cf, ct := e.from.col, e.to.col
		switch {
		case ct > cf:
			kinds[e] = forward
			e.from.rightPorts = append(e.from.rightPorts, &portUse{edge: e, other: e.to, start: true})
			e.to.leftPorts = append(e.to.leftPorts, &portUse{edge: e, other: e.from})
		case ct == cf:
			kinds[e] = sameColumn
			e.from.rightPorts = append(e.from.rightPorts, &portUse{edge: e, other: e.to, start: true})
			e.to.rightPorts = append(e.to.rightPorts, &portUse{edge: e, other: e.from})
		default:
			kinds[e] = backward
			e.from.leftPorts = append(e.from.leftPorts, &portUse{edge: e, other: e.to, start: true})
			e.to.rightPorts = append(e.to.rightPorts, &portUse{edge: e, other: e.from})
		}
	}
	// Spread the ports of a side over the box's height, ordered by where
	// the other end is.
	spread := func(n *diagramNode, ports []*portUse) {
		slices.SortStableFunc(ports, func(a, b *portUse) int {
			if c := cmp.Compare(a.other.centerY(), b.other.centerY()); c != 0 {
				return c
			}
			if c := cmp.Compare(a.other.name, b.other.name); c != 0 {
				return c
			}
			return cmp.Compare(a.edge.rate, b.edge.rate)
		})
		top, span := n.Y+nodePad, n.H-2*nodePad
		for i, p := range ports {
			p.y = top + span*float64(i+1)/float64(len(ports)+1)
		}
	}
	ends := map[*diagramEdge][2]float64{} // y at the start, y at the end
	for _, n := range d.nodes {
		spread(n, n.leftPorts)
		spread(n, n.rightPorts)
		for _, p := range append(slices.Clone(n.leftPorts), n.rightPorts...) {
			v := ends[p.edge]
			if p.start {
				v[0] = p.y
			} else {
				v[1] = p.y
			}
			ends[p.edge] = v
		}
	}
	for _, e := range d.edges {
		y1, y2 := ends[e][0], ends[e][1]
		switch kinds[e] {
		case forward:
			x1, x2 := e.from.right(), e.to.X
			dx := (x2 - x1) / 2
			e.p = [4][2]float64{{x1, y1}, {x1 + dx, y1}, {x2 - dx, y2}, {x2, y2}}
		case sameColumn:
			x1, x2 := e.from.right(), e.to.right()
			k := math.Min(30+0.25*math.Abs(y2-y1), colGap-40)
			e.p = [4][2]float64{{x1, y1}, {x1 + k, y1}, {x2 + k, y2}, {x2, y2}}
		case backward:
			x1, x2 := e.from.X, e.to.right()
			k := math.Min(40+0.25*math.Abs(y2-y1), colGap-40)
			e.p = [4][2]float64{{x1, y1}, {x1 - k, y1}, {x2 + k, y2}, {x2, y2}}
		}
	}
}

// columnX is the left edge of a column's blocks.
func columnX(col int) float64 { return margin + float64(col)*(nodeW+2*hostPad+colGap) }

// labelLift is how far above its point on the curve a rate label sits.
const labelLift = 8.0

// labelBox is the box a rate label takes for the point p of its curve.
func labelBox(text string, p [2]float64) box {
	w := 6.6*float64(len([]rune(text))) + 6
	return box{X: p[0] - w/2, Y: p[1] - labelLift - 8, W: w, H: 15}
}

// placeLabels puts each edge's rate on its curve where it overlaps no box
// and no other label: for a forward edge in one of the gaps it crosses,
// nearest the target first; otherwise along the curve's middle.
func (d *diagram) placeLabels() {
	var taken []box
	for _, n := range d.nodes {
		taken = append(taken, n.box)
	}
	for _, h := range d.hosts {
		taken = append(taken, box{X: h.X, Y: h.Y, W: h.W, H: hostHeaderHeight(h) - nodePad})
	}
	free := func(b box) bool {
		for _, t := range taken {
			if b.overlaps(t) {
				return false
			}
		}
		return true
	}
	for _, e := range d.edges {
		text := textout.Rate(e.rate)
		var candidates [][2]float64
		if e.to.col > e.from.col {
			for c := e.to.col; c > e.from.col; c-- {
				gapMid := columnX(c) - colGap/2
				for _, off := range []float64{0, -0.2, 0.2, -0.35, 0.35} {
					candidates = append(candidates, bezierAtX(e.p, gapMid+off*colGap))
				}
			}
		} else {
			for _, t := range []float64{0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8} {
				candidates = append(candidates, bezierAt(e.p, t))
			}
		}
		e.label = candidates[0]
		for _, c := range candidates {
			if free(labelBox(text, c)) {
				e.label = c
				break
			}
		}
		taken = append(taken, labelBox(text, e.label))
	}
}

// bezierAt is the point of a cubic Bézier curve at parameter t.
func bezierAt(p [4][2]float64, t float64) [2]float64 {
	u := 1 - t
	a, b, c, d := u*u*u, 3*u*u*t, 3*u*t*t, t*t*t
	return [2]float64{
		a*p[0][0] + b*p[1][0] + c*p[2][0] + d*p[3][0],
		a*p[0][1] + b*p[1][1] + c*p[2][1] + d*p[3][1],
	}
}

// bezierAtX is the point of a curve whose x grows with t where x is the
// given value (the nearest end when x is outside the curve).
func bezierAtX(p [4][2]float64, x float64) [2]float64 {
	lo, hi := 0.0, 1.0
	for range 40 {
		mid := (lo + hi) / 2
		if bezierAt(p, mid)[0] < x {
			lo = mid
		} else {
			hi = mid
		}
	}
	return bezierAt(p, (lo+hi)/2)
}

// formatFloat writes an SVG coordinate with at most one decimal.
func formatFloat(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}
