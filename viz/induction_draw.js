"use strict";
// The induction page's drawing kit (viz/induction_live.js has the page's state): numbers in the
// page's words, the colour tables, a matrix's entries, heat maps painted on a canvas, a colour bar,
// and the mouse and keys on a map. It holds no state; the other parts read it from
// window.hgInductionParts.draw.
window.hgInductionParts = window.hgInductionParts || {};
window.hgInductionParts.draw = (() => {
  // ------------------------------------------------------------ numbers and names
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
  // guard wraps each handler (the page's: an error shown in its status line).
  function wireMap(canvas, on, guard) {
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

  return {
    $, esc, isNum, fixed, f4, sig, g4, book, clamp, headName,
    BLUES, RDBU, seqIndex, divIndex, at, maxAbs, sized, paintCells, box, paintBar, wireMap,
  };
})();
