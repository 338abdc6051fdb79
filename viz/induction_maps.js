"use strict";
// The induction page's attention maps (viz/induction_live.js has the page's state): each head's
// map with its ablation button and scores, the selected head large, the selected query's keys,
// one cell in words. page is viz/induction_live.js's: the state S, the lab's figures, the helpers
// over the sequence and the heads, and what a change asks for.
window.hgInductionParts.maps = (page) => {
  const { $, fixed, f4, g4, clamp, headName, BLUES, RDBU, seqIndex, divIndex, at, maxAbs, sized, paintCells, box, paintBar, wireMap } =
    window.hgInductionParts.draw;
  const { S, LABF, BLOCKS, HEADS, nT, ink, isAblated, guard, setCheck, setAblate } = page;
  const SMALL = 189, BIG = 630;             // the side of a small and of the large attention map, in pixels

  // ------------------------------------------------------------ the maps, built once
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
        wireMap(canvas, mapHandlers(() => [b, k]), guard);
      }
    wireMap($("ind-big"), mapHandlers(() => S.head), guard);
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

  return { buildMaps, paintMaps, axesSmall, readout, drawSeqScores };
};
