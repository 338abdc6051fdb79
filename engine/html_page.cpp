// engine/html_page.cpp — the page to_html writes: CSS, body and JavaScript, inlined (no network).
//
// The script draws one variant at a time from the JSON beside it. State is the variant and the
// step (0 = the first step of the backward, the last tape entry). The DOM it writes is also what
// the browser test reads: each gradient is a .grad block (data-label, data-role "in"/"out",
// data-ok "true"/"false" when checked) whose cells carry their full value in data-v.
#include "engine/html_page.h"

namespace hg {

const char* html_page_style() {
  return R"CSS(
body { font: 14px/1.35 "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 0; color: #1d2433; background: #fafbfc; }
header { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; padding: 6px 14px; background: #1d2433; color: #fff; font-size: 13px; }
header h1 { font-size: 15px; margin: 0 10px 0 0; font-weight: 600; }
button { font: inherit; padding: 2px 8px; border-radius: 4px; border: 1px solid #9aa5b8; background: #fff; cursor: pointer; }
button.on { background: #fde8a6; border-color: #c49a1a; font-weight: 600; }
button:disabled { opacity: 0.4; cursor: default; }
#where { font-weight: 600; min-width: 250px; text-align: center; }
#variants { margin-right: 10px; }
#bar { padding: 4px 14px; font-size: 13px; border-bottom: 1px solid #d5dbe5; }
.bad { color: #b3141b; font-weight: 600; } .good { color: #17703a; }
main { display: grid; grid-template-columns: minmax(340px, 40%) 1fr; gap: 10px; padding: 8px 14px; }
#graph { background: #fff; border: 1px solid #d5dbe5; border-radius: 6px; overflow: auto; height: calc(100vh - 130px); position: relative; }
#graph svg { width: 100%; height: auto; }
#graph g.node { cursor: pointer; }
#graph g.node.current polygon, #graph g.node.current path { fill: #ffd24d !important; stroke: #b3141b; stroke-width: 3; }
#graph g.node.picked polygon { stroke: #2156c9; stroke-width: 3; }
#graph g.node.failed polygon { fill: #f7c1c1 !important; }
#tape-list li { cursor: pointer; } #tape-list li.current { background: #ffd24d; }
#node, #step { background: #fff; border: 1px solid #d5dbe5; border-radius: 6px; padding: 8px 12px; }
#node { margin-top: 10px; }
h2 { font-size: 15px; margin: 2px 0 6px; } h3 { font-size: 13px; margin: 10px 0 4px; color: #44506a; }
.formula { font: 20px/1.4 "DejaVu Serif", Georgia, serif; background: #f3f0e6; padding: 6px 10px; border-radius: 4px; margin: 4px 0 8px; }
.site { color: #5d6880; font-size: 12px; }
.row { display: flex; flex-wrap: wrap; gap: 14px; align-items: flex-start; }
.grad, .tensor { display: inline-block; vertical-align: top; }
.name { font: 15px "DejaVu Serif", Georgia, serif; } .shape { color: #5d6880; font-size: 12px; }
table.m { border-collapse: collapse; font: 13px "DejaVu Sans Mono", monospace; margin: 2px 0;
  border-left: 2px solid #44506a; border-right: 2px solid #44506a; }
table.m td { padding: 1px 6px; text-align: right; }
td.nz { background: #e3f0ff; font-weight: 600; }
td.off { background: #f7c1c1; }
td.text-ok { color: #17703a; } td.text-off { color: #b3141b; font-weight: 600; }
.check { font-size: 12px; margin-top: 2px; }
.fd { border-left: 3px solid #17703a; padding-left: 8px; } .fd.failed { border-left-color: #b3141b; }
.heat { display: inline-grid; gap: 0; border: 1px solid #44506a; margin: 2px 0; }
.heat div { width: 100%; aspect-ratio: 1; }
.note { color: #5d6880; font-size: 12px; max-width: 60em; }
)CSS";
}

const char* html_page_body() {
  return R"HTML(<header>
  <h1 id="title"></h1>
  <span id="variants"></span>
  <button id="first" title="first step (Home)">« first</button>
  <button id="prev" title="previous step (←)">← back</button>
  <span id="where"></span>
  <button id="next" title="next step (→)">next →</button>
  <button id="last" title="last step (End)">last »</button>
</header>
<div id="bar"><span id="summary"></span> <span class="note" id="intro"></span></div>
<main>
  <div id="graph"></div>
  <div>
    <div id="step"></div>
    <div id="node"></div>
  </div>
</main>)HTML";
}

const char* html_page_script() {
  return R"JS(
"use strict";
const data = JSON.parse(document.getElementById("hg-data").textContent);
const state = { variant: 0, step: 0, picked: null };
window.hgState = state;
const $ = (id) => document.getElementById(id);
const num = (v) => (typeof v === "string" ? Number(v.replace("inf", "Infinity")) : v);
const fmt = (v) => { v = num(v); return Number.isFinite(v) ? v.toFixed(3) : (Number.isNaN(v) ? "nan" : (v < 0 ? "−inf" : "inf")); };
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const shapeStr = (s) => "(" + s.join(", ") + (s.length === 1 ? "," : "") + ")";
const isName = (l) => /^[\p{L}\p{N}_.ᵀ₀-₉]+$/u.test(l);
const dL = (l) => "dL/d" + (isName(l) ? l : "(" + l + ")");
const V = () => data[state.variant];

// Rows and columns of a tensor's row-major values: 0-d and 1-d are one row, more are rows of the last dim.
function grid(t) {
  const cols = t.shape.length ? t.shape[t.shape.length - 1] : 1;
  return { rows: Math.max(1, t.values.length / Math.max(cols, 1)), cols };
}

// A matrix as a table (small) or a heatmap (large, values on hover). mark(i) gives a cell's class.
function matrix(t, mark) {
  if (!t.values) return `<div class="note">${esc(t.why || "no values")}</div>`;
  const { rows, cols } = grid(t);
  if (t.values.length > V().table_limit) {
    let m = 0;
    for (const v of t.values) if (Number.isFinite(num(v))) m = Math.max(m, Math.abs(num(v)));
    const px = Math.max(3, Math.min(14, Math.floor(420 / cols)));
    let h = `<div class="heat" style="grid-template-columns: repeat(${cols}, ${px}px)">`;
    t.values.forEach((v, i) => {
      const x = num(v), a = m > 0 && Number.isFinite(x) ? Math.abs(x) / m : 0;
      const c = x >= 0 ? `rgba(200,40,40,${a.toFixed(3)})` : `rgba(40,80,200,${a.toFixed(3)})`;
      h += `<div data-v="${v}" title="[${Math.floor(i / cols)}, ${i % cols}] = ${num(v)}" style="background:${c}"${mark && mark(i) === "off" ? ' class="off"' : ""}></div>`;
    });
    return h + `</div><div class="shape">heatmap, |max| ${m.toPrecision(3)}: red +, blue −; hover for values</div>`;
  }
  let h = '<table class="m">';
  for (let r = 0; r < rows; ++r) {
    h += "<tr>";
    for (let c = 0; c < cols; ++c) {
      const i = r * cols + c, v = t.values[i], cls = mark ? mark(i) : "";
      h += `<td data-v="${v}" title="${num(v)}"${cls ? ` class="${cls}"` : ""}>${fmt(v)}</td>`;
    }
    h += "</tr>";
  }
  return h + "</table>";
}

function tensorBox(name, t, mark) {
  return `<div class="tensor"><div><span class="name">${esc(name)}</span> <span class="shape">${shapeStr(t.shape)}</span></div>${matrix(t, mark)}</div>`;
}

// An outgoing gradient: this step's contribution, the whole gradient once every contribution is in,
// its central difference with the largest disagreement, and the text's numbers where it prints them.
function gradBox(g) {
  const whole = g.total || g.values;
  const off = (i) => g.fd && !(Math.abs(num(whole[i]) - num(g.fd[i])) <= 1e-5 + 1e-3 * Math.abs(num(g.fd[i])));
  let h = `<div class="grad" data-label="${esc(g.label)}" data-role="out"${g.ok !== undefined ? ` data-ok="${g.ok}"` : ""}>`;
  h += `<div class="row">` + tensorBox(dL(g.label) + (g.total ? " (this step's part)" : ""), g, (i) => (num(g.values[i]) !== 0 ? "nz" : ""));
  if (g.total) h += tensorBox(dL(g.label) + " (whole)", { shape: g.shape, values: g.total });
  if (g.fd) {
    h += `<div class="fd${g.ok ? "" : " failed"}">` + tensorBox("finite diff.", { shape: g.shape, values: g.fd }, (i) => (off(i) ? "off" : ""));
    h += `<div class="check ${g.ok ? "good" : "bad"}">${g.ok ? "✓" : "✗"} largest disagreement ${num(g.err).toExponential(1)}</div></div>`;
  } else {
    h += `<div class="check note">${esc(g.check || "")}</div>`;
  }
  if (g.text) {
    const ok = (i) => (Number.isNaN(num(g.text[i])) ? "" : Math.abs(num(whole[i]) - num(g.text[i])) < 0.0005 + 1e-9 ? "text-ok" : "text-off");
    h += tensorBox("the text", { shape: g.shape, values: g.text.map((v) => (Number.isNaN(num(v)) ? "nan" : v)) }, ok)
      .replace(/>nan</g, ">&nbsp;<");
  }
  return h + "</div></div>";
}

// The first step whose check fails, or -1.
function firstFailure(v) {
  return v.steps.findIndex((s) => s.gin.some((g) => g.ok === false));
}

function drawStep() {
  const v = V(), s = v.steps[state.step], node = v.nodes[s.entry];
  $("where").textContent = `step ${state.step + 1} of ${v.steps.length}: tape entry #${s.entry} ${s.op}`;
  $("prev").disabled = $("first").disabled = state.step === 0;
  $("next").disabled = $("last").disabled = state.step === v.steps.length - 1;
  let h = `<h2>step ${state.step + 1}: #${s.entry} ${esc(s.op)} <span class="site">recorded at ${esc(s.site)}</span></h2>`;
  h += `<div class="formula">${esc(s.rule || s.op + "'s backward")}</div>`;
  h += `<h3>in: the gradient arriving from above</h3><div class="row">`;
  for (const g of s.gout) h += `<div class="grad" data-label="${esc(g.label)}" data-role="in">${tensorBox(dL(g.label), g)}</div>`;
  h += `</div>`;
  if (node.saved.length) {
    h += `<h3>what the backward reads (saved in the forward)</h3><div class="row">`;
    for (const t of node.saved) h += tensorBox(t.label, t);
    h += `</div>`;
  }
  h += `<h3>out: the gradients it sends to its inputs, the entries it adds to in blue (central differences beside them)</h3>`;
  for (const g of s.gin) h += gradBox(g);
  if (!s.gin.length) h += `<div class="note">none: no input of this op needs a gradient</div>`;
  $("step").innerHTML = h;
  document.querySelectorAll("#graph g.node, #tape-list li").forEach((e) => e.classList.toggle("current", e.dataset.entry == s.entry));
  // Keep the step's node in view: the graph is often taller than its panel.
  const box = $("graph"), cur = box.querySelector(".current");
  if (cur) {
    const r = cur.getBoundingClientRect(), b = box.getBoundingClientRect();
    if (r.top < b.top || r.bottom > b.bottom) box.scrollTop += r.top - b.top - (b.height - r.height) / 2;
    if (r.left < b.left || r.right > b.right) box.scrollLeft += r.left - b.left - (b.width - r.width) / 2;
  }
}

function pickNode(i) {
  const v = V(), n = v.nodes[i];
  state.picked = i;
  document.querySelectorAll("#graph g.node").forEach((e) => e.classList.toggle("picked", e.dataset.entry == i));
  let h = `<h2>#${n.index} ${esc(n.op)} <span class="site">recorded at ${esc(n.site)}</span></h2>`;
  h += `<h3>inputs</h3><div class="row">` + n.inputs.map((t) => tensorBox(`${t.label} (${t.kind})`, t)).join("") + `</div>`;
  h += `<h3>outputs</h3><div class="row">` + n.outputs.map((t) => tensorBox(t.label, t)).join("") + `</div>`;
  h += `<h3>saved for its backward</h3><div class="row saved">` +
    (n.saved.length ? n.saved.map((t) => tensorBox(t.label, t)).join("") : `<span class="note">nothing</span>`) + `</div>`;
  $("node").innerHTML = h;
}

function drawVariant() {
  const v = V();
  document.title = v.title;
  $("title").textContent = v.title;
  $("intro").textContent = v.intro;
  document.querySelectorAll("#variants button").forEach((b, i) => b.classList.toggle("on", i === state.variant));
  if (v.svg) {
    $("graph").innerHTML = v.svg;
    document.querySelectorAll("#graph g.node").forEach((g) => {
      const id = g.querySelector("title").textContent;
      if (/^n\d+$/.test(id)) {
        g.dataset.entry = id.slice(1);
        g.addEventListener("click", () => pickNode(Number(g.dataset.entry)));
      }
    });
  } else {
    $("graph").innerHTML = `<p class="note">The graph is not drawn (Graphviz's dot was not on PATH when the page was written); its tape:</p><ol id="tape-list" start="0">` +
      v.nodes.map((n) => `<li data-entry="${n.index}">${esc(n.op)} → ${n.outputs.map((o) => esc(o.label)).join(", ")}</li>`).join("") + "</ol>";
    document.querySelectorAll("#tape-list li").forEach((li) => li.addEventListener("click", () => pickNode(Number(li.dataset.entry))));
  }
  const bad = firstFailure(v);
  for (const [k, s] of v.steps.entries())
    if (s.gin.some((g) => g.ok === false)) document.querySelectorAll(`#graph g.node`).forEach((e) => { if (e.dataset.entry == s.entry) e.classList.add("failed"); });
  const checked = v.steps.reduce((a, s) => a + s.gin.filter((g) => g.ok !== undefined).length, 0);
  const failed = v.steps.reduce((a, s) => a + s.gin.filter((g) => g.ok === false).length, 0);
  $("summary").innerHTML = failed ? `<span class="bad">${failed} of ${checked} gradients disagree with finite differences, first at step ${bad + 1}</span>`
    : `<span class="good">${checked} gradients agree with finite differences</span>`;
  state.step = Math.min(state.step, v.steps.length - 1);
  $("node").innerHTML = `<h2>a node</h2><p class="note">Click a box in the graph to see its op, its inputs and outputs, and what its backward saved.</p>`;
  drawStep();
}

function go(step) {
  state.step = Math.max(0, Math.min(V().steps.length - 1, step));
  drawStep();
}

data.forEach((v, i) => {
  const b = document.createElement("button");
  b.textContent = v.name;
  b.addEventListener("click", () => { state.variant = i; drawVariant(); });
  if (data.length > 1) $("variants").appendChild(b);
});
$("first").addEventListener("click", () => go(0));
$("prev").addEventListener("click", () => go(state.step - 1));
$("next").addEventListener("click", () => go(state.step + 1));
$("last").addEventListener("click", () => go(V().steps.length - 1));
document.addEventListener("keydown", (e) => {
  if (e.key === "ArrowRight") go(state.step + 1);
  else if (e.key === "ArrowLeft") go(state.step - 1);
  else if (e.key === "Home") go(0);
  else if (e.key === "End") go(V().steps.length - 1);
});
window.hgPage = { data, state, go, pickNode, selectVariant: (i) => { state.variant = i; state.step = 0; drawVariant(); } };
drawVariant();
)JS";
}

}  // namespace hg
