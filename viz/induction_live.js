"use strict";
// The induction page ("What Attention Computes", live): the induction lab's trained two-block,
// attention-only TinyCharLM, built as WebAssembly and inlined above as handgradInduction, answers
// every request (labs/induction_live.h): the text's repeated random sequence, the attention
// patterns and each target's loss on it, the gradients of one target's loss, the lab's batch in
// chunks, the QK and OV circuits. This script asks and draws. Every number it shows comes from the
// model, from the lab (hg-induction-lab's "lab") or from the text ("text"); none is written here.
// Blocks and heads count from 0 in every request and answer and from 1 in every word shown.
(() => {
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  const isNum = (v) => typeof v === "number" && Number.isFinite(v);
  const fixed = (v, d) => (isNum(v) ? v.toFixed(d) : "—");
  const f4 = (v) => fixed(v, 4);
  const sig = (v) => (isNum(v) ? (v === 0 ? "0" : Math.abs(v) >= 1e-3 && Math.abs(v) < 1e5 ? v.toPrecision(6) : v.toExponential(5)) : "—");
  const g4 = (v) => (isNum(v) ? (v === 0 ? "0" : Math.abs(v) >= 1e-3 && Math.abs(v) < 1e4 ? v.toPrecision(4) : v.toExponential(3)) : "—");
  const book = (v) => (isNum(v) ? String(v) : "—");
  const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));
  const headName = (b, h) => `block ${b + 1} head ${h + 1}`;

  function readJSON(id) {
    const el = $(id);
    if (!el) return null;
    try { return JSON.parse(el.textContent); } catch (e) { return null; }
  }
  const LAB = readJSON("hg-induction-lab") || {};
  const LABF = LAB.lab || {}, TEXT = LAB.text || {}, BATCH = LAB.batch || {};
  const VOCAB = LAB.vocab || 64, BLOCKS = LAB.blocks || 2, HEADS = LAB.heads || 4, SEQ = LAB.seq || 64;
  const CHUNK = 16;                         // sequences of the batch per request, between two frames
  const SMALL = 189, BIG = 630;             // the side of a small and of the large attention map, in pixels

  // ------------------------------------------------------------ the state (read by the page's tests)
  let loading = true, timer = null, needStudy = false, batchTimer = null, circuitsTimer = null, batchGen = 0;
  const cache = new Map();                  // batch figures by ablation ("" = no head zeroed)
  const S = {
    module: null, error: null,
    tokens: [], L: 1, seed: 7, Lmin: LAB.Lmin || 16, Lmax: LAB.Lmax || 32, custom: false,
    ablate: [], position: 0, check: null, mode: "weights",
    study: null, why: null, circuits: null,
    batch: { running: false, done: 0, n: BATCH.n || 0, result: null, ablate: [] },
    baseline: null,
    times: { study: [], batch: [] },
    head: [BLOCKS - 1, 0], cell: { i: 0, j: 0 }, cellAuto: true, circ: { i: 0, j: 0 },
    busy: () => loading || timer !== null || S.batch.running || batchTimer !== null || circuitsTimer !== null,
  };
  window.hgInduction = S;
  const inductionHeads = Array.isArray(LABF.induction_heads) ? normalise(LABF.induction_heads) : [];
  if (inductionHeads.length) S.head = inductionHeads[0].slice();

  // ------------------------------------------------------------ status, errors, the module
  class Refused extends Error {}
  function status(text, bad) {
    const el = $("ind-status");
    el.textContent = text;
    el.className = bad ? "bad" : "note";
  }
  function failed(e) {
    const msg = e instanceof Refused ? e.message : "Something went wrong in this page: " + (e && e.message ? e.message : e);
    S.error = msg;
    status(msg, true);
  }
  const guard = (fn) => (...args) => { try { return fn(...args); } catch (e) { failed(e); return undefined; } };

  function ask(request) {
    let a;
    try {
      a = JSON.parse(S.module.inductionAnswer(JSON.stringify(request)));
    } catch (e) {
      throw new Refused("The model could not answer: " + (e && e.message ? e.message : e));
    }
    if (!a || a.ok !== true) throw new Refused("The model refused: " + (a && a.error ? a.error : "no answer"));
    return a;
  }
  function withAblate(request, ablate) {
    const list = ablate || S.ablate;
    if (list.length) request.ablate = list.map((p) => p.slice());
    return request;
  }

  // ------------------------------------------------------------ the sequence
  const nT = () => Math.max(0, S.tokens.length - 1);          // targets: tokens[1..] from inputs tokens[..-1]
  const later = (t) => t + 1 >= S.L;                            // target t predicts tokens[t + 1]
  const copyOf = (p) => Math.floor(p / S.L);                    // which copy position p sits in (0: the first)
  const tokClass = (p) => (p < S.L ? "first" : copyOf(p) % 2 ? "later" : "later alt");
  const FIRST_INK = "#8a5a00", LATER_INK = "#1f4f99";
  const ink = (p) => (p < S.L ? FIRST_INK : LATER_INK);

  // Heads as sorted, distinct [block, head] pairs, each one the model has.
  function normalise(list) {
    const seen = new Set(), out = [];
    for (const p of list) {
      if (!Array.isArray(p) || p.length !== 2 || !Number.isInteger(p[0]) || !Number.isInteger(p[1])) continue;
      if (p[0] < 0 || p[0] >= BLOCKS || p[1] < 0 || p[1] >= HEADS || seen.has(p.join("."))) continue;
      seen.add(p.join("."));
      out.push([p[0], p[1]]);
    }
    return out.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  }
  const keyOf = (list) => list.map((p) => p.join(".")).join(",");
  const isAblated = (b, h) => S.ablate.some((p) => p[0] === b && p[1] === h);
  const namesOf = (list) => list.map((p) => headName(p[0], p[1])).join(", ");

  function checkValid(c) {
    const n = nT();
    if (!c) return false;
    if (c.embedding !== undefined) return Number.isInteger(c.embedding) && c.embedding >= 0 && c.embedding < n;
    const w = c.weight;
    return Array.isArray(w) && w.length === 4 && w.every(Number.isInteger) && w[0] >= 0 && w[0] < BLOCKS &&
      w[1] >= 0 && w[1] < HEADS && w[2] >= 0 && w[2] < n && w[3] >= 0 && w[3] <= w[2];
  }
  // Keeps the position, the selected cell and the check entry inside the current sequence.
  function settle() {
    const n = nT();
    S.position = clamp(S.position, 0, Math.max(0, n - 1));
    S.cell.i = clamp(S.cell.i, 0, Math.max(0, n - 1));
    S.cell.j = clamp(S.cell.j, 0, S.cell.i);
    if (S.check && !checkValid(S.check)) S.check = null;
  }

  // ------------------------------------------------------------ the link: the view in the URL's fragment
  const hashed = { pos: null };
  function readHash() {
    const q = new URLSearchParams(location.hash.replace(/^#/, ""));
    const whole = (s, lo, hi) => (s !== null && /^\d{1,16}$/.test(s) && Number(s) >= lo && Number(s) <= hi ? Number(s) : null);
    const seed = whole(q.get("seed"), 0, Number.MAX_SAFE_INTEGER);
    if (seed !== null) S.seed = seed;
    const r = /^(\d+)-(\d+)$/.exec(q.get("L") || "");
    if (r) {
      const lo = whole(r[1], 1, SEQ - 1), hi = whole(r[2], 1, SEQ - 1);
      if (lo !== null && hi !== null && lo <= hi) { S.Lmin = lo; S.Lmax = hi; }
    }
    const tk = q.get("tokens");
    if (tk) {
      const t = tk.split(".").map((s) => whole(s, 0, VOCAB - 1));
      if (t.length >= 2 && t.length <= SEQ && !t.includes(null)) {
        const L = whole(q.get("period"), 1, t.length);
        S.tokens = t;
        S.L = L === null ? t.length : L;
        S.custom = true;
      }
    }
    const ab = q.get("ablate");
    if (ab) S.ablate = normalise(ab.split(",").map((p) => p.split(".").map((s) => whole(s, 0, 99))));
    hashed.pos = whole(q.get("pos"), 0, SEQ - 2);
    const c = /^(?:w:(\d+)\.(\d+)\.(\d+)\.(\d+)|e:(\d+))$/.exec(q.get("check") || "");
    if (c) S.check = c[5] !== undefined ? { embedding: Number(c[5]) } : { weight: [1, 2, 3, 4].map((k) => Number(c[k])) };
    const mode = q.get("mode");
    if (mode === "grad" || mode === "weights") S.mode = mode;
  }
  function writeHash() {
    const parts = [`seed=${S.seed}`, `L=${S.Lmin}-${S.Lmax}`];
    if (S.custom) parts.push(`tokens=${S.tokens.join(".")}`, `period=${S.L}`);
    if (S.ablate.length) parts.push(`ablate=${S.ablate.map((p) => p.join(".")).join(",")}`);
    parts.push(`pos=${S.position}`);
    if (S.check) parts.push(`check=${S.check.weight ? "w:" + S.check.weight.join(".") : "e:" + S.check.embedding}`);
    parts.push(`mode=${S.mode}`);
    const h = "#" + parts.join("&");
    if (location.hash === h) return;
    try { history.replaceState(null, "", h); } catch (e) { location.replace(h); }
  }

  // ------------------------------------------------------------ colours
  // A 256-entry colour table through stops [t, r, g, b], t from 0 to 1.
  function table(stops) {
    const out = new Uint8ClampedArray(256 * 3);
    for (let k = 0; k < 256; ++k) {
      const t = k / 255;
      let s = 0;
      while (s < stops.length - 2 && t > stops[s + 1][0]) ++s;
      const a = stops[s], b = stops[s + 1], u = (t - a[0]) / (b[0] - a[0]);
      for (let c = 0; c < 3; ++c) out[k * 3 + c] = a[c + 1] + u * (b[c + 1] - a[c + 1]);
    }
    return out;
  }
  const BLUES = table([[0, 255, 255, 255], [0.25, 198, 219, 239], [0.5, 107, 174, 214], [0.75, 33, 113, 181], [1, 8, 48, 107]]);
  const RDBU = table([[0, 33, 102, 172], [0.25, 120, 178, 214], [0.5, 255, 255, 255], [0.75, 240, 140, 104], [1, 178, 24, 43]]);
  const EMPTY = [236, 238, 243];            // a cell the causal mask leaves out
  const seqIndex = (v) => clamp(Math.round(v * 255), 0, 255);
  const divIndex = (v, m) => (m > 0 ? clamp(Math.round((v / m + 1) * 127.5), 0, 255) : 128);

  // An entry of a (rows, cols) matrix that comes as nested rows or as one row-major list.
  const at = (M, cols, i, j) => (Array.isArray(M[0]) ? M[i][j] : M[i * cols + j]);
  function maxAbs(list, rows, cols) {
    let m = 0;
    for (const M of list)
      for (let i = 0; i < rows; ++i)
        for (let j = 0; j < cols; ++j) { const v = at(M, cols, i, j); if (isNum(v)) m = Math.max(m, Math.abs(v)); }
    return m;
  }

  // A canvas sized w x h CSS pixels at the screen's resolution; its context, cleared.
  function sized(canvas, w, h) {
    const r = window.devicePixelRatio || 1, W = Math.round(w * r), H = Math.round(h * r);
    if (canvas.width !== W || canvas.height !== H) { canvas.width = W; canvas.height = H; }
    canvas.style.width = w + "px";
    canvas.style.height = h + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(r, 0, 0, r, 0, 0);
    ctx.clearRect(0, 0, w, h);
    return ctx;
  }
  // Cells painted as an image (one pixel a cell) and scaled up without smoothing: no DOM per cell.
  const scratch = document.createElement("canvas");
  function paintCells(ctx, x, y, rows, cols, cell, lut, index) {
    scratch.width = cols;
    scratch.height = rows;
    const sctx = scratch.getContext("2d"), img = sctx.createImageData(cols, rows), d = img.data;
    for (let i = 0; i < rows; ++i)
      for (let j = 0; j < cols; ++j) {
        const k = index(i, j), o = (i * cols + j) * 4;
        if (k < 0) { d[o] = EMPTY[0]; d[o + 1] = EMPTY[1]; d[o + 2] = EMPTY[2]; } else { d[o] = lut[k * 3]; d[o + 1] = lut[k * 3 + 1]; d[o + 2] = lut[k * 3 + 2]; }
        d[o + 3] = 255;
      }
    sctx.putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(scratch, x, y, cols * cell, rows * cell);
  }
  function box(ctx, x, y, w, h, colour, width, dash) {
    ctx.save();
    ctx.strokeStyle = colour;
    ctx.lineWidth = width;
    if (dash) ctx.setLineDash(dash);
    ctx.strokeRect(x, y, w, h);
    ctx.restore();
  }
  // A colour bar: 0 to 1 (weights) or −m to +m (a diverging map), its labels beside it.
  function paintBar(canvas, height, diverging, m) {
    const w = 70, ctx = sized(canvas, w, height + 12), top = 6;
    const lut = diverging ? RDBU : BLUES;
    for (let y = 0; y < height; ++y) {
      const k = Math.round((1 - y / Math.max(1, height - 1)) * 255);
      ctx.fillStyle = `rgb(${lut[k * 3]},${lut[k * 3 + 1]},${lut[k * 3 + 2]})`;
      ctx.fillRect(2, top + y, 12, 1);
    }
    box(ctx, 2, top, 12, height, "#44506a", 1);
    ctx.fillStyle = "#1d2433";
    ctx.font = "11px 'DejaVu Sans', sans-serif";
    ctx.textBaseline = "middle";
    const mag = m >= 0.01 ? m.toPrecision(2) : m.toExponential(1);
    const lab = diverging ? [`+${mag}`, "0", `−${mag}`] : ["1", "0.5", "0"];
    lab.forEach((s, k) => ctx.fillText(s, 18, top + (k * (height - 1)) / 2));
  }

  // Mouse and keys on a heat map; the geometry is its last paint's (canvas.hg = {x, y, cell, rows, cols}).
  function wireMap(canvas, on) {
    const cellAt = (e) => {
      const g = canvas.hg;
      if (!g) return null;
      const r = canvas.getBoundingClientRect();
      const j = Math.floor((e.clientX - r.left - g.x) / g.cell), i = Math.floor((e.clientY - r.top - g.y) / g.cell);
      return i >= 0 && j >= 0 && i < g.rows && j < g.cols ? { i, j } : null;
    };
    canvas.addEventListener("mousemove", guard((e) => on.hover(cellAt(e))));
    canvas.addEventListener("mouseleave", guard(() => on.hover(null)));
    canvas.addEventListener("click", guard((e) => { const p = cellAt(e); if (p) on.pick(p); }));
    canvas.addEventListener("focus", guard(() => on.focus && on.focus()));
    canvas.addEventListener("keydown", guard((e) => {
      const d = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
      if (d) { e.preventDefault(); on.move(d[0], d[1]); } else if ((e.key === "Enter" || e.key === " ") && on.enter) { e.preventDefault(); on.enter(); }
    }));
  }

  // ------------------------------------------------------------ building the page's parts once
  function buildMaps() {
    let h = "";
    for (let b = 0; b < BLOCKS; ++b) {
      h += `<div class="block-row"><div class="block-head"><b>block ${b + 1}</b> <span id="ind-strongest-${b}" class="note"></span></div><div class="heads">`;
      for (let k = 0; k < HEADS; ++k) {
        h += `<div class="map" id="ind-map-${b}-${k}"><div class="map-title"><b>head ${k + 1}</b>` +
          `<button type="button" data-ablate="${b}-${k}" aria-pressed="false">zero block ${b + 1} head ${k + 1}</button></div>` +
          `<div class="map-grid"><svg class="yax" aria-hidden="true"></svg><div class="cv"><canvas data-map="${b}-${k}" tabindex="0" ` +
          `aria-label="attention of block ${b + 1} head ${k + 1}: arrow keys move the selected cell, Enter checks its gradient"></canvas>` +
          `<span class="zeroed-tag">zeroed</span></div><div class="corner">query ↓<br>key →</div><svg class="xax" aria-hidden="true"></svg></div>` +
          `<table class="scores"><tr><th></th><th>sequence</th><th>batch</th><th>lab</th></tr>` +
          `<tr><th title="the weight each query gives the position just before it">prev-token</th><td data-seq="prev-${b}-${k}"></td>` +
          `<td data-figure="batch-prev-${b}-${k}">…</td><td>${f4(LABF.prev && LABF.prev[b] && LABF.prev[b][k])}</td></tr>` +
          `<tr><th title="the weight each later-copy query gives the token just after its earlier copy">induction</th><td data-seq="induction-${b}-${k}"></td>` +
          `<td data-figure="batch-induction-${b}-${k}">…</td><td>${f4(LABF.induction && LABF.induction[b] && LABF.induction[b][k])}</td></tr></table></div>`;
      }
      h += `</div><div class="cbar"><canvas id="ind-cbar-${b}" aria-hidden="true"></canvas></div></div>`;
    }
    $("ind-maps").innerHTML = h;
    for (let b = 0; b < BLOCKS; ++b)
      for (let k = 0; k < HEADS; ++k) {
        const canvas = document.querySelector(`canvas[data-map="${b}-${k}"]`);
        wireMap(canvas, mapHandlers(() => [b, k]));
      }
    wireMap($("ind-big"), mapHandlers(() => S.head));
    document.querySelectorAll("button[data-ablate]").forEach((el) => {
      el.addEventListener("click", guard(() => {
        const [b, h] = el.dataset.ablate.split("-").map(Number);
        setAblate(isAblated(b, h) ? S.ablate.filter((p) => p[0] !== b || p[1] !== h) : S.ablate.concat([[b, h]]));
      }));
    });
  }
  // What the mouse and keys do on the attention map of head bh() (a small map, or the large one).
  function mapHandlers(bh) {
    const n = () => nT();
    const clampCell = (i, j) => { const ii = clamp(i, 0, n() - 1); return { i: ii, j: clamp(j, 0, ii) }; };
    return {
      hover: (p) => readout(p ? bh() : S.head, p || S.cell),
      pick: (p) => {
        S.head = bh().slice();
        S.cell = clampCell(p.i, p.j);
        S.cellAuto = false;
        setCheck({ weight: [S.head[0], S.head[1], S.cell.i, S.cell.j] });
      },
      focus: () => {
        const [b, h] = bh();
        if (S.head[0] === b && S.head[1] === h) return;
        S.head = [b, h];
        paintMaps();
        readout(S.head, S.cell);
      },
      move: (di, dj) => {
        S.head = bh().slice();
        S.cell = clampCell(S.cell.i + di, S.cell.j + dj);
        S.cellAuto = false;
        paintMaps();
        readout(S.head, S.cell);
      },
      enter: () => setCheck({ weight: [S.head[0], S.head[1], S.cell.i, S.cell.j] }),
    };
  }

  // ------------------------------------------------------------ drawing: the sequence
  function drawStrip() {
    const toks = S.tokens;
    if (!toks.length) { $("ind-strip").innerHTML = ""; return; }
    const t = S.position, src = t + 1 - S.L;
    let h = "";
    toks.forEach((v, p) => {
      if (p > 0 && p % S.L === 0) h += `<span class="gap" aria-hidden="true"></span>`;
      const marks = [];
      if (p === t) marks.push("query");
      if (p === t + 1) marks.push("target");
      if (later(t) && p === src) marks.push("source");
      h += `<span class="tok ${tokClass(p)} ${marks.join(" ")}" title="position ${p}: token ${v}"><b>${v}</b><i>${p}</i></span>`;
    });
    $("ind-strip").innerHTML = h;
    const copies = Math.ceil(toks.length / S.L);
    $("ind-strip-note").innerHTML = S.L >= toks.length
      ? `${toks.length} tokens and the period is ${S.L}: there is no later copy, nothing to copy from.`
      : `Period L = ${S.L}: <span class="key first">the first copy</span> has nothing to copy yet; ` +
        `in <span class="key later">the later copies</span> (${copies - 1}${toks.length % S.L ? ", the last cut short" : ""}) ` +
        `each token repeats the one ${S.L} back. ` +
        `At position ${t}: <span class="key query">its token</span> <span class="key target">the next token</span>` +
        (later(t) && src >= 0 ? ` <span class="key source">that token in the earlier copy</span>` : "");
  }
  function fillSequenceFields() {
    $("ind-seed").value = String(S.seed);
    $("ind-Lmin").value = String(S.Lmin);
    $("ind-Lmax").value = String(S.Lmax);
    $("ind-tokens").value = S.tokens.join(" ");
    $("ind-L").value = String(S.L);
    ["ind-seed", "ind-Lmin", "ind-Lmax", "ind-tokens", "ind-L"].forEach((id) => $(id).classList.remove("invalid"));
    $("ind-tokens").classList.toggle("changed", S.custom);
    inputMessage("");
  }
  function inputMessage(text) {
    $("ind-input-msg").textContent = text;
    $("ind-input-msg").className = text ? "bad" : "note";
  }

  // ------------------------------------------------------------ drawing: attention maps
  function axisSVG(svg, vertical, n, cell) {
    const step = n > 40 ? 8 : n > 16 ? 4 : n > 8 ? 2 : 1, len = n * cell;
    const r = (S.position + 0.5) * cell;
    let s = vertical ? `<path d="M44 ${r - 4} L50 ${r} L44 ${r + 4} Z" fill="#1d2433"><title>position ${S.position}</title></path>` : "";
    for (let p = 0; p < n; p += step) {
      const c = (p + 0.5) * cell;
      s += vertical
        ? `<text x="42" y="${c + 3.5}" text-anchor="end"><tspan class="pos">${p}</tspan> <tspan fill="${ink(p)}">${S.tokens[p]}</tspan></text>` +
          `<line x1="46" x2="50" y1="${c}" y2="${c}"></line>`
        : `<line x1="${c}" x2="${c}" y1="0" y2="3"></line><text x="${c}" y="13" text-anchor="middle" class="pos">${p}</text>` +
          `<text x="${c}" y="24" text-anchor="middle" fill="${ink(p)}">${S.tokens[p]}</text>`;
    }
    svg.setAttribute("width", vertical ? 50 : len);
    svg.setAttribute("height", vertical ? len : 27);
    svg.innerHTML = s;
  }
  // The values a map shows in the current mode: weights (0 to 1) or the gradient of the selected
  // target's loss with respect to each weight (diverging, scaled per block).
  function gradMode() { return S.mode === "grad" && S.why && Array.isArray(S.why.weights); }
  function mapSource(b, h) {
    if (gradMode()) return S.why.weights[b][h];
    return S.study.patterns[b][h];
  }
  let scales = [];
  function paintMap(canvas, b, h, n, cell, margin) {
    const M = mapSource(b, h), grad = gradMode(), m = scales[b];
    const [x, y] = margin;
    const ctx = canvas.getContext("2d");
    paintCells(ctx, x, y, n, n, cell, grad ? RDBU : BLUES, (i, j) => {
      if (j > i) return -1;
      const v = at(M, n, i, j);
      return grad ? divIndex(v, m) : seqIndex(v);
    });
    canvas.hg = { x, y, cell, rows: n, cols: n };
    // The selected target's row (on the large map; the small ones mark it on their query axis), the
    // selected cell, the check entry.
    const t = S.position;
    if (x > 0) box(ctx, x - 0.5, y + t * cell - 0.5, (t + 1) * cell + 1, cell + 1, "rgba(29,36,51,0.6)", 1);
    const sel = S.head[0] === b && S.head[1] === h;
    box(ctx, x + S.cell.j * cell - 1, y + S.cell.i * cell - 1, cell + 2, cell + 2, "#e4007c", sel ? 2 : 1);
    const w = S.check && S.check.weight;
    if (w && w[0] === b && w[1] === h) box(ctx, x + w[3] * cell - 2.5, y + w[2] * cell - 2.5, cell + 5, cell + 5, "#f28c00", 2, [3, 2]);
  }
  function paintMaps() {
    const st = S.study;
    if (!st || !Array.isArray(st.patterns)) return;
    const n = st.loss.length, cell = clamp(Math.floor(SMALL / n), 2, 24), grad = gradMode();
    scales = [];
    for (let b = 0; b < BLOCKS; ++b) scales.push(grad ? maxAbs(S.why.weights[b], n, n) : 1);
    for (let b = 0; b < BLOCKS; ++b) {
      for (let h = 0; h < HEADS; ++h) {
        const canvas = document.querySelector(`canvas[data-map="${b}-${h}"]`);
        sized(canvas, n * cell, n * cell);
        paintMap(canvas, b, h, n, cell, [0, 0]);
        axisSVG(document.querySelector(`#ind-map-${b}-${h} svg.yax`), true, n, cell);
        const wrap = $(`ind-map-${b}-${h}`);
        wrap.classList.toggle("zeroed", isAblated(b, h));
        wrap.classList.toggle("selected", S.head[0] === b && S.head[1] === h);
      }
      paintBar($(`ind-cbar-${b}`), n * cell, grad, scales[b]);
    }
    paintBig(n);
    drawFocus();
    $("ind-mode-note").textContent = grad
      ? `Red: raising that weight raises the loss at position ${S.position}; blue: lowers it. Each block is scaled by its largest |value|.`
      : S.mode === "grad" ? "The gradients are not computed yet." : "Each row is one query's attention: its weights over the keys sum to 1.";
  }
  function axesSmall() {
    const st = S.study;
    if (!st) return;
    const n = st.loss.length, cell = clamp(Math.floor(SMALL / n), 2, 24);
    document.querySelectorAll("#ind-maps .map").forEach((m) => {
      axisSVG(m.querySelector("svg.xax"), false, n, cell);
    });
  }
  // The selected head, large: every row and column labelled with its token (positions every 8).
  function paintBig(n) {
    const canvas = $("ind-big"), [b, h] = S.head;
    const cell = clamp(Math.floor(BIG / n), 6, 40), ml = 58, mt = 6, mb = 46, mr = 6;
    const w = ml + n * cell + mr, H = mt + n * cell + mb;
    const ctx = sized(canvas, w, H);
    paintMap(canvas, b, h, n, cell, [ml, mt]);
    const font = Math.min(11, Math.max(7, cell - 1));
    ctx.font = `${font}px 'DejaVu Sans', sans-serif`;
    ctx.textBaseline = "middle";
    for (let p = 0; p < n; ++p) {
      const c = (p + 0.5) * cell;
      ctx.fillStyle = ink(p);
      ctx.textAlign = "right";
      ctx.fillText(String(S.tokens[p]), ml - 4, mt + c);
      ctx.save();
      ctx.translate(ml + c, mt + n * cell + 4);
      ctx.rotate(-Math.PI / 2);
      ctx.fillText(String(S.tokens[p]), 0, 0);
      ctx.restore();
      if (p % 8 === 0) {
        ctx.fillStyle = "#7a869c";
        ctx.textAlign = "right";
        ctx.fillText(String(p), ml - 24, mt + c);
        ctx.textAlign = "center";
        ctx.fillText(String(p), ml + c, mt + n * cell + 28);
      }
    }
    ctx.fillStyle = "#44506a";
    ctx.font = "11px 'DejaVu Sans', sans-serif";
    ctx.textAlign = "left";
    ctx.fillText("key →", ml, mt + n * cell + 40);
    ctx.save();
    ctx.translate(8, mt + n * cell / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center";
    ctx.fillText("query ↓ (position, token)", 0, 0);
    ctx.restore();
    paintBar($("ind-big-bar"), n * cell, gradMode(), scales[b]);
    canvas.setAttribute("aria-label", `${headName(b, h)}, large: arrow keys move the selected cell, Enter checks its gradient`);
    $("ind-big-title").textContent = `${headName(b, h)}${isAblated(b, h) ? " (zeroed)" : ""}, large: every row and column labelled with its token`;
    $("ind-big-wrap").classList.toggle("zeroed", isAblated(b, h));
  }
  // The selected head at the selected query: where its weight goes, the keys that name a mechanism
  // (the previous token; one period back plus one, the token after the earlier copy) always listed.
  function drawFocus() {
    const st = S.study, el = $("ind-focus");
    if (!st) { el.innerHTML = ""; return; }
    const [b, h] = S.head, n = st.loss.length, t = S.position, P = st.patterns[b][h];
    const G = S.why && Array.isArray(S.why.weights) ? S.why.weights[b][h] : null;
    const role = (j) => (j === t ? "the query itself" : j === t - 1 ? "the previous token"
      : t >= S.L && j === t - S.L + 1 ? "one period back plus one: holds the token to predict" : "");
    const keys = Array.from({ length: t + 1 }, (_, j) => j).sort((x, y) => at(P, n, t, y) - at(P, n, t, x));
    const shown = keys.slice(0, 5);
    for (const j of [t - 1, t >= S.L ? t - S.L + 1 : -1]) if (j >= 0 && !shown.includes(j)) shown.push(j);
    $("ind-focus-title").textContent = `${headName(b, h)}${isAblated(b, h) ? " (zeroed)" : ""} at query ${t} (token ${S.tokens[t]})`;
    let s = `<table class="figures focus"><tr><th>key</th><th>token</th><th>weight</th>${G ? "<th>∂loss/∂weight</th>" : ""}<th></th></tr>`;
    for (const j of shown)
      s += `<tr${j === S.cell.j && t === S.cell.i ? ' class="sel"' : ""}><td>${j}</td><td style="color:${ink(j)}">${S.tokens[j]}</td>` +
        `<td>${fixed(at(P, n, t, j), 4)}</td>${G ? `<td>${g4(at(G, n, t, j))}</td>` : ""}<td class="role">${role(j)}</td></tr>`;
    el.innerHTML = s + `</table><div class="note">The ${Math.min(5, t + 1)} largest of the ${t + 1} keys query ${t} can see, ` +
      `then the previous token and the key one period back plus one when they are not among them.</div>`;
  }
  // One cell in words: query i (token a) → key j (token b): its weight (and its gradient).
  function readout(bh, p) {
    const st = S.study, el = $("ind-readout");
    if (!st || !p) { el.textContent = ""; return; }
    const [b, h] = bh, n = st.loss.length;
    if (p.i >= n || p.j >= n) return;
    let s = `${headName(b, h)}: query ${p.i} (token ${S.tokens[p.i]}) → key ${p.j} (token ${S.tokens[p.j]}): `;
    if (p.j > p.i) s += "no weight (a query sees only keys at or before it)";
    else {
      s += `weight ${fixed(at(st.patterns[b][h], n, p.i, p.j), 3)}`;
      if (S.why && Array.isArray(S.why.weights))
        s += `, ∂loss/∂weight ${g4(at(S.why.weights[b][h], n, p.i, p.j))} (loss at position ${S.position})`;
    }
    el.textContent = s;
  }
  function drawSeqScores() {
    const st = S.study;
    document.querySelectorAll("td[data-seq]").forEach((td) => {
      const [what, b, h] = td.dataset.seq.split("-");
      td.textContent = st && st[what] ? fixed(st[what][Number(b)][Number(h)], 2) : "—";
    });
  }

  // ------------------------------------------------------------ drawing: loss and prediction per position
  // The charts' widths, read when the page is laid out and on a resize, never in a redraw (a read
  // there would make the browser lay the page out again in the middle of it).
  const widths = { loss: 1200, acc: 800 };
  function measure() {
    widths.loss = $("ind-loss-box").clientWidth || widths.loss;
    widths.acc = $("ind-acc-box").clientWidth || widths.acc;
  }
  function drawLoss() {
    const svg = $("ind-loss-svg"), st = S.study;
    if (!st) { svg.innerHTML = ""; return; }
    const n = st.loss.length, W = Math.max(640, widths.loss), H = 236;
    const ml = 66, mr = 10, mt = 14, mb = 62, w = W - ml - mr, h = H - mt - mb, dx = w / n;
    const chance = Math.log(VOCAB);
    const top = Math.max(chance, ...st.loss.filter(isNum));
    const ymax = Math.ceil(top + 0.2), ystep = ymax <= 6 ? 1 : Math.ceil(ymax / 6);
    const X = (t) => ml + t * dx, Y = (v) => mt + h - (v / ymax) * h;
    let s = "";
    if (S.L - 1 < n) s += `<rect x="${X(S.L - 1)}" y="${mt}" width="${X(n) - X(S.L - 1)}" height="${h}" fill="#eef3fb"></rect>`;
    s += `<rect x="${X(S.position)}" y="${mt}" width="${dx}" height="${H - mt - 4}" fill="#fff1b8"></rect>`;
    for (let v = 0; v <= ymax; v += ystep)
      s += `<line x1="${ml}" x2="${W - mr}" y1="${Y(v)}" y2="${Y(v)}" stroke="#e3e7ee"></line>` +
        `<text x="${ml - 6}" y="${Y(v) + 4}" text-anchor="end">${v}</text>`;
    s += `<text x="12" y="${mt + h / 2}" transform="rotate(-90 12 ${mt + h / 2})" text-anchor="middle">loss (nats)</text>`;
    for (let k = 1; k * S.L - 1 < n; ++k) {
      const x = X(k * S.L - 1);
      s += `<line x1="${x}" x2="${x}" y1="${mt}" y2="${mt + h}" stroke="#5d6880" stroke-dasharray="4 3"></line>` +
        `<text x="${x + 3}" y="${mt + 10}" class="small">copy ${k + 1}</text>`;
    }
    st.loss.forEach((v, t) => {
      if (!isNum(v)) return;
      const y = Y(v);
      s += `<rect x="${X(t) + dx * 0.14}" y="${y}" width="${dx * 0.72}" height="${Y(0) - y}" fill="${later(t) ? "#3b6fc4" : "#e0a030"}"` +
        `${t === S.position ? ' stroke="#1d2433" stroke-width="2"' : ""}></rect>`;
    });
    s += `<line x1="${ml}" x2="${W - mr}" y1="${Y(chance)}" y2="${Y(chance)}" stroke="#b3141b" stroke-dasharray="6 4"></line>` +
      `<text x="${W - mr - 4}" y="${Y(chance) - 4}" text-anchor="end" fill="#b3141b" class="small">chance: ln ${VOCAB} = ${chance.toFixed(2)}</text>`;
    const y1 = mt + h + 14, y2 = y1 + 15, y3 = y2 + 17;
    s += `<text x="${ml - 6}" y="${y1}" text-anchor="end" class="small">true next</text>` +
      `<text x="${ml - 6}" y="${y2}" text-anchor="end" class="small">predicted</text>` +
      `<text x="${ml - 6}" y="${y3}" text-anchor="end" class="small">position</text>`;
    for (let t = 0; t < n; ++t) {
      const c = X(t) + dx / 2, ok = st.correct[t] === 1;
      s += `<text x="${c}" y="${y1}" text-anchor="middle" class="tk">${S.tokens[t + 1]}</text>` +
        `<text x="${c}" y="${y2}" text-anchor="middle" class="tk ${ok ? "ok" : "no"}">${st.predicted[t]}</text>`;
      if (t % 8 === 0 || t === n - 1) s += `<text x="${c}" y="${y3}" text-anchor="middle" class="pos">${t}</text>`;
    }
    for (let t = 0; t < n; ++t) s += `<rect data-pos="${t}" x="${X(t)}" y="${mt}" width="${dx}" height="${H - mt}" fill="transparent"></rect>`;
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.innerHTML = s;
    svg.hg = { ml, dx, n };
  }
  function lossLine(t) {
    const st = S.study;
    if (!st || t < 0 || t >= st.loss.length) return "";
    const ok = st.correct[t] === 1;
    return `Position ${t} (${later(t) ? "a later copy" : "the first copy"}): input token ${S.tokens[t]}, true next token ${S.tokens[t + 1]}, ` +
      `predicted ${st.predicted[t]} ${ok ? "✓" : "✗"}, loss ${fixed(st.loss[t], 4)} nats`;
  }
  // The sequence's own means: first-copy loss, later-copy loss, later-copy accuracy.
  function drawSeqFigures() {
    const st = S.study, el = $("ind-seq-figures");
    if (!st) { el.innerHTML = ""; return; }
    let f = 0, nf = 0, l = 0, nl = 0, c = 0;
    st.loss.forEach((v, t) => { if (later(t)) { l += v; ++nl; c += st.correct[t]; } else { f += v; ++nf; } });
    el.innerHTML = `This sequence: first-copy loss <b>${nf ? f4(f / nf) : "—"}</b> nats (${nf} targets), ` +
      `later-copy loss <b>${nl ? f4(l / nl) : "—"}</b> nats (${nl} targets), later-copy accuracy <b>${nl ? f4(c / nl) : "—"}</b>` +
      `${S.ablate.length ? ` <span class="zeroed-note">with ${esc(namesOf(S.ablate))} zeroed</span>` : ""}.`;
  }

  // ------------------------------------------------------------ drawing: why this prediction
  let barsFor = -1;
  function buildBars(n) {
    let h = "";
    for (let j = 0; j < n; ++j)
      h += `<div class="bcol" data-bar="${j}" tabindex="-1" role="button"><div class="barea"><div class="bar"></div></div>` +
        `<span class="btok"></span><span class="bpos">${j % 8 === 0 ? j : ""}</span></div>`;
    $("ind-bars").innerHTML = h;
    barsFor = n;
  }
  function drawWhy() {
    const st = S.study, why = S.why, n = nT(), t = S.position;
    $("ind-pos").max = String(Math.max(0, n - 1));
    if (document.activeElement !== $("ind-pos")) $("ind-pos").value = String(t);
    if (!why || !st) {
      $("ind-why-head").textContent = "";
      $("ind-bars").innerHTML = "";
      barsFor = -1;
      drawCheck();
      return;
    }
    const target = why.target !== undefined ? why.target : S.tokens[t + 1], pred = st.predicted[t];
    $("ind-why-head").innerHTML = `Position ${t} ${later(t) ? "(a later copy)" : "(the first copy)"}: the model reads tokens 0 to ${t} ` +
      `and predicts <b class="${pred === target ? "good" : "bad"}">${pred}</b>; the true next token is <b>${target}</b> ` +
      `${pred === target ? "✓" : "✗"}. Loss ${fixed(why.loss, 4)} nats.`;
    if (barsFor !== n) buildBars(n);
    const e = why.embedding || [];
    let m = 0, best = -1;
    e.forEach((v, j) => { if (isNum(v) && v > m) { m = v; best = j; } });
    const checked = S.check && S.check.embedding !== undefined ? S.check.embedding : -1;
    const focusBar = checked >= 0 ? checked : t;
    document.querySelectorAll("#ind-bars .bcol").forEach((col) => {
      const j = Number(col.dataset.bar), v = e[j];
      col.querySelector(".bar").style.height = (m > 0 && isNum(v) ? (100 * v) / m : 0).toFixed(2) + "%";
      col.querySelector(".btok").textContent = String(S.tokens[j]);
      col.querySelector(".btok").style.color = ink(j);
      col.classList.toggle("after", j > t);
      col.classList.toggle("holds", j <= t && S.tokens[j] === target);
      col.classList.toggle("here", j === t);
      col.classList.toggle("checked", j === checked);
      col.tabIndex = j === focusBar ? 0 : -1;
      col.setAttribute("aria-label", `position ${j}, token ${S.tokens[j]}: gradient norm ${g4(v)}`);
      col.title = `position ${j} (token ${S.tokens[j]}): ‖∂loss/∂embedding‖ = ${g4(v)}`;
    });
    $("ind-bars-note").innerHTML = `Largest at position <b>${best}</b> (token ${best >= 0 ? S.tokens[best] : "—"}` +
      `${best >= 0 && S.tokens[best] === target ? ", the true next token" : ""}): ${g4(m)}; the other bars are drawn to that scale. ` +
      `<span class="key holds">holds the true next token ${target}</span> <span class="key here">position ${t} itself</span> ` +
      `<span class="key after">after ${t}: cannot matter</span>`;
    drawCheck();
  }
  function drawCheck() {
    const el = $("ind-check");
    if (!S.check) {
      el.innerHTML = `<span class="note">Select a bar above, or a cell of an attention map (click it, or Enter on a map), to check that entry's gradient against a central difference.</span>`;
      return;
    }
    const c = S.why && S.why.check;
    if (!c) { el.textContent = "Checking…"; return; }
    const d = Math.abs(c.analytic - c.numeric), w = S.check.weight, e = S.check.embedding;
    // The entry in the page's own words (blocks and heads counted from 1).
    const what = w ? `The attention weight of ${headName(w[0], w[1])}, query ${w[2]} (token ${S.tokens[w[2]]}) → key ${w[3]} (token ${S.tokens[w[3]]})`
      : `The embedding of position ${e} (token ${S.tokens[e]}), moved along its gradient`;
    el.innerHTML = `${esc(what)}: gradient <b>${sig(c.analytic)}</b>, central difference <b>${sig(c.numeric)}</b> ` +
      `(ε = ${isNum(c.eps) ? String(c.eps) : "—"}), |difference| ${isNum(d) ? (d === 0 ? "0" : d.toExponential(2)) : "—"}` +
      (c.analytic === 0 && c.numeric === 0 ? `<div class="note">Both are 0: this entry does not reach the loss at position ${S.position}.</div>` : "");
  }

  // ------------------------------------------------------------ drawing: the batch
  function combined(chunks) {
    const mean = (f, wf) => {
      let s = 0, c = 0;
      for (const a of chunks) {
        const w = typeof wf === "function" ? wf(a) : a[wf];
        const v = typeof f === "function" ? f(a) : a[f];
        if (isNum(w) && w > 0 && isNum(v)) { s += v * w; c += w; }
      }
      return c > 0 ? s / c : null;
    };
    const grid = (key, count) => Array.from({ length: BLOCKS }, (_, b) => Array.from({ length: HEADS }, (_, h) =>
      mean((a) => a[key][b][h], (a) => (Array.isArray(a[count]) ? a[count][b][h] : a[count]))));
    const T = chunks.length ? chunks[0].acc_per_position.length : 0;
    return {
      prev: grid("prev", "n_prev"), induction: grid("induction", "n_induction"),
      first: mean("first", "n_first"), later: mean("later", "n_later"),
      acc: mean("acc", (a) => (a.n_acc !== undefined ? a.n_acc : a.n_later)),
      acc_per_position: Array.from({ length: T }, (_, t) => mean((a) => a.acc_per_position[t], "n")),
    };
  }
  // The lab's batch for the current ablation, CHUNK sequences a request with a frame between them;
  // a change of ablation cancels it and starts again. Without a figure for no head zeroed yet,
  // that batch runs first: the figures to set beside the ablated ones.
  function startBatch() {
    const gen = ++batchGen;
    if (batchTimer !== null) { clearTimeout(batchTimer); batchTimer = null; }
    const want = S.ablate.map((p) => p.slice()), key = keyOf(want);
    S.batch.result = null;
    S.batch.ablate = want;
    if (!BATCH.n || !S.module) { S.batch.running = false; drawBatch(); return; }
    if (cache.has(key)) {
      S.batch.result = cache.get(key);
      S.batch.running = false;
      S.batch.done = S.batch.n;
      drawBatch();
      return;
    }
    const runs = [];
    if (key !== "" && !cache.has("")) runs.push([]);
    runs.push(want);
    const next = () => {
      const ablate = runs.shift();
      runBatch(gen, ablate, () => {
        if (runs.length) next();
        else { S.batch.result = cache.get(key); S.batch.ablate = want; S.batch.running = false; drawBatch(); }
      });
    };
    next();
  }
  function runBatch(gen, ablate, then) {
    const n = BATCH.n, chunks = [], t0 = performance.now();
    let from = 0;
    S.batch.running = true;
    S.batch.done = 0;
    S.batch.n = n;
    S.batch.ablate = ablate;
    drawBatch();
    const step = () => {
      batchTimer = null;
      if (gen !== batchGen) return;
      const count = Math.min(CHUNK, n - from);
      let a;
      try {
        a = ask(withAblate({ batch: { seed: BATCH.seed, n, Lmin: BATCH.Lmin, Lmax: BATCH.Lmax, from, count } }, ablate));
      } catch (e) {
        S.batch.running = false;
        failed(e);
        drawBatch();
        return;
      }
      chunks.push(a);
      from = a.n === undefined ? n : from + count;
      S.batch.done = from;
      if (from < n) { drawProgress(); batchTimer = setTimeout(step, 0); return; }
      const r = combined(chunks);
      cache.set(keyOf(ablate), r);
      if (!ablate.length) S.baseline = r;
      S.times.batch.push(performance.now() - t0);
      then();
    };
    batchTimer = setTimeout(step, 0);
  }
  function drawProgress() {
    const B = S.batch, p = $("ind-progress");
    p.max = Math.max(1, B.n);
    p.value = B.done;
    const what = B.running && S.ablate.length && !B.ablate.length ? " (first with no head zeroed, to compare)" : "";
    const last = S.times.batch.length ? S.times.batch[S.times.batch.length - 1] : null;
    $("ind-progress-text").textContent = !BATCH.n ? "This page holds no batch to measure."
      : B.running ? `batch: ${B.done} of ${B.n} sequences${what}`
      : B.result ? `batch: ${B.n} sequences${last !== null && cache.size ? `, the last one measured in ${(last / 1000).toFixed(1)} s` : ""}`
      : `batch: waiting`;
  }
  function drawBatch() {
    drawProgress();
    const r = S.batch.result, base = S.ablate.length ? S.baseline : null, abl = S.ablate.length > 0;
    const sameAsLab = abl && inductionHeads.length && keyOf(S.ablate) === keyOf(inductionHeads) && LABF.ablated;
    const rows = [["first-copy loss (nats)", "first"], ["later-copy loss (nats)", "later"], ["later-copy accuracy", "acc"]];
    let h = `<tr><th></th><th>this page${abl ? `, with ${esc(namesOf(S.ablate))} zeroed` : ""}</th>` +
      `${abl ? "<th>this page, no head zeroed</th>" : ""}<th>the lab</th>${sameAsLab ? "<th>the lab, induction heads zeroed</th>" : ""}<th>the book</th></tr>`;
    for (const [label, k] of rows)
      h += `<tr><th>${label}</th><td data-figure="batch-${k}" class="${abl ? "zeroed-note" : ""}">${r ? f4(r[k]) : "…"}</td>` +
        `${abl ? `<td data-figure="base-${k}">${base ? f4(base[k]) : "…"}</td>` : ""}<td>${f4(LABF[k])}</td>` +
        `${sameAsLab ? `<td>${f4(LABF.ablated[k])}</td>` : ""}<td>${book(TEXT[k])}</td></tr>`;
    $("ind-batch-table").innerHTML = h;
    // How far this page's figures are from the lab's, on the same batch.
    let d = null;
    const cmp = (x, y) => { if (isNum(x) && isNum(y)) d = Math.max(d === null ? 0 : d, Math.abs(x - y)); };
    const labFor = !abl ? LABF : sameAsLab ? LABF.ablated : null;
    if (r && labFor) {
      for (const k of ["first", "later", "acc"]) cmp(r[k], labFor[k]);
      (labFor.acc_per_position || []).forEach((v, t) => cmp(r.acc_per_position[t], v));
      if (!abl)
        for (const k of ["prev", "induction"])
          if (Array.isArray(labFor[k])) r[k].forEach((row, b) => row.forEach((v, hh) => cmp(v, labFor[k][b] && labFor[k][b][hh])));
    }
    $("ind-batch-diff").textContent = r && labFor && d !== null
      ? `Largest difference from the lab's figures on this batch (head scores, losses, accuracy, accuracy per position): ${d.toExponential(2)}.`
      : r && abl ? "The lab measured no head zeroed and the induction heads zeroed; this ablation is the page's own." : "";
    for (let b = 0; b < BLOCKS; ++b)
      for (let hh = 0; hh < HEADS; ++hh)
        for (const k of ["prev", "induction"]) {
          const el = document.querySelector(`[data-figure="batch-${k}-${b}-${hh}"]`);
          if (el) el.textContent = r ? f4(r[k][b][hh]) : "…";
        }
    drawStrongest();
    drawAcc();
  }
  // Heads are interchangeable, so the text's scores are for the strongest head of each kind: the
  // previous-token head of block 1, the induction head of block 2.
  function drawStrongest() {
    const r = S.batch.result;
    const kinds = [["prev", "previous-token", TEXT.prev], ["induction", "induction", TEXT.induction]];
    for (let b = 0; b < BLOCKS; ++b) {
      const el = $(`ind-strongest-${b}`);
      if (!el) continue;
      if (b >= kinds.length) { el.textContent = ""; continue; }
      const [k, words, text] = kinds[b];
      const pick = (grid) => {
        if (!grid || !Array.isArray(grid[b])) return null;
        let best = 0;
        grid[b].forEach((v, h) => { if (v > grid[b][best]) best = h; });
        return { h: best, v: grid[b][best] };
      };
      const mine = pick(r && r[k]), labs = pick(LABF[k]);
      el.innerHTML = `strongest ${words} head: ${mine ? `<b>head ${mine.h + 1}</b>, ${f4(mine.v)} over the batch` : "… over the batch"}` +
        `${r && S.ablate.length ? " (with heads zeroed)" : ""} · the lab ${labs ? f4(labs.v) : "—"} · the book ${book(text)}`;
    }
  }
  function drawAcc() {
    const svg = $("ind-acc-svg"), r = S.batch.result, base = S.ablate.length ? S.baseline : null;
    const labA = LABF.acc_per_position, sameAsLab = S.ablate.length && keyOf(S.ablate) === keyOf(inductionHeads) && LABF.ablated;
    const curves = [];
    if (base) curves.push({ v: base.acc_per_position, cls: "base", label: "this page, no head zeroed" });
    if (Array.isArray(labA)) curves.push({ v: labA, cls: "lab", label: "lab" });
    if (sameAsLab && Array.isArray(LABF.ablated.acc_per_position)) curves.push({ v: LABF.ablated.acc_per_position, cls: "lab-ablated", label: "lab, induction heads zeroed" });
    if (r) curves.push({ v: r.acc_per_position, cls: S.ablate.length ? "mine zeroed" : "mine", label: S.ablate.length ? "this page, heads zeroed" : "this page" });
    const n = Math.max(0, ...curves.map((c) => c.v.length));
    if (!n) { svg.innerHTML = ""; return; }
    const W = Math.max(560, Math.min(900, widths.acc)), H = 230, ml = 44, mr = 12, mt = 12, mb = 36;
    const w = W - ml - mr, h = H - mt - mb, X = (t) => ml + ((t + 0.5) * w) / n, Y = (v) => mt + h - v * h;
    let s = "";
    if (isNum(BATCH.Lmin) && isNum(BATCH.Lmax))
      s += `<rect x="${X(BATCH.Lmin - 1.5)}" y="${mt}" width="${X(BATCH.Lmax - 0.5) - X(BATCH.Lmin - 1.5)}" height="${h}" fill="#eef3fb"></rect>` +
        `<text x="${X(BATCH.Lmin - 1.5) + 4}" y="${mt + 12}" class="small">the second copy begins here (periods ${BATCH.Lmin}–${BATCH.Lmax})</text>`;
    for (let v = 0; v <= 1.0001; v += 0.25)
      s += `<line x1="${ml}" x2="${W - mr}" y1="${Y(v)}" y2="${Y(v)}" stroke="#e3e7ee"></line><text x="${ml - 6}" y="${Y(v) + 4}" text-anchor="end">${v}</text>`;
    s += `<line x1="${ml}" x2="${W - mr}" y1="${Y(1 / VOCAB)}" y2="${Y(1 / VOCAB)}" stroke="#b3141b" stroke-dasharray="2 3"></line>`;
    for (let t = 0; t < n; t += 8) s += `<text x="${X(t)}" y="${mt + h + 14}" text-anchor="middle" class="pos">${t}</text>`;
    s += `<text x="${ml + w / 2}" y="${H - 4}" text-anchor="middle" class="small">target position (chance 1/${VOCAB}: the dotted line)</text>`;
    for (const c of curves) {
      const pts = c.v.map((v, t) => (isNum(v) ? `${X(t).toFixed(1)},${Y(v).toFixed(1)}` : "")).filter(Boolean).join(" ");
      s += `<polyline class="${c.cls}" points="${pts}" fill="none"></polyline>`;
    }
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.innerHTML = s;
    $("ind-acc-legend").innerHTML = curves.map((c) => `<span class="leg ${c.cls}"><i></i>${esc(c.label)}</span>`).join(" ");
  }

  // ------------------------------------------------------------ drawing: circuits
  function drawCircuits() {
    const c = S.circuits, el = $("ind-circuits");
    if (!c) { el.innerHTML = ""; return; }
    const V = VOCAB, cell = 3, side = V * cell;
    let h = "";
    for (let b = 0; b < BLOCKS; ++b) {
      h += `<div class="block-row"><div class="block-head"><b>block ${b + 1}: QK</b> <span class="note">the score a query token gives a key token at offset 0</span></div><div class="heads">`;
      for (let k = 0; k < HEADS; ++k)
        h += `<div class="map"><div class="map-title"><b>head ${k + 1}</b> <span class="note">diagonal fraction ${f4(c.qk_diagonal && c.qk_diagonal[b][k])}</span></div>` +
          `<div class="map-grid"><svg class="yax" data-ax="v"></svg><div class="cv"><canvas data-qk="${b}-${k}" tabindex="0" aria-label="QK of block ${b + 1} head ${k + 1}: arrow keys move"></canvas></div>` +
          `<div class="corner">query ↓<br>key →</div><svg class="xax" data-ax="h"></svg></div></div>`;
      h += `</div><div class="cbar"><canvas id="ind-qk-bar-${b}"></canvas></div></div>`;
    }
    h += `<div class="block-row"><div class="block-head"><b>OV: the copying matrix of each block</b> <span class="note">row a: attending to token a; column b: how much that raises token b's logit</span></div><div class="heads">`;
    for (let b = 0; b < BLOCKS; ++b) {
      h += `<div class="map"><div class="map-title"><b>block ${b + 1}</b></div>` +
        `<div class="map-grid"><svg class="yax" data-ax="v"></svg><div class="cv"><canvas data-ov="${b}" tabindex="0" aria-label="OV of block ${b + 1}: arrow keys move"></canvas></div>` +
        `<div class="corner">a ↓<br>b →</div><svg class="xax" data-ax="h"></svg></div>` +
        `<div class="ov-figures">diagonal fraction <b>${f4(c.ov_diagonal && c.ov_diagonal[b])}</b>` +
        `${b === BLOCKS - 1 ? `<br>the lab ${f4(LABF.ov_diagonal)} · the book ${book(TEXT.ov_diagonal)}` : ""}</div></div>`;
      h += `<div class="cbar"><canvas id="ind-ov-bar-${b}"></canvas></div>`;
    }
    h += `</div></div>`;
    el.innerHTML = h;
    $("ind-rope").textContent = c.rope || "";
    el.querySelectorAll("svg[data-ax]").forEach((svg) => {
      const vertical = svg.dataset.ax === "v";
      let s = "";
      for (let a = 0; a < V; a += 8) {
        const p = (a + 0.5) * cell;
        s += vertical ? `<text x="44" y="${p + 3.5}" text-anchor="end">${a}</text><line x1="46" x2="50" y1="${p}" y2="${p}"></line>`
          : `<line x1="${p}" x2="${p}" y1="0" y2="3"></line><text x="${p}" y="13" text-anchor="middle">${a}</text>`;
      }
      svg.setAttribute("width", vertical ? 50 : side);
      svg.setAttribute("height", vertical ? side : 16);
      svg.innerHTML = s;
    });
    const handlers = (what, get) => ({
      hover: (p) => circReadout(what, p || S.circ),
      pick: (p) => { S.circ = p; paintCircuits(); circReadout(what, p); },
      move: (di, dj) => { S.circ = { i: clamp(S.circ.i + di, 0, V - 1), j: clamp(S.circ.j + dj, 0, V - 1) }; paintCircuits(); circReadout(what, S.circ); },
      focus: () => circReadout(what, S.circ),
      get,
    });
    el.querySelectorAll("canvas[data-qk]").forEach((cv) => {
      const [b, k] = cv.dataset.qk.split("-").map(Number);
      wireMap(cv, handlers({ b, k }));
    });
    el.querySelectorAll("canvas[data-ov]").forEach((cv) => wireMap(cv, handlers({ b: Number(cv.dataset.ov), k: -1 })));
    paintCircuits();
  }
  function paintCircuits() {
    const c = S.circuits, V = VOCAB, cell = 3, side = V * cell;
    if (!c) return;
    const paint = (cv, M, m) => {
      const ctx = sized(cv, side, side);
      paintCells(ctx, 0, 0, V, V, cell, RDBU, (i, j) => divIndex(at(M, V, i, j), m));
      box(ctx, S.circ.j * cell - 1, S.circ.i * cell - 1, cell + 2, cell + 2, "#1d2433", 1);
      cv.hg = { x: 0, y: 0, cell, rows: V, cols: V };
    };
    for (let b = 0; b < BLOCKS; ++b) {
      const m = maxAbs(c.qk[b], V, V);
      for (let k = 0; k < HEADS; ++k) paint(document.querySelector(`canvas[data-qk="${b}-${k}"]`), c.qk[b][k], m);
      paintBar($(`ind-qk-bar-${b}`), side, true, m);
      const mo = maxAbs([c.ov[b]], V, V);
      paint(document.querySelector(`canvas[data-ov="${b}"]`), c.ov[b], mo);
      paintBar($(`ind-ov-bar-${b}`), side, true, mo);
    }
  }
  function circReadout(what, p) {
    const c = S.circuits, el = $("ind-circ-readout");
    if (!c || !p) { el.textContent = ""; return; }
    el.textContent = what.k >= 0
      ? `${headName(what.b, what.k)}, QK: query token ${p.i}, key token ${p.j}: score ${g4(at(c.qk[what.b][what.k], VOCAB, p.i, p.j))}`
      : `block ${what.b + 1}, OV: attending to token ${p.i} changes token ${p.j}'s logit by ${g4(at(c.ov[what.b], VOCAB, p.i, p.j))}`;
  }

  // ------------------------------------------------------------ one change, one recompute
  function schedule(study) {
    needStudy = needStudy || study;
    if (timer === null) timer = setTimeout(guard(recompute), 0);
  }
  function recompute() {
    timer = null;
    if (!S.module || S.tokens.length < 2) { writeHash(); return; }
    settle();
    const t0 = performance.now();
    const seq = { tokens: S.tokens, L: S.L };
    let ok = true;
    try {
      if (needStudy || !S.study) {
        needStudy = false;
        S.study = null;
        S.study = ask(withAblate({ study: seq }));
        axesSmall();
      }
      const why = { tokens: S.tokens, L: S.L, position: S.position };
      if (S.check) why.check = S.check;
      S.why = null;
      S.why = ask(withAblate({ why }));
    } catch (e) {
      ok = false;
      failed(e);
    }
    const t1 = performance.now();
    if (S.cellAuto && S.study) {
      const row = S.study.patterns[S.head[0]][S.head[1]], n = S.study.loss.length;
      let best = 0;
      for (let j = 0; j <= S.position; ++j) if (at(row, n, S.position, j) > at(row, n, S.position, best)) best = j;
      S.cell = { i: S.position, j: best };
    }
    drawStudy();
    const t2 = performance.now();
    S.times.study.push(t2 - t0);
    if (ok) {
      S.error = null;
      status(`Computed in your browser: this sequence's patterns, losses and gradients in ${(t1 - t0).toFixed(0)} ms, drawn in ${(t2 - t1).toFixed(0)} ms.`, false);
    }
    writeHash();
  }
  function drawStudy() {
    drawStrip();
    paintMaps();
    drawSeqScores();
    drawLoss();
    $("ind-loss-readout").textContent = lossLine(S.position);
    drawSeqFigures();
    drawWhy();
    readout(S.head, S.cell);
    drawAblation();
  }

  // ------------------------------------------------------------ what the learner changes
  function setPosition(t) {
    const n = nT();
    if (!n) return;
    t = clamp(t, 0, n - 1);
    if (t === S.position && S.why) return;
    S.position = t;
    S.cellAuto = true;
    $("ind-pos").classList.remove("invalid");
    schedule(false);
  }
  function setCheck(c) {
    S.check = checkValid(c) ? c : null;
    schedule(false);
  }
  function setAblate(list) {
    S.ablate = normalise(list);
    drawAblation();
    schedule(true);
    startBatch();
    writeHash();
  }
  function drawAblation() {
    document.querySelectorAll("button[data-ablate]").forEach((el) => {
      const [b, h] = el.dataset.ablate.split("-").map(Number);
      el.setAttribute("aria-pressed", String(isAblated(b, h)));
      el.classList.toggle("on", isAblated(b, h));
    });
    const ind = $("ind-ablate-induction"), on = inductionHeads.length > 0 && keyOf(S.ablate) === keyOf(inductionHeads);
    ind.setAttribute("aria-pressed", String(on));
    ind.classList.toggle("on", on);
    $("ind-clear").disabled = !S.ablate.length;
    $("ind-ablated").innerHTML = S.ablate.length
      ? `Zeroed: <b>${esc(namesOf(S.ablate))}</b>. Their outputs are removed; every pattern, loss, gradient and batch figure is recomputed.`
      : "No head zeroed: the model as trained.";
    document.querySelectorAll("#ind-maps .map").forEach((m) => {
      const [b, h] = m.id.replace("ind-map-", "").split("-").map(Number);
      m.classList.toggle("zeroed", isAblated(b, h));
    });
  }
  // A new sequence from the seed and the periods (an invalid field is marked, and nothing is asked).
  function newSequence() {
    if (!S.module) return;
    S.tokens = [];
    const a = ask({ sequence: { seed: S.seed, Lmin: S.Lmin, Lmax: S.Lmax } });
    S.tokens = a.tokens;
    S.L = a.L;
    S.custom = false;
    fillSequenceFields();
    settle();
    schedule(true);
  }
  const WHOLE = /^\s*\d{1,16}\s*$/;
  function readSeedFields() {
    const seed = $("ind-seed").value, lo = $("ind-Lmin").value, hi = $("ind-Lmax").value;
    const okSeed = WHOLE.test(seed) && Number(seed) <= Number.MAX_SAFE_INTEGER;
    const okLo = WHOLE.test(lo) && Number(lo) >= 1 && Number(lo) <= SEQ - 1;
    const okHi = WHOLE.test(hi) && Number(hi) >= 1 && Number(hi) <= SEQ - 1;
    const order = okLo && okHi && Number(lo) <= Number(hi);
    $("ind-seed").classList.toggle("invalid", !okSeed);
    $("ind-Lmin").classList.toggle("invalid", !okLo || (okHi && !order));
    $("ind-Lmax").classList.toggle("invalid", !okHi || (okLo && !order));
    if (!okSeed) { inputMessage(`The seed is a whole number from 0 to ${Number.MAX_SAFE_INTEGER}.`); return false; }
    if (!okLo || !okHi || !order) { inputMessage(`The periods are whole numbers from 1 to ${SEQ - 1}, the first no larger than the second.`); return false; }
    const same = S.seed === Number(seed) && S.Lmin === Number(lo) && S.Lmax === Number(hi);
    S.seed = Number(seed);
    S.Lmin = Number(lo);
    S.Lmax = Number(hi);
    inputMessage("");
    return !same || S.custom;
  }
  // The learner's own tokens: 2 to SEQ whole numbers from 0 to VOCAB − 1, and a period L.
  function readTokens() {
    const raw = $("ind-tokens").value.trim(), field = $("ind-tokens"), lf = $("ind-L");
    const words = raw ? raw.split(/[\s,]+/).filter(Boolean) : [];
    let why = "";
    const bad = words.find((w) => !/^\d{1,3}$/.test(w) || Number(w) > VOCAB - 1);
    if (!words.length) why = `Type 2 to ${SEQ} tokens (whole numbers from 0 to ${VOCAB - 1}), or press new sequence.`;
    else if (bad !== undefined) why = `'${bad}' is not a token: tokens are whole numbers from 0 to ${VOCAB - 1}.`;
    else if (words.length < 2) why = "Type at least 2 tokens: the model predicts each one from those before it.";
    else if (words.length > SEQ) why = `At most ${SEQ} tokens (the model's sequence length); these are ${words.length}.`;
    field.classList.toggle("invalid", why !== "");
    if (why) { lf.classList.remove("invalid"); inputMessage(why); return; }
    const lv = lf.value;
    const okL = WHOLE.test(lv) && Number(lv) >= 1 && Number(lv) <= words.length;
    lf.classList.toggle("invalid", !okL);
    if (!okL) { inputMessage(`The period L is a whole number from 1 to ${words.length} (the number of tokens).`); return; }
    inputMessage("");
    const tokens = words.map(Number);
    if (S.custom && S.L === Number(lv) && tokens.length === S.tokens.length && tokens.every((v, k) => v === S.tokens[k])) return;
    S.tokens = tokens;
    S.L = Number(lv);
    S.custom = true;
    field.classList.add("changed");
    settle();
    schedule(true);
  }

  function wire() {
    $("ind-new").addEventListener("click", guard(() => {
      readSeedFields();
      if ($("ind-seed").classList.contains("invalid") || $("ind-Lmin").classList.contains("invalid") || $("ind-Lmax").classList.contains("invalid")) return;
      S.seed = Math.min(S.seed + 1, Number.MAX_SAFE_INTEGER);
      newSequence();
    }));
    // Each field answers as it is typed in ("input") and when it is left or set ("change"); a value
    // already shown asks nothing again.
    const both = (id, fn) => { $(id).addEventListener("input", guard(fn)); $(id).addEventListener("change", guard(fn)); };
    for (const id of ["ind-seed", "ind-Lmin", "ind-Lmax"]) both(id, () => { if (readSeedFields()) newSequence(); });
    both("ind-tokens", readTokens);
    both("ind-L", readTokens);
    both("ind-pos", () => {
      const v = $("ind-pos").value, n = nT();
      const ok = WHOLE.test(v) && Number(v) <= n - 1;
      $("ind-pos").classList.toggle("invalid", !ok);
      if (!ok) { $("ind-pos-msg").textContent = `a position from 0 to ${n - 1}`; return; }
      $("ind-pos-msg").textContent = "";
      setPosition(Number(v));
    });
    $("ind-mode").addEventListener("change", guard(() => {
      S.mode = $("ind-mode").value === "grad" ? "grad" : "weights";
      paintMaps();
      readout(S.head, S.cell);
      writeHash();
    }));
    $("ind-ablate-induction").addEventListener("click", guard(() => {
      setAblate(keyOf(S.ablate) === keyOf(inductionHeads) ? [] : inductionHeads);
    }));
    $("ind-clear").addEventListener("click", guard(() => setAblate([])));
    // The loss chart: click a position, or Left/Right (Home/End) with the chart focused.
    const svg = $("ind-loss-svg");
    const posAt = (e) => {
      const g = svg.hg;
      if (!g) return -1;
      const t = Math.floor((e.clientX - svg.getBoundingClientRect().left - g.ml) / g.dx);
      return t >= 0 && t < g.n ? t : -1;
    };
    svg.addEventListener("click", guard((e) => { const t = posAt(e); if (t >= 0) { svg.focus(); setPosition(t); } }));
    svg.addEventListener("mousemove", guard((e) => { const t = posAt(e); $("ind-loss-readout").textContent = lossLine(t >= 0 ? t : S.position); }));
    svg.addEventListener("mouseleave", () => { $("ind-loss-readout").textContent = lossLine(S.position); });
    svg.addEventListener("keydown", guard((e) => {
      const n = nT(), to = { ArrowLeft: S.position - 1, ArrowRight: S.position + 1, Home: 0, End: n - 1 }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      setPosition(to);
    }));
    // The bars: click, or Enter/Space on a focused one, to check it; Left/Right move between them.
    const bars = $("ind-bars");
    bars.addEventListener("click", guard((e) => {
      const col = e.target.closest("[data-bar]");
      if (!col) return;
      col.focus();
      setCheck({ embedding: Number(col.dataset.bar) });
    }));
    bars.addEventListener("keydown", guard((e) => {
      const col = e.target.closest("[data-bar]");
      if (!col) return;
      const j = Number(col.dataset.bar), cols = bars.querySelectorAll("[data-bar]");
      const to = { ArrowLeft: j - 1, ArrowRight: j + 1, Home: 0, End: cols.length - 1 }[e.key];
      if (to !== undefined) {
        e.preventDefault();
        const next = cols[clamp(to, 0, cols.length - 1)];
        cols.forEach((c) => { c.tabIndex = -1; });
        next.tabIndex = 0;
        next.focus();
      } else if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        setCheck({ embedding: j });
      }
    }));
    let resizeTimer = null;
    window.addEventListener("resize", () => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(guard(() => { measure(); drawLoss(); drawAcc(); }), 100);
    });
  }

  // ------------------------------------------------------------ loading
  async function start() {
    $("ind-model").textContent = LAB.model ? String(LAB.model) : "";
    const ih = $("ind-ablate-induction");
    ih.textContent = inductionHeads.length ? `zero the induction heads (${namesOf(inductionHeads)})` : "zero the induction heads";
    if (!inductionHeads.length) { ih.disabled = true; ih.title = "The lab named no induction heads for this model."; }
    $("ind-batch-what").textContent = BATCH.n
      ? `The lab's own batch: ${BATCH.n} sequences drawn with seed ${BATCH.seed}, periods ${BATCH.Lmin} to ${BATCH.Lmax}. ` +
        "The page measures it in your browser, a few sequences at a time; on the same batch its figures and the lab's should agree to float32 rounding."
      : "";
    $("ind-tokens").placeholder = `whole numbers from 0 to ${VOCAB - 1}, separated by spaces or commas`;
    buildMaps();
    readHash();
    $("ind-mode").value = S.mode;
    wire();
    fillSequenceFields();
    drawAblation();
    drawBatch();
    status("Loading the model (WebAssembly)…", false);
    measure();
    try {
      if (typeof handgradInduction !== "function") throw new Refused("This page is missing the model's WebAssembly module.");
      const el = $("hg-induction-model");
      if (!el) throw new Refused("This page is missing the model's weights.");
      const m = await handgradInduction();
      let bin;
      try { bin = atob(el.textContent.trim()); } catch (e) { throw new Refused("The model's weights in this page are damaged (not base64)."); }
      const bytes = new Uint8Array(bin.length);
      for (let k = 0; k < bin.length; ++k) bytes[k] = bin.charCodeAt(k);
      const err = m.inductionLoad(bytes);
      if (err) throw new Refused("The model did not load: " + err);
      S.module = m;
    } catch (e) {
      loading = false;
      failed(e);
      return;
    }
    try {
      if (!S.custom) {
        const a = ask({ sequence: { seed: S.seed, Lmin: S.Lmin, Lmax: S.Lmax } });
        S.tokens = a.tokens;
        S.L = a.L;
      }
      fillSequenceFields();
      S.position = hashed.pos !== null ? hashed.pos : Math.min(nT() - 1, S.L + (S.L >> 1));
      settle();
      needStudy = true;
      recompute();
    } catch (e) {
      failed(e);
    }
    loading = false;
    circuitsTimer = setTimeout(guard(() => {
      circuitsTimer = null;
      try { S.circuits = ask({ circuits: {} }); } catch (e) { failed(e); }
      drawCircuits();
      startBatch();
    }), 0);
  }
  start().catch(failed);
})();
