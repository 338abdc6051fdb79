"use strict";
// The induction page ("What Attention Computes", live): the induction lab's trained two-block,
// attention-only TinyCharLM, built as WebAssembly and inlined above as handgradInduction, answers
// every request (labs/induction_live.h): the text's repeated random sequence, the attention
// patterns and each target's loss on it, the gradients of one target's loss, the lab's batch in
// chunks, the QK and OV circuits. This script holds the state, asks, and answers the learner; the
// parts run before it draw (window.hgInductionParts: viz/induction_draw.js, induction_sequence.js,
// induction_maps.js, induction_charts.js, induction_batch.js, induction_circuits.js,
// induction_link.js). Every number the page shows comes from the model, from the lab
// (hg-induction-lab's "lab") or from the text ("text"); none is written here.
// Blocks and heads count from 0 in every request and answer and from 1 in every word shown.
(() => {
  const PARTS = window.hgInductionParts;
  const { $, clamp, esc, headName, at } = PARTS.draw;

  function readJSON(id) {
    const el = $(id);
    if (!el) return null;
    try { return JSON.parse(el.textContent); } catch (e) { return null; }
  }
  const LAB = readJSON("hg-induction-lab") || {};
  const LABF = LAB.lab || {}, TEXT = LAB.text || {}, BATCH = LAB.batch || {};
  const VOCAB = LAB.vocab || 64, BLOCKS = LAB.blocks || 2, HEADS = LAB.heads || 4, SEQ = LAB.seq || 64;

  // ------------------------------------------------------------ the state (read by the page's tests)
  let loading = true, timer = null, needStudy = false, circuitsTimer = null;
  const S = {
    module: null, error: null,
    tokens: [], L: 1, seed: 7, Lmin: LAB.Lmin || 16, Lmax: LAB.Lmax || 32, custom: false,
    ablate: [], position: 0, check: null, mode: "weights",
    study: null, why: null, circuits: null,
    batch: { running: false, done: 0, n: BATCH.n || 0, result: null, ablate: [] },
    baseline: null,
    times: { study: [], batch: [] },
    head: [BLOCKS - 1, 0], cell: { i: 0, j: 0 }, cellAuto: true, circ: { i: 0, j: 0 },
    busy: () => loading || timer !== null || S.batch.running || batchWaiting() || circuitsTimer !== null,
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

  // ------------------------------------------------------------ the parts
  // Each part is made with what it reads (page), and what it gives joins page for the parts after it.
  const page = {
    S, LAB, LABF, TEXT, BATCH, VOCAB, BLOCKS, HEADS, SEQ, inductionHeads,
    nT, later, tokClass, ink, normalise, keyOf, isAblated, namesOf,
    guard, failed, ask, withAblate, settle, schedule, setPosition, setCheck, setAblate,
  };
  for (const part of [PARTS.sequence, PARTS.maps, PARTS.charts, PARTS.batch, PARTS.circuits, PARTS.link])
    Object.assign(page, part(page));
  const { drawStrip, fillSequenceFields, newSequence, readSeedFields, readTokens, readPosition } = page;
  const { buildMaps, paintMaps, axesSmall, readout, drawSeqScores } = page;
  const { measure, drawLoss, lossLine, drawSeqFigures, drawWhy, drawAcc } = page;
  const { startBatch, drawBatch, batchWaiting, drawCircuits, readHash, writeHash, hashed } = page;

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
    both("ind-pos", readPosition);
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
