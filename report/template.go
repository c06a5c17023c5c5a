package report

// pageHTML is the report's template: one page, its style and its script
// inline.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="generator" content="perfcast">
<link rel="icon" href="data:,">
<title>perfcast report: {{.Model}}</title>
<style>
:root {
  --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --panel: #f6f8fa;
  --box: #ffffff; --hostbg: #eef2f7; --accent: #0969da; --hot: #cf222e; --hotbg: #ffebe9;
  --meas: #8250df; --warn: #9a6700;
  --c0: #0969da; --c1: #1a7f37; --c2: #bc4c00; --c3: #1b7c83; --c4: #bf3989; --c5: #953800; --c6: #57606a; --c7: #7d4e00;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --panel: #151b23;
    --box: #1b222c; --hostbg: #121820; --accent: #4493f8; --hot: #ff7b72; --hotbg: #3c1618;
    --meas: #ab7df8; --warn: #d29922;
    --c0: #4493f8; --c1: #3fb950; --c2: #db6d28; --c3: #39c5cf; --c4: #db61a2; --c5: #e3b341; --c6: #9198a1; --c7: #a5d6ff;
  }
}
* { box-sizing: border-box; }
html { background: var(--bg); color: var(--fg); }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; max-width: 1300px; margin: 0 auto; padding: 24px 28px 64px; }
h1 { font-size: 1.7em; margin: 0 0 4px; }
h2 { font-size: 1.3em; margin: 40px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05em; margin: 20px 0 6px; }
a { color: var(--accent); }
.sub { color: var(--muted); margin: 0 0 12px; }
nav { display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 0.92em; margin: 8px 0 20px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 16px 0; }
.card { flex: 1 1 200px; background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.card .label { color: var(--muted); font-size: 0.85em; text-transform: uppercase; letter-spacing: 0.04em; }
.card .value { font-size: 1.35em; font-weight: 650; overflow-wrap: anywhere; }
.card .note { color: var(--muted); font-size: 0.88em; }
.card.hot { border-color: var(--hot); background: var(--hotbg); }
.card.hot .value { color: var(--hot); }
#summary p { margin: 8px 0; max-width: 80ch; }
#summary ul { margin: 4px 0; }
.note { color: var(--muted); font-size: 0.92em; max-width: 90ch; }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 8px; background: var(--bg); }
.diagram { display: block; max-width: 100%; height: auto; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(460px, 1fr)); gap: 16px; }
figure { margin: 0; }
figcaption { font-weight: 600; margin: 8px 0 4px; }
svg.chart { width: 100%; height: auto; display: block; }
table { border-collapse: collapse; font-size: 0.9em; margin: 8px 0; }
th, td { padding: 4px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; white-space: nowrap; }
table.sortable thead tr:last-child th { cursor: pointer; user-select: none; }
table.sortable thead tr:last-child th::after { content: " ↕"; color: var(--muted); font-size: 0.8em; }
table.sortable th[aria-sort="ascending"]::after { content: " ▲"; color: var(--fg); }
table.sortable th[aria-sort="descending"]::after { content: " ▼"; color: var(--fg); }
th.group { text-align: center; cursor: default; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.none { color: var(--muted); }
td.bad { color: var(--hot); font-weight: 600; }
td.warn { color: var(--warn); }
td.hotcell { color: var(--hot); font-weight: 600; }
.tablewrap { overflow-x: auto; }
details { margin: 8px 0; }
summary { cursor: pointer; color: var(--accent); }
ul.warnings li { color: var(--warn); }
ul.evidence li, ul.warnings li { margin: 2px 0; }
footer { margin-top: 48px; color: var(--muted); font-size: 0.88em; border-top: 1px solid var(--line); padding-top: 8px; }
dl.terms dt { font-weight: 600; color: var(--fg); }
dl.terms dd { margin: 0 0 6px 0; }

/* Pictures. */
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
.host rect { fill: var(--hostbg); stroke: var(--line); stroke-width: 1.2; }
.host.hot rect { stroke: var(--hot); stroke-width: 2.5; }
.htitle { font-size: 13px; font-weight: 650; fill: var(--fg); }
.hline { font-size: 12px; fill: var(--muted); }
.hline.hotline { fill: var(--hot); font-weight: 650; }
.node rect { fill: var(--box); stroke: var(--muted); stroke-width: 1.2; }
.node.workload rect { fill: var(--panel); stroke: var(--accent); }
.node.hot rect { stroke: var(--hot); stroke-width: 2.5; }
.ntitle { font-size: 13px; font-weight: 650; fill: var(--fg); }
.nline { font-size: 12px; fill: var(--muted); }
.edge { fill: none; stroke: var(--muted); stroke-opacity: 0.75; }
.edge.async { stroke-dasharray: 7 5; }
.arrowhead { fill: var(--muted); }
.elabel { font-size: 11.5px; fill: var(--fg); paint-order: stroke; stroke: var(--bg); stroke-width: 4px; stroke-linejoin: round; }
.grid { stroke: var(--line); stroke-width: 1; }
.frame { fill: none; stroke: var(--line); }
.tick { font-size: 11px; fill: var(--muted); }
.axis { font-size: 12px; fill: var(--fg); }
.legend { font-size: 12px; fill: var(--fg); }
.line { fill: none; stroke-linejoin: round; stroke-linecap: round; }
.dashed { stroke-dasharray: 7 5; }
.c0 { stroke: var(--c0); } .c1 { stroke: var(--c1); } .c2 { stroke: var(--c2); } .c3 { stroke: var(--c3); }
.c4 { stroke: var(--c4); } .c5 { stroke: var(--c5); } .c6 { stroke: var(--c6); } .c7 { stroke: var(--c7); }
.line.hot { stroke: var(--hot); }
.line.muted { stroke: var(--muted); stroke-opacity: 0.45; }
.dot.c0 { fill: var(--c0); } .dot.c1 { fill: var(--c1); } .dot.c2 { fill: var(--c2); } .dot.c3 { fill: var(--c3); }
.dot.c4 { fill: var(--c4); } .dot.c5 { fill: var(--c5); } .dot.c6 { fill: var(--c6); } .dot.c7 { fill: var(--c7); }
.dot.hot { fill: var(--hot); stroke: none; }
.mark { stroke-width: 2; }
.mark.c0 { fill: var(--c0); stroke: var(--c0); }
.mark.meas { fill: var(--meas); stroke: var(--meas); }
.mark.open { fill: var(--bg); }
.vline { stroke-width: 1.3; }
.vline.obs { stroke: var(--fg); stroke-dasharray: 2 3; }
.vline.sat { stroke: var(--hot); stroke-dasharray: 6 3; }
.vlabel { font-size: 11px; fill: var(--muted); }
.vlabel.sat { fill: var(--hot); }
.limit { stroke: var(--hot); stroke-dasharray: 3 3; stroke-opacity: 0.6; }
.bar { fill: var(--c0); fill-opacity: 0.8; }
.bar.hot { fill: var(--hot); fill-opacity: 0.9; }
.measured { stroke: var(--meas); stroke-width: 3; }
.blabel, .bvalue { font-size: 12px; fill: var(--fg); }

@media print {
  :root { --bg: #ffffff; --fg: #000000; --panel: #f4f4f4; --box: #ffffff; --hostbg: #f2f4f7; }
  body { max-width: none; padding: 0; font-size: 11pt; }
  nav, .noprint { display: none; }
  .scroll { overflow: visible; border: none; }
  .diagram { max-width: 100%; height: auto; }
  .charts { display: block; }
  figure, .card, tr { break-inside: avoid; }
  h2 { break-after: avoid; }
  table.sortable thead tr:last-child th::after { content: ""; }
  a { color: inherit; text-decoration: none; }
}
</style>
</head>
<body>
<header>
<h1>Performance report: {{.Model}}</h1>
<p class="sub">{{.Subtitle}}</p>
<nav aria-label="Sections"><a href="#summary">Summary</a><a href="#architecture">Architecture</a><a href="#response-time">Response time</a><a href="#utilization">Utilization</a>{{if .HasMeasured}}<a href="#comparison">Measured vs predicted</a>{{else}}<a href="#comparison">Workloads</a>{{end}}<a href="#operations">Operations</a>{{if .HasSweep}}<a href="#sweep">Load sweep</a>{{end}}<a href="#evidence">Evidence and warnings</a></nav>
</header>

<main>
<section id="summary">
<h2>Summary</h2>
<div class="cards">{{range .Cards}}<div class="card{{if .Hot}} hot{{end}}"><div class="label">{{.Label}}</div><div class="value">{{.Value}}</div><div class="note">{{.Note}}</div></div>{{end}}</div>
{{range .Summary}}<p>{{.}}</p>
{{end}}</section>

<section id="architecture">
<h2>Architecture</h2>
<p class="note">Components (white boxes) in the host boxes that run them, with each host's cores and CPU utilization; users of each workload on the left. Arrows are calls, numbered in calls per second at the observed load and thicker when more frequent; dashed arrows are asynchronous sends. A delay per call is time spent outside the modelled resources (external services, waits). The bottleneck is outlined in red.</p>
<div class="scroll">{{.Diagram}}</div>
</section>

<section id="response-time">
<h2>Response time against load</h2>
<p class="note">{{.RTNote}}{{if .RTCharts}} The dotted line marks the observed load, the red dashed line the load at which the bottleneck saturates. Circles are the prediction at the observed load{{if .HasMeasured}}, diamonds what the traces measured{{end}}; filled for the mean, hollow for the 95th percentile.{{end}}</p>
<div class="charts">{{range .RTCharts}}<figure>{{.}}</figure>{{end}}</div>
</section>

<section id="utilization">
<h2>Utilization</h2>
<p class="note">Utilization is the fraction of a resource's capacity in use: busy cores, disk servers, threads or pool units, averaged over replicas. A resource near 100 % makes requests queue.{{if .HasMeasured}} Purple ticks are the utilization measured from the spans' CPU time.{{end}}</p>
<div class="charts">
<figure><figcaption>At the observed load</figcaption>{{.UtilBars}}</figure>
{{if .HasSweep}}<figure><figcaption>As load grows</figcaption>{{.UtilLines}}</figure>{{end}}
</div>
{{if .UtilTable}}<details><summary>Utilization of every resource at every load level</summary>
<div class="tablewrap">{{template "table" .UtilTable}}</div></details>{{end}}
<h3>Resources at the observed load</h3>
<div class="tablewrap">{{template "table" .Resources}}</div>
</section>

<section id="comparison">
<h2>{{if .HasMeasured}}Measured vs predicted{{else}}Workloads{{end}}</h2>
<p class="note">{{if .HasMeasured}}Per workload, what the traces measured next to what the model predicts for the same load. Errors above 10 % are in amber, above 30 % in red.{{else}}Per workload, what the model predicts at the load it describes.{{end}}</p>
<div class="tablewrap">{{template "table" .Workloads}}</div>
</section>

<section id="operations">
<h2>Operations</h2>
<p class="note">Every operation with its rate, its own CPU demand and delay per call (without the operations it calls), and its response time (including them). Traces measure spans: where a request waits before an operation's span starts (for a thread, a CPU slot), the predicted span is set next to the measured one. Click a column header to sort.</p>
<div class="tablewrap">{{template "table" .Operations}}</div>
</section>

{{if .Sweep}}<section id="sweep">
<h2>Load sweep</h2>
<p class="note">The model solved with every workload's load multiplied by the factor in the first column.</p>
<div class="tablewrap">{{template "table" .Sweep}}</div>
</section>{{end}}

<section id="evidence">
<h2>Evidence and warnings</h2>
{{if .Extraction}}<p>{{.Extraction}}</p>{{else}}<p class="note">This model was not extracted in the same run, so there is no extraction evidence to show.</p>{{end}}
{{if .Warnings}}<h3>Warnings</h3><ul class="warnings">{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Evidence}}<h3>What the model was inferred from</h3><ul class="evidence">{{range .Evidence}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .SolverNotes}}<h3>Solver notes</h3><ul class="warnings">{{range .SolverNotes}}<li>{{.}}</li>{{end}}</ul>{{end}}
</section>
</main>

