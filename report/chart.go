package report

import (
	"fmt"
	"math"
	"strings"
)

// Chart geometry.
const (
	chartW      = 640.0
	chartH      = 300.0
	plotLeft    = 64.0
	plotRight   = 18.0
	plotTop     = 16.0
	plotBottom  = 46.0
	legendLineH = 18.0
	charW       = 6.6 // mean width of a character of the 12px chart font
)

// series is one line of a chart.
type series struct {
	name   string
	class  string // colour class: c0…c7, hot, muted
	dashed bool
	width  float64
	pts    [][2]float64
}

// marker is a point drawn on its own, with a tooltip.
type marker struct {
	x, y  float64
	class string
	shape string // circle, diamond
	open  bool   // hollow
	title string
}

// vline is a labelled vertical line.
type vline struct {
	x     float64
	label string
	class string
}

// legendItem is an entry of a chart's legend.
type legendItem struct {
	name, class, shape string
	dashed, open       bool
}

// lineChart is an x–y chart of lines and points.
type lineChart struct {
	id, title      string
	xLabel, yLabel string
	xFmt           func(float64) string
	yFmt           func(float64) string // for tooltips
	yAxis          func(max float64) (ticks []float64, label func(float64) string)
	yMax           float64 // fixed top of the y axis, or 0 for the data's
	series         []series
	markers        []marker
	vlines         []vline
	hlines         []float64
	legend         []legendItem
}

// niceTicks returns round tick values covering [0, hi].
func niceTicks(hi float64, n int) []float64 {
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = 1
	}
	raw := hi / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	var step float64
	for _, f := range []float64{1, 2, 2.5, 5, 10} {
		step = f * p
		if step >= raw {
			break
		}
	}
	var out []float64
	for i := 0; ; i++ {
		v := float64(i) * step
		out = append(out, v)
		if v >= hi*(1-1e-9) {
			break
		}
	}
	return out
}

// timeAxis chooses ticks for a time axis in one unit.
func timeAxis(hi float64) ([]float64, func(float64) string) {
	unit, scale := "s", 1.0
	switch {
	case hi < 2e-3:
		unit, scale = "µs", 1e6
	case hi < 2:
		unit, scale = "ms", 1e3
	}
	ticks := niceTicks(hi*scale, 5)
	for i := range ticks {
		ticks[i] /= scale
	}
	return ticks, func(v float64) string { return trimZeros(v*scale) + " " + unit }
}

// percentAxis has ticks every 20 % up to 100 %.
func percentAxis(float64) ([]float64, func(float64) string) {
	return []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, func(v float64) string { return fmt.Sprintf("%.0f %%", v*100) }
}

