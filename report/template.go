package report

import "html/template"

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"add1": func(i int) int { return i + 1 },
	"add":  func(a, b int) int { return a + b },
}).Parse(pageHTML))

// pageHTML is the whole page. The timeline is a table: a column per lane, a
// row per action; every chip carries data-lane, data-kind and data-seq so
// that tools (and the browser test) can find it. The script only adds
// conveniences — event counts per lane, focusing a lane — and marks each
// timeline data-ready when it has run.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { --fg:#1d2330; --muted:#667085; --line:#d6dae3; --bg:#f6f7fb; --card:#fff;
  --ok:#1a7f37; --bad:#c62828; --warn:#b26a00; --blue:#1f5fbf; --violet:#6b3fb3; --teal:#0f766e; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; color:var(--fg); background:var(--bg); }
header { padding:18px 28px; background:#1d2330; color:#fff; }
header h1 { margin:0 0 4px; font-size:20px; }
header .meta { color:#c9cfdb; font-size:13px; }
header code { color:#fff; }
main { padding:18px 28px 60px; max-width:1800px; }
.headline { font-size:17px; font-weight:600; padding:10px 14px; border-radius:8px; margin:0 0 18px; }
.headline.good { background:#e7f5ec; color:var(--ok); border:1px solid #b7e0c4; }
.headline.bad { background:#fdecec; color:var(--bad); border:1px solid #f3bcbc; }
h2 { font-size:16px; margin:26px 0 10px; }
table.grid { border-collapse:collapse; background:var(--card); border:1px solid var(--line); }
table.grid th, table.grid td { padding:5px 10px; border-bottom:1px solid var(--line); text-align:left; vertical-align:top; }
table.grid th { background:#eef0f5; font-weight:600; font-size:12.5px; }
table.grid code { white-space:nowrap; }
td.num { text-align:right; font-variant-numeric:tabular-nums; }
.status { font-weight:600; }
.status.pass { color:var(--ok); } .status.violated { color:var(--bad); } .status.n\/a { color:var(--muted); }
.doc { color:var(--muted); font-size:12.5px; max-width:640px; }
.notes { color:var(--muted); margin:8px 0; padding-left:18px; }
section.case { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:14px 18px; margin:22px 0; }
section.case h3 { margin:0 0 6px; font-size:16px; }
.case .facts { color:var(--muted); font-size:13px; margin-bottom:8px; }
.case .facts code { color:var(--fg); }
.verdict { border-left:4px solid var(--bad); background:#fff7f7; padding:6px 12px; margin:8px 0; }
.verdict.pass { border-color:var(--ok); background:#f4fbf6; }
.verdict ul { margin:4px 0; padding-left:20px; }
pre { background:#f3f4f8; padding:8px 10px; border-radius:6px; overflow:auto; font-size:12px; margin:6px 0; }
.tl-wrap { overflow-x:auto; margin:10px 0; border:1px solid var(--line); border-radius:8px; }
table.timeline { border-collapse:separate; border-spacing:0; table-layout:fixed; font-size:12.5px; width:100%; }
.timeline col.c-line { width:52px; } .timeline col.c-time { width:78px; } .timeline col.c-flags { width:22%; }
.timeline td.flags div { overflow-wrap:anywhere; }
.ev .detail { overflow-wrap:anywhere; }
.timeline th, .timeline td { border-bottom:1px solid #eceef3; padding:3px 6px; vertical-align:top; }
.timeline thead th { position:sticky; top:0; background:#eef0f5; z-index:1; text-align:left; border-bottom:1px solid var(--line); }
.timeline .lane-head { cursor:pointer; }
.timeline .lane-head .sub { display:block; font-weight:400; color:var(--muted); font-size:11.5px; }
.timeline .lane-head .count { display:block; font-weight:400; color:var(--muted); font-size:11px; }
.timeline .lane-head.world { background:#e9ecf3; } .timeline .lane-head.ledger { background:#e8f4ee; }
.timeline td.lane { border-left:2px solid #e3e6ee; }
.timeline td.seq, .timeline td.time { color:var(--muted); white-space:nowrap; font-variant-numeric:tabular-nums; }
.timeline td.time .step { display:block; font-size:11px; }
.timeline tr.sep td { background:#f0f2f7; color:#3d4556; font-style:italic; padding:6px 10px; }
.timeline tr.flagged td { background:#fff1f1; }
.timeline td.flags { color:var(--bad); font-size:12px; }
.ev { display:block; border-radius:6px; padding:3px 7px; margin:1px 0; border:1px solid #cfd6e4; background:#f7f9fc; }
.ev .label { font-weight:600; display:block; }
.ev .detail { color:#4a5468; font-size:11.5px; display:block; }
.ev.deliver { background:#eaf1fd; border-color:#b8cdf3; }
.ev.produce { background:#eef4ff; border-color:#c3d3f5; }
.ev.step { background:#f4f0fb; border-color:#d9cdee; }
.ev.step.muted { opacity:.75; }
.ev.takeover { background:#efe4ff; border-color:#b99be6; }
.ev.commit { background:#e6f6ec; border-color:#a9dcba; }
.ev.ack { background:#f1f3f6; }
.ev.warn { background:#fff4e0; border-color:#f0c98a; }
.ev.dlq { background:#fde8e2; border-color:#eeb39f; }
.ev.crash { background:#c62828; border-color:#9d1d1d; color:#fff; }
.ev.crash .detail { color:#ffdcdc; }
.ev.clock { background:#fffbe6; border-color:#eedc8f; }
.ev.expiry { background:#fff1c9; border-color:#e4c25a; }
.ev.skew { background:#fff0dc; border-color:#f0c183; }
.ev.fault { background:#fbeefe; border-color:#e3bdea; }
.ev.cleanup { background:#e3f5f3; border-color:#9fd6cf; }
.ev.ledger { background:#e4f6e9; border-color:#8fd0a3; }
.ev.flagged { outline:2px solid var(--bad); outline-offset:1px; }
.timeline.focused .ev.dim { opacity:.18; }
ol.trace { font:12px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; background:#f3f4f8; border-radius:6px; padding:8px 8px 8px 48px; margin:6px 0; max-height:480px; overflow:auto; }
ol.trace li { white-space:pre-wrap; }
details summary { cursor:pointer; color:var(--blue); margin:6px 0; }
.legend span { display:inline-block; margin:0 8px 4px 0; }
.legend .ev { display:inline-block; }
.wrong { color:var(--bad); font-weight:600; }
.cov { display:inline-block; min-width:2.2em; padding:0 5px; border-radius:4px; text-align:right; }
.cov.unreached, code.unreached { background:#eef0f5; color:#475067; border:1px dashed #aab1c2; }
.cov.failed { background:#fdecec; color:var(--bad); border:1px solid #f3bcbc; font-weight:600; }
tr.cov-unreached td { color:#5b6478; }
code.unreached { padding:0 4px; border-radius:4px; }
</style>
</head>
<body>
<header>
  <h1>{{.Title}}</h1>
  <div class="meta">
    {{if .Target}}target <code>{{.Target}}</code> · {{end}}mode {{.Mode}}{{if .Seed}} · seed <code>{{.Seed}}</code>{{end}}{{if .Workers}} · {{.Workers}} worker(s){{end}}{{if .Budget}} · budget {{.Budget}}{{end}} · {{.Checks}} {{.Unit}} in {{.ElapsedText}}
    {{if .Command}}<br>command <code>{{.Command}}</code>{{end}}
  </div>
</header>
<main>
<p class="headline {{if .Bad}}bad{{else}}good{{end}}" id="headline">{{.Headline}}</p>

{{with .Explore}}
<h2>Exploration</h2>
<table class="grid" id="exploration">
<tbody>
<tr><th>world</th><td>{{.World}}</td></tr>
{{if .Menu}}<tr><th>step menu</th><td>{{range $i, $m := .Menu}}{{if $i}}, {{end}}<code>{{$m}}</code>{{end}}</td></tr>{{end}}
{{if .Engine}}<tr><th>engine</th><td><code>{{.Engine}}</code></td></tr>{{end}}
{{if .DepthAsked}}<tr><th>depth asked</th><td class="num">{{.DepthAsked}}</td></tr>{{end}}
{{if .Levels}}<tr><th>distinct states</th><td class="num" data-figure="states">{{.States}}</td></tr>
<tr><th>transitions</th><td class="num" data-figure="transitions">{{.Transitions}}{{if .Skipped}} ({{.Skipped}} skipped by partial order){{end}}</td></tr>
<tr><th>states/s</th><td class="num" data-figure="states-per-second">{{printf "%.0f" .StatesPerSecond}}</td></tr>
{{if .BytesPerState}}<tr><th>bytes/state</th><td class="num" data-figure="bytes-per-state">{{printf "%.0f" .BytesPerState}}</td></tr>{{end}}{{end}}
{{if .Schedules}}<tr><th>schedules</th><td class="num" data-figure="schedules">{{.Schedules}}</td></tr>
<tr><th>schedules/s</th><td class="num" data-figure="schedules-per-second">{{printf "%.0f" .SchedulesPerSecond}}</td></tr>{{end}}
<tr><th>verdict</th><td class="status {{if .Violated}}violated{{else}}pass{{end}}" id="explore-verdict">{{.Verdict}}</td></tr>
</tbody></table>
{{if .Levels}}
<h3>New states per depth</h3>
<table class="grid" id="levels">
<thead><tr><th>depth</th><th>new states</th><th>transitions</th></tr></thead>
<tbody>
{{range .Levels}}<tr data-depth="{{.Depth}}"><td class="num">{{.Depth}}</td><td class="num">{{.States}}</td><td class="num">{{.Transitions}}</td></tr>
{{end}}</tbody></table>
{{end}}
{{if .Histories}}
<h3>Histories</h3>
<table class="grid" id="histories">
<thead><tr><th>history</th><th>delivery orders judged</th><th>verdict</th><th>what it does</th></tr></thead>
<tbody>
{{range .Histories}}<tr data-history="{{.Name}}" data-status="{{if .Violated}}violated{{else}}pass{{end}}">
<td><code>{{.Name}}</code></td><td class="num">{{.Orders}}</td><td class="status {{if .Violated}}violated{{else}}pass{{end}}">{{.Verdict}}</td><td class="doc">{{.Doc}}</td></tr>
{{end}}</tbody></table>
{{end}}
{{end}}

{{with .Consumer}}
<h2>Consumer</h2>
<table class="grid" id="consumer">
<tbody>
<tr><th>consumer</th><td><code>{{.Consumer}}</code></td></tr>
<tr><th>database</th><td>{{.Database}}</td></tr>
<tr><th>scenarios</th><td class="num" data-figure="scenarios">{{$.Checks}}</td></tr>
<tr><th>scenarios/s</th><td class="num" data-figure="scenarios-per-second">{{printf "%.0f" .PerSecond}}</td></tr>
<tr><th>situations reached</th><td data-figure="situations">{{.Reached}} of {{add .Reached (len .Unreached)}}{{if .Unreached}}; never reached: {{range $i, $u := .Unreached}}{{if $i}}, {{end}}<code class="unreached">{{$u}}</code>{{end}}{{end}}</td></tr>
</tbody></table>
<h3>Laws</h3>
<table class="grid" id="laws">
<thead><tr><th>law</th><th>verdict</th><th>what must hold</th></tr></thead>
<tbody>
{{range .Laws}}<tr data-law="{{.Law}}" data-status="{{.Status}}"><td><code>{{.Law}}</code></td><td class="status {{.Status}}">{{.Status}}{{if .Summary}}<br><span class="doc">{{.Summary}}</span>{{end}}</td><td class="doc">{{.Doc}}</td></tr>
{{end}}</tbody></table>
{{end}}

{{if .Properties}}
<h2>Properties</h2>
<table class="grid" id="properties">
<thead><tr><th>#</th><th>property</th><th>kind</th><th>checks</th><th>violations</th><th>verdict</th><th>what must hold</th></tr></thead>
<tbody>
{{range .Properties}}<tr data-property="{{.Name}}" data-status="{{.Status}}">
<td class="num">{{.Invariant}}</td><td><code>{{.Name}}</code></td><td>{{.Kind}}</td><td class="num">{{.Checks}}</td><td class="num">{{.Violations}}</td>
<td class="status {{.Status}}">{{.Status}}{{range .Broken}}<br><code class="law">{{.}}</code>{{end}}{{range .Off}}<br><span class="off">switched off: <code class="law">{{.Law}}</code> — {{.Reason}}</span>{{end}}</td><td class="doc">{{.Doc}}</td></tr>
{{end}}</tbody></table>
{{end}}

{{if .Coverage}}
<h2>Coverage</h2>
<p class="legend">The situations a run must reach for the checks to mean anything: how many runs of each kind reached each.{{if .CoverageFailure}}<br><span class="wrong">{{.CoverageFailure}}</span>{{end}}</p>
<table class="grid" id="coverage">
<thead><tr><th>situation</th><th>kind</th><th>runs reaching it</th><th>of runs</th><th>%</th><th>what counts</th></tr></thead>
<tbody>
{{range .Coverage}}<tr data-situation="{{.Name}}" data-missing="{{.Missing}}" data-state="{{.State}}" class="cov-{{.State}}">
<td><code>{{.Name}}</code></td><td>{{.Kind}}</td><td class="num"><span class="cov {{.State}}">{{.Reached}}</span></td><td class="num">{{.Runs}}</td><td class="num">{{printf "%.2f" .Percent}}</td><td class="doc">{{.Doc}}</td></tr>
{{end}}</tbody></table>
{{if .Unreached}}<p class="legend" id="coverage-legend"><span class="cov unreached">0</span> never reached: no run got there. That is no failure; the checks just say nothing about that situation.{{if .CoverageFailure}} <span class="cov failed">0</span> a situation the campaign must reach, and did not (the coverage check failed).{{end}}</p>{{end}}
{{end}}

{{if .Mutants}}
<h2>Mutants</h2>
<table class="grid" id="mutants">
<thead><tr><th>mutant</th><th>killed by</th><th>killed</th><th>median checks</th><th>median s to kill</th><th>max s to kill</th><th>median s shrinking</th><th>shrunk size</th><th>bug</th></tr></thead>
<tbody>
{{range .Mutants}}<tr data-mutant="{{.Mutant}}">
<td><code>{{.Mutant}}</code></td><td><code>{{.Property}}</code></td>
<td class="num {{if lt .Killed .Runs}}wrong{{end}}">{{.Killed}}/{{.Runs}}</td><td class="num">{{.MedianChecks}}</td>
<td class="num">{{printf "%.3f" .MedianSeconds}}</td><td class="num">{{printf "%.3f" .MaxSeconds}}</td><td class="num">{{printf "%.3f" .ShrinkSeconds}}</td><td class="num">{{.Size}}</td><td class="doc">{{.Bug}}</td></tr>
{{end}}</tbody></table>
{{end}}
{{if .Notes}}<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}

{{if .Cases}}
<h2>Counterexamples</h2>
{{end}}
{{if .ConsumerCases}}
<p class="legend" id="consumer-legend">Read each timeline top to bottom: a row per line of the trace, a lane per worker with the calls its handler made; the broker's lane has what was produced, delivered, duplicated and dead-lettered, and time moving. Rows with a red outline are what a broken law points at: the statement that applied an event's effect once too many (its second write of the effects, or a write after the replay), or, for an event lost or dead-lettered, the end of its deliveries; the "marked because" column says which law and why.<br>
<span class="ev produce">produce</span><span class="ev deliver">delivery</span><span class="ev step">SQL statement / point</span><span class="ev commit">commit</span><span class="ev ack">ack</span><span class="ev warn">nack / lock wait</span><span class="ev fault">injected failure / duplicate / replay</span><span class="ev crash">crash</span><span class="ev clock">time</span><span class="ev dlq">DLQ</span></p>
{{end}}
{{if .RunnerCases}}
<p class="legend">Read each timeline top to bottom: a row per action, a lane per worker; the broker, the clocks and the ledger have lanes of their own. Rows with a red outline are what the failed property points at.<br>
<span class="ev deliver">delivery</span><span class="ev step">claim / handler</span><span class="ev takeover">lease takeover</span><span class="ev commit">commit</span><span class="ev ledger">ledger write</span><span class="ev crash">crash</span><span class="ev expiry">lease / ack-timeout expiry</span><span class="ev skew">clock skew / step</span><span class="ev fault">duplicate / replay</span><span class="ev cleanup">cleanup</span><span class="ev dlq">DLQ</span></p>
{{end}}

{{range .Cases}}{{$c := .}}
<section class="case" id="{{.Anchor}}" data-property="{{.Property}}" data-target="{{.Target}}">
<h3>{{.Title}}</h3>
<div class="facts">
  {{if .Kind}}{{.Kind}} scenario of size {{.Size}}{{end}}{{if .Facts}} · {{.Facts}}{{end}}{{if .Seed}} · found by rapid seed <code>{{.Seed}}</code>{{end}}
  {{if .CorpusFile}} · corpus file <code>{{.CorpusFile}}</code>{{if .New}} (new){{else}} (already known){{end}}{{end}}
  {{if .Replay}}<br>replay: <code>{{.Replay}}</code>{{end}}
</div>
{{range .Failed}}<div class="verdict" data-verdict="fail"><b>FAIL {{.Property}}</b>: {{.Summary}}
{{if .Details}}<ul>{{range .Details}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Diff}}<details open><summary>{{$c.DiffLabel}}</summary><pre>{{.Diff}}</pre></details>{{end}}
</div>{{end}}
{{if .Passed}}<details><summary>{{len .Passed}} other propert{{if eq (len .Passed) 1}}y passes{{else}}ies pass{{end}}</summary>
{{range .Passed}}<div class="verdict pass" data-verdict="pass"><b>PASS {{.Property}}</b>: {{.Summary}}</div>{{end}}</details>{{end}}

{{with .Timeline}}{{$tl := .}}
<div class="tl-wrap">
<table class="timeline" data-kind="{{.Kind}}" data-lanes="{{len .Lanes}}" style="min-width:{{.MinWidth}}px">
<colgroup><col class="c-line"><col class="c-time">{{range .Lanes}}<col class="c-lane">{{end}}<col class="c-flags"></colgroup>
<thead><tr><th title="trace line">line</th><th>time</th>{{range .Lanes}}<th class="lane-head {{.Class}}" data-lane="{{.ID}}" title="click to focus this lane">{{.Name}}<span class="sub">{{.Sub}}</span><span class="count"></span></th>{{end}}<th>marked because</th></tr></thead>
<tbody>
{{range .Rows}}{{if .Separator}}<tr class="sep"><td colspan="{{$tl.Cols}}">{{.Separator}}</td></tr>
{{else}}<tr data-line="{{.Line}}"{{if .Flags}} class="flagged"{{end}} title="{{.Tip}}"><td class="seq">{{if .Line}}<a href="#{{$c.Anchor}}-line-{{.Line}}">{{.Line}}</a>{{end}}</td><td class="time">{{.Time}}{{if .Step}}<span class="step">{{.Step}}</span>{{end}}</td>
{{range .Cells}}<td class="lane" data-lane="{{.Lane}}">{{$lane := .Lane}}{{range .Chips}}<div class="ev {{.Class}}" data-lane="{{$lane}}" data-kind="{{.Kind}}"><span class="label">{{.Label}}</span>{{if .Detail}}<span class="detail">{{.Detail}}</span>{{end}}</div>{{end}}</td>{{end}}
<td class="flags">{{range .Flags}}<div>⚠ {{.}}</div>{{end}}</td></tr>
{{end}}{{end}}</tbody></table>
</div>
{{end}}

{{with .Proj}}
<h4>What each replica's projectors ended with</h4>
<table class="grid replicas">
<thead><tr><th>replica</th><th>projector</th><th>applied</th><th>dropped</th><th>final state (got / causally correct)</th></tr></thead>
<tbody>
{{range .Replicas}}{{$r := .}}{{range .Projectors}}<tr data-replica="{{$r.Name}}" data-projector="{{.Name}}">
<td>{{$r.Name}}<br><span class="doc">{{$r.Deliveries}}</span></td><td><code>{{.Name}}</code>{{if not .Claimed}} (baseline){{end}}</td>
<td class="num">{{.Applied}}</td><td class="num">{{.Dropped}}</td>
<td>{{range .Orders}}<div{{if .Wrong}} class="wrong"{{end}}>{{.Order}}: {{.Got}}{{if .Wrong}} (want {{.Want}}){{end}}</div>{{end}}</td></tr>
{{end}}{{end}}</tbody></table>
{{end}}

{{if .Trace}}<details{{if not .Timeline}} open{{end}}><summary>numbered trace ({{len .Trace}} lines)</summary>
<ol class="trace">{{range $i, $l := .Trace}}<li id="{{$c.Anchor}}-line-{{add1 $i}}">{{$l}}</li>{{end}}</ol></details>{{end}}
{{if .Scenario}}<details><summary>scenario JSON</summary><pre>{{.Scenario}}</pre></details>{{end}}
</section>
{{end}}
</main>
<script>
(function () {
  document.querySelectorAll('table.timeline').forEach(function (tl) {
    var counts = {};
    tl.querySelectorAll('.ev').forEach(function (ev) {
      counts[ev.dataset.lane] = (counts[ev.dataset.lane] || 0) + 1;
    });
    tl.querySelectorAll('th.lane-head').forEach(function (h) {
      var n = counts[h.dataset.lane] || 0;
      h.querySelector('.count').textContent = n + (n === 1 ? ' event' : ' events');
      h.addEventListener('click', function () {
        var on = tl.dataset.focus !== h.dataset.lane;
        tl.dataset.focus = on ? h.dataset.lane : '';
        tl.classList.toggle('focused', on);
        tl.querySelectorAll('.ev').forEach(function (ev) {
          ev.classList.toggle('dim', on && ev.dataset.lane !== h.dataset.lane);
        });
      });
    });
    tl.dataset.ready = 'true';
  });
})();
</script>
</body>
</html>
`
