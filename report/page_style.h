#pragma once
// The report page's one style sheet, inlined into the page (no external fonts or files). Colors
// are chosen for distinct lightness, so the best cell (dark bar plus a "best" tag) and idle
// stretches (hatched) still read when printed in grayscale.

namespace nodus::report {

inline constexpr const char* kPageStyle = R"css(
:root {
  --ink: #1f2933; --muted: #52606d; --faint: #9aa5b1; --line: #e4e7eb; --panel: #f6f7f9;
  --accent: #1e3a8a; --accent-soft: #eef2fb; --bar: #a7b9d6; --sample: #a9b8d3;
  --idle: #b45309; --idle-soft: #fcefd9; --bad: #b42318;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; background: #fff; color: var(--ink);
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "Noto Sans",
    "Liberation Sans", "DejaVu Sans", Arial, sans-serif;
}
main { max-width: 1180px; margin: 0 auto; padding: 36px 40px 40px; }
h1 { font-size: 26px; line-height: 1.25; margin: 2px 0 6px; font-weight: 700; }
h2 { font-size: 17px; line-height: 1.3; margin: 0 0 4px; font-weight: 700; }
.section-note { margin: 0 0 14px; color: var(--muted); font-size: 13px; }
section { margin-top: 34px; }
.eyebrow {
  margin: 0; color: var(--accent); font-size: 12px; font-weight: 700;
  letter-spacing: .08em; text-transform: uppercase;
}
.meta { margin: 0; color: var(--muted); }
.meta span + span::before { content: "\00b7"; margin: 0 8px; color: var(--faint); }
.summary {
  margin-top: 22px; padding: 18px 22px; background: var(--panel);
  border: 1px solid var(--line); border-radius: 10px;
}
.answer { margin: 0 0 16px; font-size: 16px; line-height: 1.45; }
.kpis { display: grid; grid-template-columns: repeat(4, 1fr); gap: 12px; margin: 0; }
.kpis div { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.kpis dt { color: var(--muted); font-size: 12px; }
.kpis dd { margin: 0; font-size: 21px; font-weight: 700; font-variant-numeric: tabular-nums; }
.kpis dd small { font-size: 12px; font-weight: 400; color: var(--muted); margin-left: 6px; }
.setup dl { display: grid; grid-template-columns: max-content 1fr; gap: 8px 22px; margin: 12px 0 0; }
.setup dt { color: var(--muted); font-size: 13px; padding-top: 1px; }
.setup dt.command { padding-top: 9px; }
.setup dd { margin: 0; }
.grid-axis + .grid-axis { margin-top: 2px; }
.grid-axis b { font-weight: 600; }
pre {
  margin: 0; padding: 8px 12px; white-space: pre-wrap; overflow-wrap: anywhere;
  background: var(--panel); border: 1px solid var(--line); border-radius: 6px;
  font: 13px/1.45 ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono",
    "Liberation Mono", monospace;
}
.table-wrap { overflow-x: auto; margin-top: 12px; border: 1px solid var(--line); border-radius: 8px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 8px 12px; text-align: left; border-bottom: 1px solid var(--line); white-space: nowrap; }
tbody tr:last-child td { border-bottom: 0; }
th { background: var(--panel); color: var(--muted); font-size: 12px; font-weight: 600; }
th.num, td.num { text-align: right; }
td.verdict { white-space: normal; min-width: 250px; font-size: 13px; line-height: 1.35; }
th .unit { display: block; font-weight: 400; color: var(--faint); }
tr.best td { background: var(--accent-soft); font-weight: 600; }
tr.best td:first-child { box-shadow: inset 4px 0 0 var(--accent); }
.badge {
  display: inline-block; margin-left: 8px; padding: 0 6px; border-radius: 4px;
  background: var(--accent); color: #fff; font-size: 10.5px; font-weight: 700;
  letter-spacing: .05em; text-transform: uppercase; vertical-align: 1px;
}
.status-bad { color: var(--bad); font-weight: 600; }
.na { color: var(--faint); }
.charts { display: grid; grid-template-columns: repeat(3, 1fr); gap: 16px; }
.multiples { display: grid; grid-template-columns: repeat(3, 1fr); gap: 16px; }
figure { margin: 0; padding: 12px 14px 8px; border: 1px solid var(--line); border-radius: 8px; }
figure.best { border-color: var(--accent); box-shadow: inset 0 3px 0 var(--accent); }
figcaption { display: flex; justify-content: space-between; gap: 8px; margin-bottom: 6px; font-weight: 700; font-size: 13.5px; }
figcaption .hint { font-weight: 400; color: var(--muted); font-size: 12px; text-align: right; }
.no-data { color: var(--muted); font-size: 13px; margin: 6px 0 10px; }
svg.chart { display: block; width: 100%; height: auto; overflow: visible; }
svg.chart text { font-family: inherit; font-size: 12px; fill: var(--ink); }
svg.chart .tick { fill: var(--muted); font-size: 11px; font-variant-numeric: tabular-nums; }
svg.chart .axis-title { fill: var(--muted); font-size: 11.5px; }
svg.chart .value { font-variant-numeric: tabular-nums; }
svg.chart .row.best text { font-weight: 700; }
svg.chart .best-tag { fill: var(--accent); font-size: 10px; letter-spacing: .05em; }
.grid { stroke: #edf0f3; stroke-width: 1; }
.baseline, .tick-mark { stroke: var(--faint); stroke-width: 1; }
.bar { fill: var(--bar); }
.bar.best { fill: var(--accent); }
.util { fill: none; stroke: var(--sample); stroke-width: 1; stroke-linejoin: round; }
.util.solo { stroke: var(--accent); stroke-width: 1.6; }
.util-mean { fill: none; stroke: var(--accent); stroke-width: 2.2; stroke-linejoin: round; stroke-linecap: round; }
.threshold { stroke: var(--idle); stroke-width: 1; stroke-dasharray: 3 3; }
.hatch-bg { fill: var(--idle-soft); }
.hatch-line { stroke: var(--idle); stroke-width: 1.2; stroke-opacity: .32; }
.legend { display: flex; flex-wrap: wrap; gap: 18px; margin: 0 0 14px; color: var(--muted); font-size: 13px; }
.legend span { display: inline-flex; align-items: center; gap: 6px; }
.swatch { display: inline-block; width: 22px; height: 12px; border-radius: 2px; }
.swatch.line { height: 0; border-top: 2.5px solid var(--accent); border-radius: 0; }
.swatch.sample { height: 0; border-top: 1.5px solid var(--sample); border-radius: 0; }
.swatch.idle {
  border: 1px solid rgba(180, 83, 9, .45);
  background: repeating-linear-gradient(45deg, var(--idle-soft) 0 3px, rgba(180, 83, 9, .35) 3px 4.2px);
}
.timelines { display: grid; grid-template-columns: minmax(0, 900px); gap: 16px; }
.step-timeline .lane { fill: none; stroke: var(--line); }
.step-timeline .cpu { fill: #64748b; }
.step-timeline .gpu { fill: var(--accent); }
.step-timeline .gap { fill: rgba(180, 83, 9, .55); }
.step-timeline .gap.fetch { fill: rgba(180, 83, 9, .22); }
.step-timeline .sync { stroke: #b91c1c; stroke-width: 1.5; }
.swatch.tl-cpu { background: #64748b; }
.swatch.tl-gpu { background: var(--accent); }
.swatch.tl-gap { background: rgba(180, 83, 9, .55); }
.swatch.tl-fetch { background: rgba(180, 83, 9, .22); }
.swatch.tl-sync { width: 3px; background: #b91c1c; }
.swatch.threshold { height: 0; border-top: 1px dashed var(--idle); border-radius: 0; }
.diagnoses { display: grid; grid-template-columns: repeat(2, 1fr); gap: 14px; }
.multiples.single { grid-template-columns: minmax(0, 440px); }
.diagnoses.single { grid-template-columns: minmax(0, 760px); }
article.diagnosis { padding: 12px 16px; border: 1px solid var(--line); border-radius: 8px; }
article.diagnosis.best { border-color: var(--accent); box-shadow: inset 4px 0 0 var(--accent); }
article.diagnosis h3 { margin: 0 0 2px; font-size: 14.5px; }
article.diagnosis .verdict { margin: 0 0 8px; color: var(--muted); }
article.diagnosis ul { margin: 0; padding: 0; list-style: none; }
article.diagnosis li + li { margin-top: 10px; padding-top: 10px; border-top: 1px dashed var(--line); }
article.diagnosis p { margin: 0; }
.finding { font-weight: 600; }
article.diagnosis p.kv { display: grid; grid-template-columns: 76px 1fr; margin-top: 3px; }
.k { color: var(--muted); font-size: 11px; line-height: 21px; text-transform: uppercase; letter-spacing: .05em; }
.evidence { color: var(--muted); }
footer { margin-top: 40px; padding-top: 14px; border-top: 1px solid var(--line); color: var(--faint); font-size: 12px; }
@media (max-width: 900px) {
  main { padding: 20px; }
  .charts, .multiples, .diagnoses { grid-template-columns: 1fr; }
  .kpis { grid-template-columns: repeat(2, 1fr); }
}
@media print {
  main { max-width: none; padding: 0; }
  section, figure, article { break-inside: avoid; }
}
)css";

}  // namespace nodus::report