<footer>
<dl class="terms">
<dt>Saturation</dt><dd>The load at which the bottleneck would be busy all the time if throughput grew in proportion to load (the utilization law); for a thread pool or lock whose holders wait for other resources, the load at which the solved model shows it 98 % busy. Open workloads cannot be served beyond it.</dd>
<dt>Headroom</dt><dd>How much the load can grow, all workloads together, before saturation.</dd>
<dt>p95</dt><dd>The 95th percentile: 95 % of requests finish within this time.</dd>
</dl>
<p>Generated by perfcast.</p>
</footer>
<script>
(function () {
  "use strict";
  function key(td) {
    var s = td ? td.getAttribute("data-sort") : null;
    return s === null ? null : parseFloat(s);
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var rows = table.tHead.rows;
    var heads = rows[rows.length - 1].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.tabIndex = 0;
      function sort() {
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        var body = table.tBodies[0];
        var list = Array.prototype.slice.call(body.rows);
        var numeric = th.classList.contains("num");
        list.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col];
          if (numeric) {
            var nx = key(x), ny = key(y);
            if (nx === null && ny === null) { return 0; }
            if (nx === null) { return 1; }
            if (ny === null) { return -1; }
            return dir * (nx - ny);
          }
          return dir * x.textContent.localeCompare(y.textContent);
        });
        list.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  });
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  });
  document.documentElement.setAttribute("data-ready", "1");
})();
</script>
</body>
</html>
{{define "table"}}<table class="sortable" id="{{.ID}}"><thead>{{if .Group}}<tr>{{range .Group}}<th class="group" colspan="{{.Span}}">{{.Label}}</th>{{end}}</tr>{{end}}<tr>{{range .Head}}<th scope="col"{{if .Num}} class="num"{{end}}{{if .Title}} title="{{.Title}}"{{end}}>{{.Label}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td{{if .Class}} class="{{.Class}}"{{end}}{{if .Sort}} data-sort="{{.Sort}}"{{end}}{{if .Style}} style="{{.Style}}"{{end}}{{if .Title}} title="{{.Title}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</tbody></table>{{end}}`
