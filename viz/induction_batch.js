"use strict";
// The induction page's batch (viz/induction_live.js has the page's state): the lab's batch measured
// in the browser a few sequences at a time, for each ablation, and its figures beside the lab's
// and the book's. page is viz/induction_live.js's: the state S, the lab's figures, the helpers,
// the requests, and the charts' drawAcc (viz/induction_charts.js).
window.hgInductionParts.batch = (page) => {
  const { $, esc, isNum, f4, book } = window.hgInductionParts.draw;
  const { S, LABF, TEXT, BATCH, BLOCKS, HEADS, inductionHeads, keyOf, namesOf, ask, withAblate, failed, drawAcc } = page;
  const CHUNK = 16;                         // sequences of the batch per request, between two frames
  let batchTimer = null, batchGen = 0;
  const cache = new Map();                  // batch figures by ablation ("" = no head zeroed)

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

  // Whether a piece of the batch is waiting for its frame (the page is not idle until it has run).
  const batchWaiting = () => batchTimer !== null;
  return { startBatch, drawBatch, batchWaiting };
};
