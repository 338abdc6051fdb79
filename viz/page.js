"use strict";
let data = JSON.parse(document.getElementById("hg-data").textContent);
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
  // A step broken on purpose shows the rule it computes, marked, and the right one under it.
  if (s.broken_rule) {
    h += `<div class="formula broken"><span class="tag">✗ broken on purpose</span>${esc(s.broken_rule)}</div>`;
    h += `<div class="note right-rule">the right rule: ${esc(s.rule)}</div>`;
  } else {
    h += `<div class="formula">${esc(s.rule || s.op + "'s backward")}</div>`;
  }
  if (node.outputs.some((t) => t.values)) {
    h += `<h3>forward: what this op computed</h3><div class="row forward">`;
    for (const t of node.outputs) h += tensorBox(t.label + " =", t);
    h += `</div>`;
  }
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

// The graph laid out here when Graphviz did not draw it (the live page; a page written without
// dot on PATH): leaves and constants on the top row, each tape entry one row below the deepest of
// its inputs, an arrow per input. Entries are <g class="node" data-entry=i>, as in dot's drawing.
function layout(v) {
  const W = 150, H = 40, GX = 18, GY = 34, rows = [[]], at = new Map(), depth = [];
  const leafKey = (t) => t.kind + ":" + t.label;
  v.nodes.forEach((n, i) => {
    let d = 1;
    for (const t of n.inputs) {
      if (t.from !== null && t.from !== undefined) d = Math.max(d, depth[t.from] + 1);
      else if (!at.has(leafKey(t))) { at.set(leafKey(t), { row: 0, col: rows[0].length, t }); rows[0].push(leafKey(t)); }
    }
    depth[i] = d;
    while (rows.length <= d) rows.push([]);
    at.set(i, { row: d, col: rows[d].length, n });
    rows[d].push(i);
  });
  const widest = Math.max(...rows.map((r) => r.length));
  const pos = (k) => {
    const p = at.get(k), off = (widest - rows[p.row].length) * (W + GX) / 2;
    return { x: GX + off + p.col * (W + GX), y: GY / 2 + p.row * (H + GY) };
  };
  let edges = "", boxes = "";
  for (const [k, p] of at) {
    const { x, y } = pos(k);
    if (p.t) {
      const dashed = p.t.kind === "constant";
      boxes += `<g class="leaf${dashed ? " constant" : ""}"><rect x="${x}" y="${y}" width="${W}" height="${H}" rx="12"/>` +
        `<text x="${x + W / 2}" y="${y + 17}">${esc(p.t.label)}</text><text class="sub" x="${x + W / 2}" y="${y + 32}">${esc(dashed ? "constant " : "leaf ")}${shapeStr(p.t.shape)}</text></g>`;
      continue;
    }
    const out = p.n.outputs.map((o) => o.label).join(", "), sh = p.n.outputs.map((o) => shapeStr(o.shape)).join(" ");
    boxes += `<g class="node" data-entry="${k}"><title>#${k} ${esc(p.n.op)}</title><rect x="${x}" y="${y}" width="${W}" height="${H}" rx="3"/>` +
      `<text x="${x + W / 2}" y="${y + 17}">#${k} ${esc(p.n.op.length > 18 ? p.n.op.slice(0, 17) + "…" : p.n.op)}</text>` +
      `<text class="sub" x="${x + W / 2}" y="${y + 32}">→ ${esc(out)} ${sh}</text></g>`;
    for (const t of p.n.inputs) {
      const from = t.from !== null && t.from !== undefined ? t.from : leafKey(t);
      if (!at.has(from)) continue;
      const a = pos(from);
      edges += `<line x1="${a.x + W / 2}" y1="${a.y + H}" x2="${x + W / 2}" y2="${y - 2}" marker-end="url(#hg-arrow)"/>`;
    }
  }
  const width = GX + widest * (W + GX), height = GY + rows.length * (H + GY);
  return `<svg class="laid" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg">` +
    `<defs><marker id="hg-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>` +
    `<g class="edges">${edges}</g>${boxes}</svg>`;
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
    $("graph").innerHTML = layout(v);
    document.querySelectorAll("#graph g.node").forEach((g) => g.addEventListener("click", () => pickNode(Number(g.dataset.entry))));
  }
  const bad = firstFailure(v);
  for (const [k, s] of v.steps.entries())
    if (s.gin.some((g) => g.ok === false)) document.querySelectorAll(`#graph g.node`).forEach((e) => { if (e.dataset.entry == s.entry) e.classList.add("failed"); });
  const checked = v.steps.reduce((a, s) => a + s.gin.filter((g) => g.ok !== undefined).length, 0);
  const failed = v.steps.reduce((a, s) => a + s.gin.filter((g) => g.ok === false).length, 0);
  // Gradients with no finite difference beside them (no recompute given, or one it cannot make)
  // are counted apart, in grey: "0 agree" in green would claim a check that never ran.
  const unchecked = v.steps.reduce((a, s) => a + s.gin.filter((g) => g.ok === undefined && /^not checked/.test(g.check || "")).length, 0);
  const rest = unchecked ? ` <span class="note unchecked">${unchecked} not checked${checked ? "" : ": no finite difference was computed (give recompute to check them)"}</span>` : "";
  $("summary").innerHTML = failed ? `<span class="bad">${failed} of ${checked} gradients disagree with finite differences, first at step ${bad + 1}</span>${rest}`
    : checked ? `<span class="good">${checked} gradients agree with finite differences</span>${rest}` : rest.trim();
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
  if (e.target.closest && e.target.closest("input, select, textarea")) return;  // keys typed into a field stay there
  if (e.key === "ArrowRight") go(state.step + 1);
  else if (e.key === "ArrowLeft") go(state.step - 1);
  else if (e.key === "Home") go(0);
  else if (e.key === "End") go(V().steps.length - 1);
});
// New data for the same page (the live page, after each edit): the step and the picked node stay
// where the reader left them when they still exist.
function setData(d) {
  data = d;
  window.hgPage.data = d;
  state.variant = Math.min(state.variant, d.length - 1);
  const picked = state.picked;
  drawVariant();
  if (picked !== null && picked < V().nodes.length) pickNode(picked);
}
window.hgPage = { data, state, go, pickNode, setData, selectVariant: (i) => { state.variant = i; state.step = 0; drawVariant(); } };
if (data.length) drawVariant();
