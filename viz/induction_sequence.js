"use strict";
// The induction page's sequence (viz/induction_live.js has the page's state): the strip of tokens
// with its copies marked, and the fields that set it (a seed and the periods, or the learner's own
// tokens and period) and the position, each read and checked before anything is asked. page is
// viz/induction_live.js's: the state S, the helpers over the sequence, the requests.
window.hgInductionParts.sequence = (page) => {
  const { $ } = window.hgInductionParts.draw;
  const { S, VOCAB, SEQ, nT, later, tokClass, ask, settle, schedule, setPosition } = page;

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

  // ------------------------------------------------------------ the fields
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
  // The position field: a whole number from 0 to the last target.
  function readPosition() {
    const v = $("ind-pos").value, n = nT();
    const ok = WHOLE.test(v) && Number(v) <= n - 1;
    $("ind-pos").classList.toggle("invalid", !ok);
    if (!ok) { $("ind-pos-msg").textContent = `a position from 0 to ${n - 1}`; return; }
    $("ind-pos-msg").textContent = "";
    setPosition(Number(v));
  }

  return { drawStrip, fillSequenceFields, newSequence, readSeedFields, readTokens, readPosition };
};
