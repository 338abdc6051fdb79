"use strict";
// The induction page's link (viz/induction_live.js has the page's state): the view written into
// the URL's fragment (seed, periods, the learner's tokens, the zeroed heads, the position, the
// checked entry, the map mode) and read back when the page opens. page is viz/induction_live.js's.
window.hgInductionParts.link = (page) => {
  const { S, VOCAB, SEQ, normalise } = page;

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

  return { readHash, writeHash, hashed };
};
