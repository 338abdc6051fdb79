"use strict";
// The induction page's circuits (viz/induction_live.js has the page's state): each head's QK
// matrix over token pairs and each block's OV copying matrix, with one entry in words. page is
// viz/induction_live.js's: the state S, the lab's figures and the error guard.
window.hgInductionParts.circuits = (page) => {
  const { $, f4, g4, book, clamp, headName, RDBU, divIndex, at, maxAbs, sized, paintCells, box, paintBar, wireMap } =
    window.hgInductionParts.draw;
  const { S, LABF, TEXT, VOCAB, BLOCKS, HEADS, guard } = page;

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
      wireMap(cv, handlers({ b, k }), guard);
    });
    el.querySelectorAll("canvas[data-ov]").forEach((cv) => wireMap(cv, handlers({ b: Number(cv.dataset.ov), k: -1 }), guard));
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

  return { drawCircuits };
};
