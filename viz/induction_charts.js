"use strict";
// The induction page's charts (viz/induction_live.js has the page's state): the loss and the
// prediction at each position of the sequence, the gradient of one target's loss for each
// position's embedding and its check against a central difference, the batch's accuracy per
// position. page is viz/induction_live.js's: the state S, the lab's figures and the helpers.
window.hgInductionParts.charts = (page) => {
  const { $, esc, isNum, fixed, f4, sig, g4, headName } = window.hgInductionParts.draw;
  const { S, LABF, BATCH, VOCAB, inductionHeads, nT, later, ink, keyOf, namesOf } = page;

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

  // ------------------------------------------------------------ drawing: the batch's accuracy per position
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

  return { measure, drawLoss, lossLine, drawSeqFigures, drawWhy, drawAcc };
};
