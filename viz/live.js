"use strict";
// The live page: Q, K and V as fields, the variant's toggles, a fault, forward mode. On every edit
// the library itself — built as WebAssembly, inlined above as handgradLive — recomputes the
// example (labs/three_token_live.h): the forward, the backward step by step with each step's
// central differences, the lab's comparisons with the text, a tangent; page.js draws the steps.
// page.js, the script before this one, also gives the helpers used here: $, esc, num, fmt and
// tensorBox (a tensor's name, shape and table, each cell's class from mark(i)).
(() => {
  const TEXT = { Q: [[1, 0], [0, 1], [1, 1]], K: [[1, 0], [0, 1], [1, 1]], V: [[1, 0], [0, 2], [3, 3]] };
  const copy = (m) => m.map((r) => r.slice());
  const live = {
    Q: copy(TEXT.Q), K: copy(TEXT.K), V: copy(TEXT.V), mask: true, scale: true, loss: [2, 1], fault: "none",
    mode: "backward", jvp: { input: "q", row: 2, col: 1 }, module: null, last: null, times: [], error: null,
  };
  window.hgLive = live;
  // The report writes a number it has no value for as null: a dash.
  const f3 = (v) => (v === null || v === undefined ? "—" : fmt(v));
  const sub = (i) => String(i).split("").map((c) => "₀₁₂₃₄₅₆₇₈₉"[Number(c)]).join("");
  const T = () => live.Q.length, dk = () => live.Q[0].length, dv = () => live.V[0].length;

  // ------------------------------------------------------------ the editors
  function editor(name) {
    const m = live[name];
    let h = `<div><span class="name">${name}</span> <span class="shape">(${m.length}, ${m[0].length})</span></div><table>`;
    m.forEach((row, i) => {
      h += "<tr>" + row.map((v, j) => {
        const t = TEXT[name][i] && TEXT[name][i][j];
        return `<td><input type="text" inputmode="decimal" data-m="${name}" data-i="${i}" data-j="${j}" value="${v}"` +
          ` aria-label="${name}${sub(i + 1)}${sub(j + 1)}"${t === undefined || t !== v ? ' class="changed"' : ""}></td>`;
      }).join("") + "</tr>";
    });
    $("edit-" + name).innerHTML = h + "</table>";
  }
  function editors() { ["Q", "K", "V"].forEach(editor); }

  // A matrix resized to rows x cols, keeping what fits; new entries are 0.
  const resize = (m, rows, cols) => Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (m[i] && m[i][j] !== undefined ? m[i][j] : 0)));

  function options(select, lo, hi, value) {
    select.innerHTML = "";
    for (let k = lo; k <= hi; ++k) select.add(new Option(String(k), String(k), false, k === value));
  }
  function jvpOptions() {
    const s = $("jvp"), cur = `${live.jvp.input}${live.jvp.row},${live.jvp.col}`;
    s.innerHTML = "";
    for (const [name, m] of [["Q", live.Q], ["K", live.K], ["V", live.V]])
      m.forEach((r, i) => r.forEach((_, j) => {
        const key = `${name.toLowerCase()}${i},${j}`;
        s.add(new Option(`${name}̇ = e${sub(i + 1)}${sub(j + 1)}`, key, false, key === cur));
      }));
    if (s.selectedIndex < 0) s.selectedIndex = 0;
    readJvp();
  }
  function readJvp() {
    const m = /^([qkv])(\d+),(\d+)$/.exec($("jvp").value);
    if (m) live.jvp = { input: m[1], row: Number(m[2]), col: Number(m[3]) };
  }
  function controls() {
    options($("tokens"), 2, 6, T());
    options($("dk"), 1, 4, dk());
    options($("dv"), 1, 4, dv());
    $("mask").checked = live.mask;
    $("scale").checked = live.scale;
    $("fault").value = live.fault;
    $("mode").value = live.mode;
    $("jvp-pick").style.display = live.mode === "forward" ? "" : "none";
    jvpOptions();
  }

  // ------------------------------------------------------------ what the library answered
  // Whether entry i (row-major) of a matrix with `cols` columns is where L sits: O[row][col].
  const isLoss = (i, cols) => i === live.loss[0] * cols + live.loss[1];
  function drawForward(a) {
    const O = a.forward.O;
    let h = `<div class="note">the forward (${esc(a.variant)}); click any entry of O to make it L</div><div class="row">`;
    h += tensorBox("S", a.forward.S) + tensorBox("P = softmax(S)", a.forward.P);
    h += tensorBox("O = P V", O, (i) => (isLoss(i, O.shape[1]) ? "pick loss" : "pick"));
    h += `</div><div id="loss-line"><span class="name">L = ${esc(a.loss)} = ${f3(a.L)}</span>` +
      (a.is_text && live.scale ? ` <span class="note">the text: 2.007</span>` : "") + `</div>`;
    $("forward").innerHTML = h;
    // Each entry of O says where it is (data-r, data-c), and a click makes it L.
    document.querySelectorAll("#forward td.pick").forEach((td) => {
      Object.assign(td.dataset, { r: td.parentElement.rowIndex, c: td.cellIndex });
      td.addEventListener("click", () => {
        live.loss = [Number(td.dataset.r), Number(td.dataset.c)];
        recompute();
      });
    });
  }
  // The lab's comparisons with the text (its report), as three_token prints them.
  function drawText(a) {
    if (!a.is_text) {
      // Keyed to what differs: the inputs (Q, K, V), or only L.
      const why = a.text_inputs
        ? `These are the text's inputs, Q, K and V, but L is ${esc(a.loss)}, not the text's o₃,₂: its printed gradients are for another L`
        : `These are not the text's inputs (Q, K or V differs from the text's), so its printed numbers do not apply`;
      const agree = a.tolerance_failures ? `<span class="bad">${a.tolerance_failures} agreement checks between methods failed</span>`
        : "formula, tape, finite differences and the primitive tape agree";
      $("text-numbers").innerHTML = `<div class="note" id="text-notice">${why}. Every gradient is checked against its central ` +
        `difference instead (${agree}).${a.text_inputs ? " Click o₃,₂ in O for the text's L and its numbers." : ""}</div>`;
      return;
    }
    // In the order the lab prints its sections (a JSON object's keys come back sorted).
    const order = ["scores", "the causal case", "the geometry", "without the mask", "without the scale", "backward"];
    const rank = (name) => { const i = order.findIndex((o) => name.startsWith(o)); return i < 0 ? order.length : i; };
    const sections = Object.entries(a.report.sections || {}).sort((x, y) => rank(x[0]) - rank(y[0]));
    let rows = "";
    for (const [section, entries] of sections)
      for (const [key, e] of Object.entries(entries)) {
        if (e.text === undefined) continue;
        const m = Array.isArray(e.measured) ? e.measured.map(f3).join(", ") : typeof e.measured === "number" ? f3(e.measured) : esc(e.measured);
        const t = Array.isArray(e.text) ? e.text.map(f3).join(", ") : typeof e.text === "number" ? f3(e.text) : esc(e.text);
        rows += `<tr data-agrees="${e.agrees}"><td>${esc(section)}</td><td>${esc(key)}</td><td class="n">${m}</td><td class="n">${t}</td>` +
          `<td class="${e.agrees ? "good" : "bad"}">${e.agrees ? "✓" : "✗ differs"}</td></tr>`;
      }
    const agree = a.compared - a.mismatches;
    const open = $("text-numbers").querySelector("details");
    $("text-numbers").innerHTML = `<details${open && open.open ? " open" : ""}><summary><span id="text-verdict" class="${a.mismatches ? "bad" : "good"}">` +
      `${a.compared} numbers compared with the text: ${agree} agree, ${a.mismatches} differ.</span> <span class="note">(each one, computed here)</span></summary>` +
      `<table><tr><th>where</th><th>what</th><th>handgrad</th><th>the text</th><th></th></tr>${rows}</table></details>`;
  }
  // Forward mode: every tangent along the chosen entry, beside its central difference, and L̇
  // beside the backward's gradient of that entry.
  function drawTangent(a) {
    const t = a.tangent;
    if (!t) { $("tangent").innerHTML = ""; return; }
    const close = Math.abs(num(t.dL) - num(t.dL_reverse)) <= 1e-9 * Math.max(1, Math.abs(num(t.dL_reverse)));
    let h = `<h3>forward mode along ${esc(t.name)}: how every number moves</h3><div class="row">`;
    h += tensorBox("Ṡ = (Q̇Kᵀ + QK̇ᵀ)·scale", t.S) + tensorBox("rowsum(P ∘ Ṡ)", t.D) + tensorBox("Ṗ = P ∘ (Ṡ − rowsum)", t.P);
    h += tensorBox("Ṗ, finite diff.", t.P_numeric) + tensorBox("Ȯ = ṖV + PV̇", t.O, (i) => (isLoss(i, t.O.shape[1]) ? "nz" : ""));
    h += tensorBox("Ȯ, finite diff.", t.O_numeric) + tensorBox("Ȯ from jvp()", t.O_engine) + `</div>`;
    h += `<div id="tangent-verdict" class="${close ? "good" : "bad"}">L̇ = ${f3(t.dL)} (forward mode) and the backward's gradient of that entry ` +
      `${f3(t.dL_reverse)}: ${close ? "the two modes meet in one number ✓" : "they differ ✗"}</div>`;
    $("tangent").innerHTML = h;
  }

  // ------------------------------------------------------------ one edit, one recompute
  function request() {
    return { Q: live.Q, K: live.K, V: live.V, mask: live.mask, scale: live.scale, loss: live.loss, fault: live.fault,
             jvp: live.mode === "forward" ? live.jvp : null };
  }
  function status(text, bad) {
    $("live-status").textContent = text;
    $("live-status").className = bad ? "bad" : "note";
  }
  function recompute() {
    if (!live.module) return;
    const t0 = performance.now();
    const a = JSON.parse(live.module.threeTokenLive(JSON.stringify(request())));
    const t1 = performance.now();
    live.last = a;
    if (!a.ok) {
      live.error = a.error;
      status("The library refused these inputs: " + a.error, true);
      return;
    }
    live.error = null;
    window.hgPage.setData(a.page);
    drawForward(a);
    drawText(a);
    drawTangent(a);
    const t2 = performance.now();
    const entry = { compute: t1 - t0, draw: t2 - t1, total: t2 - t0, painted: null };
    live.times.push(entry);
    // The time to the redrawn page: until the browser has laid out and painted the next frame.
    requestAnimationFrame(() => setTimeout(() => { entry.painted = performance.now() - t0; }, 0));
    status(`Recomputed by handgrad in your browser (WebAssembly, float64): forward, ${a.page[0].steps.length} backward steps ` +
      `and their central differences in ${(t1 - t0).toFixed(1)} ms, drawn in ${(t2 - t1).toFixed(1)} ms.`, false);
  }

  function onEdit(e) {
    const el = e.target;
    if (!el.dataset || !el.dataset.m) return;
    const text = el.value.trim().replace("−", "-");
    const v = Number(text);
    const ok = text !== "" && Number.isFinite(v);
    el.classList.toggle("invalid", !ok);
    if (!ok) { status(`${el.getAttribute("aria-label")}: '${el.value}' is not a number`, true); return; }
    const i = Number(el.dataset.i), j = Number(el.dataset.j), name = el.dataset.m;
    live[name][i][j] = v;
    const t = TEXT[name][i] && TEXT[name][i][j];
    el.classList.toggle("changed", t === undefined || t !== v);
    recompute();
  }
  function reshape() {
    const n = Number($("tokens").value), k = Number($("dk").value), d = Number($("dv").value);
    live.Q = resize(live.Q, n, k);
    live.K = resize(live.K, n, k);
    live.V = resize(live.V, n, d);
    live.loss = [Math.min(live.loss[0], n - 1), Math.min(live.loss[1], d - 1)];
    editors();
    jvpOptions();
    recompute();
  }
  const reset = () => live.set({ ...TEXT, mask: true, scale: true, loss: [2, 1], fault: "none" });

  document.addEventListener("input", onEdit);
  for (const id of ["tokens", "dk", "dv"]) $(id).addEventListener("change", reshape);
  $("mask").addEventListener("change", () => { live.mask = $("mask").checked; recompute(); });
  $("scale").addEventListener("change", () => { live.scale = $("scale").checked; recompute(); });
  $("fault").addEventListener("change", () => { live.fault = $("fault").value; recompute(); });
  $("mode").addEventListener("change", () => { live.mode = $("mode").value; controls(); recompute(); });
  $("jvp").addEventListener("change", () => { readJvp(); recompute(); });
  $("reset").addEventListener("click", reset);
  // For a check of its own (docs/page.md): set inputs as a person would, read what the page shows.
  live.set = (inputs) => {
    for (const k of ["Q", "K", "V"]) if (inputs[k]) live[k] = copy(inputs[k]);
    for (const k of ["mask", "scale", "loss", "fault"]) if (inputs[k] !== undefined) live[k] = inputs[k];
    editors();
    controls();
    recompute();
    return live.error === null;
  };
  // {label: its whole gradient, row-major} for every gradient the page's steps show (Q, K, V, S, ...).
  live.gradients = () => {
    const out = {};
    if (!live.last || !live.last.ok) return out;
    for (const step of live.last.page[0].steps)
      for (const g of step.gin) out[g.label] = (g.total || g.values).map(num);
    return out;
  };
  live.recompute = recompute;
  live.reset = reset;
  editors();
  controls();
  handgradLive().then((m) => {
    live.module = m;
    recompute();
  }, (e) => status("The library (WebAssembly) did not load: " + e, true));
})();