// trimZeros writes a tick value without needless digits.
func trimZeros(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// svg renders the chart.
func (c *lineChart) svg() string {
	// The data's extent.
	xMax, yMax := 0.0, 0.0
	for _, s := range c.series {
		for _, p := range s.pts {
			xMax, yMax = math.Max(xMax, p[0]), math.Max(yMax, p[1])
		}
	}
	for _, m := range c.markers {
		xMax, yMax = math.Max(xMax, m.x), math.Max(yMax, m.y)
	}
	for _, v := range c.vlines {
		xMax = math.Max(xMax, v.x)
	}
	if c.yMax > 0 {
		yMax = c.yMax
	}
	xTicks := niceTicks(xMax*1.02, 6)
	yTicks, yLabel := c.yAxis(yMax * 1.05)
	xTop, yTop := xTicks[len(xTicks)-1], yTicks[len(yTicks)-1]
	// The legend wraps under the plot.
	type placed struct {
		legendItem
		x, y float64
	}
	var items []placed
	lx, ly := plotLeft, 0.0
	for _, it := range c.legend {
		w := 30 + charW*float64(len([]rune(it.name))) + 16
		if lx+w > chartW-plotRight && lx > plotLeft {
			lx, ly = plotLeft, ly+legendLineH
		}
		items = append(items, placed{it, lx, ly})
		lx += w
	}
	legendH := 0.0
	if len(items) > 0 {
		legendH = ly + legendLineH + 6
	}
	height := chartH + legendH
	pw, ph := chartW-plotLeft-plotRight, chartH-plotTop-plotBottom
	X := func(x float64) float64 { return plotLeft + pw*x/xTop }
	Y := func(y float64) float64 { return plotTop + ph*(1-math.Min(y, yTop)/yTop) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="%s" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" role="img" aria-label="%s">`,
		c.id, formatFloat(chartW), formatFloat(height), svgText(c.title))
	fmt.Fprintf(&b, `<title>%s</title>`, svgText(c.title))
	// Grid and axes.
	for _, t := range yTicks {
		y := Y(t)
		fmt.Fprintf(&b, `<line class="grid" x1="%s" x2="%s" y1="%s" y2="%s"/>`, formatFloat(plotLeft), formatFloat(plotLeft+pw), formatFloat(y), formatFloat(y))
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, formatFloat(plotLeft-6), formatFloat(y+4), svgText(yLabel(t)))
	}
	for _, t := range xTicks {
		x := X(t)
		fmt.Fprintf(&b, `<line class="grid" x1="%s" x2="%s" y1="%s" y2="%s"/>`, formatFloat(x), formatFloat(x), formatFloat(plotTop), formatFloat(plotTop+ph))
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, formatFloat(x), formatFloat(plotTop+ph+16), svgText(c.xFmt(t)))
	}
	fmt.Fprintf(&b, `<rect class="frame" x="%s" y="%s" width="%s" height="%s"/>`, formatFloat(plotLeft), formatFloat(plotTop), formatFloat(pw), formatFloat(ph))
	fmt.Fprintf(&b, `<text class="axis" x="%s" y="%s" text-anchor="middle">%s</text>`, formatFloat(plotLeft+pw/2), formatFloat(plotTop+ph+36), svgText(c.xLabel))
	fmt.Fprintf(&b, `<text class="axis" transform="translate(14 %s) rotate(-90)" text-anchor="middle">%s</text>`, formatFloat(plotTop+ph/2), svgText(c.yLabel))
	for _, h := range c.hlines {
		y := Y(h)
		fmt.Fprintf(&b, `<line class="limit" x1="%s" x2="%s" y1="%s" y2="%s"/>`, formatFloat(plotLeft), formatFloat(plotLeft+pw), formatFloat(y), formatFloat(y))
	}
	for i, v := range c.vlines {
		x := X(v.x)
		fmt.Fprintf(&b, `<line class="vline %s" x1="%s" x2="%s" y1="%s" y2="%s"/>`, v.class, formatFloat(x), formatFloat(x), formatFloat(plotTop), formatFloat(plotTop+ph))
		anchor, dx := "start", 4.0
		if x > plotLeft+pw*0.8 {
			anchor, dx = "end", -4
		}
		fmt.Fprintf(&b, `<text class="vlabel %s" x="%s" y="%s" text-anchor="%s">%s</text>`, v.class, formatFloat(x+dx), formatFloat(plotTop+12+14*float64(i%2)), anchor, svgText(v.label))
	}
	// Lines: muted ones first, the bottleneck last.
	order := make([]int, 0, len(c.series))
	for pass := 0; pass < 3; pass++ {
		for i, s := range c.series {
			rank := 1
			switch s.class {
			case "muted":
				rank = 0
			case "hot":
				rank = 2
			}
			if rank == pass {
				order = append(order, i)
			}
		}
	}
	for _, i := range order {
		s := c.series[i]
		if len(s.pts) == 0 {
			continue
		}
		var d strings.Builder
		for j, p := range s.pts {
			cmd := "L"
			if j == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%s,%s ", cmd, formatFloat(X(p[0])), formatFloat(Y(p[1])))
		}
		class := "line " + s.class
		if s.dashed {
			class += " dashed"
		}
		width := s.width
		if width == 0 {
			width = 2
		}
		fmt.Fprintf(&b, `<path class="%s" stroke-width="%s" d="%s"><title>%s</title></path>`, class, formatFloat(width), strings.TrimSpace(d.String()), svgText(s.name))
		if len(s.pts) <= 40 && s.class != "muted" {
			for _, p := range s.pts {
				fmt.Fprintf(&b, `<circle class="dot %s" cx="%s" cy="%s" r="2.5"><title>%s: %s</title></circle>`, s.class, formatFloat(X(p[0])), formatFloat(Y(p[1])), svgText(s.name), svgText(c.xFmt(p[0])+", "+c.yFmt(p[1])))
			}
		}
	}
	for _, m := range c.markers {
		b.WriteString(shape(m.shape, m.class, m.open, X(m.x), Y(m.y), 5.5, m.title))
	}
	for _, it := range items {
		y := chartH + it.y + 4
		if it.shape != "" {
			b.WriteString(shape(it.shape, it.class, it.open, it.x+12, y, 5, ""))
		} else {
			class := "line " + it.class
			if it.dashed {
				class += " dashed"
			}
			fmt.Fprintf(&b, `<line class="%s" stroke-width="2.5" x1="%s" x2="%s" y1="%s" y2="%s"/>`, class, formatFloat(it.x), formatFloat(it.x+24), formatFloat(y), formatFloat(y))
		}
		fmt.Fprintf(&b, `<text class="legend" x="%s" y="%s">%s</text>`, formatFloat(it.x+30), formatFloat(y+4), svgText(it.name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// shape draws a marker.
func shape(kind, class string, open bool, x, y, r float64, title string) string {
	cls := "mark " + class
	if open {
		cls += " open"
	}
	t := ""
	if title != "" {
		t = "<title>" + svgText(title) + "</title>"
	}
	if kind == "diamond" {
		r *= 1.25
		return fmt.Sprintf(`<path class="%s" d="M%s,%s L%s,%s L%s,%s L%s,%s z">%s</path>`, cls,
			formatFloat(x), formatFloat(y-r), formatFloat(x+r), formatFloat(y),
			formatFloat(x), formatFloat(y+r), formatFloat(x-r), formatFloat(y), t)
	}
	return fmt.Sprintf(`<circle class="%s" cx="%s" cy="%s" r="%s">%s</circle>`, cls, formatFloat(x), formatFloat(y), formatFloat(r), t)
}

// bar is one bar of a bar chart.
type bar struct {
	label    string
	value    float64
	measured *float64
	hot      bool
	title    string
}

// barChart draws horizontal bars of fractions from 0 to 100 %.
func barChart(id, title string, bars []bar) string {
	const (
		labelW = 190.0
		valueW = 64.0
		rowH   = 22.0
		top    = 8.0
		bottom = 26.0
	)
	height := top + rowH*float64(len(bars)) + bottom
	pw := chartW - labelW - valueW
	X := func(v float64) float64 { return labelW + pw*math.Min(math.Max(v, 0), 1) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart bars" id="%s" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" role="img" aria-label="%s"><title>%s</title>`,
		id, formatFloat(chartW), formatFloat(height), svgText(title), svgText(title))
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		x := X(t)
		fmt.Fprintf(&b, `<line class="grid" x1="%s" x2="%s" y1="%s" y2="%s"/>`, formatFloat(x), formatFloat(x), formatFloat(top), formatFloat(height-bottom))
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%.0f %%</text>`, formatFloat(x), formatFloat(height-bottom+16), t*100)
	}
	for i, br := range bars {
		y := top + rowH*float64(i)
		class := "bar"
		if br.hot {
			class += " hot"
		}
		fmt.Fprintf(&b, `<text class="blabel" x="%s" y="%s" text-anchor="end">%s<title>%s</title></text>`, formatFloat(labelW-8), formatFloat(y+rowH/2+4), svgText(truncate(br.label, 28)), svgText(br.label))
		fmt.Fprintf(&b, `<rect class="%s" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`, class, formatFloat(labelW), formatFloat(y+4), formatFloat(math.Max(X(br.value)-labelW, 1)), formatFloat(rowH-8), svgText(br.title))
		if br.measured != nil {
			x := X(*br.measured)
			fmt.Fprintf(&b, `<line class="measured" x1="%s" x2="%s" y1="%s" y2="%s"><title>measured %s</title></line>`, formatFloat(x), formatFloat(x), formatFloat(y+1), formatFloat(y+rowH-1), svgText(fmtPercent(*br.measured)))
		}
		fmt.Fprintf(&b, `<text class="bvalue" x="%s" y="%s">%s</text>`, formatFloat(chartW-valueW+6), formatFloat(y+rowH/2+4), svgText(fmtUtil(br.value)))
	}
	b.WriteString(`</svg>`)
	return b.String()
}
