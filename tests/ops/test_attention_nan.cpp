// The NaN rule of ops/attention.h on every CPU path: the fused materialized kernels (what
// attention() runs for AttentionPath::materialized), the tiled path (128 queries × 256 keys a
// tile), the op-by-op formulas (attention_trace) and the create_graph backward (recorded ops).
//
// One query row is made a NaN row — by a NaN in its q, or by a NaN in the additive mask at a key it
// sees — under every kind of mask (causal, boolean, additive with −inf and lowest/2, a padding mask
// (B, 1, 1, Tk)), at T = 40 (one tile) and T = 300 (its hidden keys both inside the tile pairs the
// tiled path visits and in key tiles it never visits). Then on each path:
//   O and dQ are NaN on that row and finite on every other row;
//   dK and dV are NaN at the keys the row sees and finite at those hidden from it, and there equal
//   to what they are when the row's dO is zero, and to what they are when its q is finite and its
//   dO zero: the row gives the keys hidden from it exactly nothing;
//   attention_trace's P and dS on the row are NaN where it sees a key and exactly 0 where not;
// and all paths put their NaNs in the same places and agree on every finite entry.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "handgrad.h"
#include "test_util.h"

using namespace hg;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

enum class Path { fused, tiled, trace, composed };
constexpr Path kPaths[] = {Path::fused, Path::tiled, Path::trace, Path::composed};
const char* path_name(Path p) {
  switch (p) {
    case Path::fused: return "materialized (fused kernels)";
    case Path::tiled: return "tiled";
    case Path::trace: return "op by op (attention_trace)";
    case Path::composed: return "create_graph (recorded ops)";
  }
  return "?";
}

enum class MaskKind { causal, boolean, additive, padding };
const char* mask_name(MaskKind m) {
  switch (m) {
    case MaskKind::causal: return "causal";
    case MaskKind::boolean: return "boolean (Tq, Tk)";
    case MaskKind::additive: return "additive (B, H, Tq, Tk) with -inf and lowest/2";
    case MaskKind::padding: return "padding (B, 1, 1, Tk)";
  }
  return "?";
}

// The problem: q, k, v, dO (B, H, T, ·) and the options; the NaN row is (b 1, h 0, query `row`).
struct Problem {
  int64_t B = 2, H = 2, Tq = 0, Tk = 0, d = 8;
  int64_t row = 0;
  AttentionOptions opts;
  Tensor q, k, v, dO;
  std::vector<bool> hidden;  // (B, H, Tq, Tk): the mask rule, worked out here from the mask's values
  bool at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return hidden[static_cast<size_t>(((b * H + h) * Tq + i) * Tk + j)];
  }
};

Problem make_problem(MaskKind kind, int64_t T, DType dt, Generator& gen) {
  Problem p;
  p.Tq = p.Tk = T;
  p.row = T > 200 ? 150 : 25;  // T 300: keys 151.. hidden under the causal rule, 256.. in a tile never visited
  p.q = randn({p.B, p.H, p.Tq, p.d}, gen, dt);
  p.k = randn({p.B, p.H, p.Tk, p.d}, gen, dt);
  p.v = randn({p.B, p.H, p.Tk, p.d}, gen, dt);
  p.dO = randn({p.B, p.H, p.Tq, p.d}, gen, dt);
  const double low = std::numeric_limits<double>::lowest() / 2;
  if (kind == MaskKind::causal) p.opts.causal = true;
  if (kind == MaskKind::boolean) {
    const Tensor u = rand({p.Tq, p.Tk}, gen, DType::f64, 0.0, 1.0);
    std::vector<bool> m;
    for (double x : u.to_vector()) m.push_back(x < 0.7);
    p.opts.mask = bool_tensor(m, {p.Tq, p.Tk});
  }
  if (kind == MaskKind::additive) {
    Tensor a = randn({p.B, p.H, p.Tq, p.Tk}, gen, DType::f64);
    const std::vector<double> u = rand({a.numel()}, gen, DType::f64, 0.0, 1.0).to_vector();
    for (int64_t e = 0; e < a.numel(); ++e)
      if (u[static_cast<size_t>(e)] < 0.3) a.set_flat(e, e % 2 ? -kInf : low);
    p.opts.mask = a.to(dt);
  }
  if (kind == MaskKind::padding) {  // batch entry b sees its first Tk − 7 − 30 b keys
    std::vector<bool> m;
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t j = 0; j < p.Tk; ++j) m.push_back(j < p.Tk - 7 - 30 * b);
    p.opts.mask = bool_tensor(m, {p.B, 1, 1, p.Tk});
  }
  // The mask rule, from the mask's values read as (B, H, Tq, Tk).
  std::vector<double> full(static_cast<size_t>(p.B * p.H * p.Tq * p.Tk), 0.0);
  if (p.opts.mask.defined()) full = expand(p.opts.mask.to(DType::f64), {p.B, p.H, p.Tq, p.Tk}).contiguous().to_vector();
  const bool boolean = p.opts.mask.defined() && p.opts.mask.dtype() == DType::b8;
  p.hidden.resize(full.size());
  for (size_t e = 0; e < full.size(); ++e) {
    const int64_t j = static_cast<int64_t>(e) % p.Tk, i = static_cast<int64_t>(e) / p.Tk % p.Tq;
    p.hidden[e] = (p.opts.causal && j > i) || (boolean ? full[e] == 0.0 : full[e] <= low);
  }
  return p;
}

struct Run {
  Tensor O, dQ, dK, dV, P, dS;  // P, dS: attention_trace only
};

Run run(const Problem& p, Path path, const Tensor& q0, const Tensor& dO) {
  AttentionOptions o = p.opts;
  o.path = path == Path::tiled ? AttentionPath::tiled : AttentionPath::materialized;
  Run r;
  if (path == Path::trace) {
    const AttentionTrace t = attention_trace(q0, p.k, p.v, dO, o);
    r.O = t.O, r.dQ = t.dQ, r.dK = t.dK, r.dV = t.dV, r.P = t.P, r.dS = t.dS;
    return r;
  }
  Tensor q = q0.detach().clone().requires_grad_(), k = p.k.detach().clone().requires_grad_(),
         v = p.v.detach().clone().requires_grad_();
  r.O = attention(q, k, v, o);
  const std::vector<Tensor> g = grad({r.O}, {q, k, v}, {dO}, {.create_graph = path == Path::composed});
  r.dQ = g[0].detach(), r.dK = g[1].detach(), r.dV = g[2].detach();
  return r;
}

// Row (b, h, i) of x (B, H, T, d) as numbers.
std::vector<double> row_of(const Tensor& x, int64_t b, int64_t h, int64_t i) {
  return x.index({b, h, i}).to_vector();
}

bool all_nan(const std::vector<double>& x) {
  for (double v : x)
    if (!std::isnan(v)) return false;
  return !x.empty();
}
bool all_finite(const std::vector<double>& x) {
  for (double v : x)
    if (!std::isfinite(v)) return false;
  return true;
}

// NaN in the same places, and the finite entries within tol of each other (relative to max |b|).
void check_agree(const char* what, const Tensor& a, const Tensor& b, double tol) {
  CAPTURE(std::string(what));
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  REQUIRE(x.size() == y.size());
  double worst = 0, scale = 1;
  size_t nan_mismatch = 0;
  for (size_t e = 0; e < x.size(); ++e) {
    if (std::isnan(x[e]) != std::isnan(y[e])) ++nan_mismatch;
    if (std::isnan(x[e]) || std::isnan(y[e])) continue;
    worst = std::max(worst, std::abs(x[e] - y[e]));
    scale = std::max(scale, std::abs(y[e]));
  }
  CHECK(nan_mismatch == 0);
  CHECK(worst / scale <= tol);
}

// Everything the rule says about one path's run r for the NaN row (1, 0, p.row); r0: the same with
// that row's dO zero; rf: with its q finite again and its dO zero.
void check_rule(const Problem& p, const Run& r, const Run& r0, const Run& rf) {
  const int64_t nb = 1, nh = 0;
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h) {
      for (int64_t i = 0; i < p.Tq; ++i) {
        const bool nan_row = b == nb && h == nh && i == p.row;
        CAPTURE(b);
        CAPTURE(h);
        CAPTURE(i);
        CHECK(nan_row ? all_nan(row_of(r.O, b, h, i)) : all_finite(row_of(r.O, b, h, i)));
        CHECK(nan_row ? all_nan(row_of(r.dQ, b, h, i)) : all_finite(row_of(r.dQ, b, h, i)));
      }
      for (int64_t j = 0; j < p.Tk; ++j) {
        CAPTURE(b);
        CAPTURE(h);
        CAPTURE(j);
        const bool seen = b == nb && h == nh && !p.at(b, h, p.row, j);
        for (const Tensor* g : {&r.dK, &r.dV})
          CHECK(seen ? all_nan(row_of(*g, b, h, j)) : all_finite(row_of(*g, b, h, j)));
        if (seen) continue;
        // A key the NaN row does not see gets exactly nothing from it.
        CHECK(row_of(r.dK, b, h, j) == row_of(r0.dK, b, h, j));
        CHECK(row_of(r.dV, b, h, j) == row_of(r0.dV, b, h, j));
        CHECK(row_of(r.dK, b, h, j) == row_of(rf.dK, b, h, j));
        CHECK(row_of(r.dV, b, h, j) == row_of(rf.dV, b, h, j));
      }
    }
  if (r.P.defined()) {  // the trace's P and dS on the NaN row: NaN where it sees a key, 0 where not
    const std::vector<double> P = row_of(r.P, nb, nh, p.row), dS = row_of(r.dS, nb, nh, p.row);
    size_t wrong = 0;
    for (int64_t j = 0; j < p.Tk; ++j) {
      const size_t e = static_cast<size_t>(j);
      if (p.at(nb, nh, p.row, j)) wrong += P[e] != 0.0 || dS[e] != 0.0;
      else wrong += !std::isnan(P[e]) || !std::isnan(dS[e]);
    }
    CHECK(wrong == 0);
  }
}

struct Injection {
  const char* name;
  bool in_q;  // else: a NaN in the additive mask at a key the row sees (q stays finite)
};

void check_case(MaskKind kind, int64_t T, DType dt, const Injection& inj, Generator& gen) {
  CAPTURE(std::string(mask_name(kind)));
  CAPTURE(T);
  CAPTURE(std::string(dtype_name(dt)));
  CAPTURE(std::string(inj.name));
  Problem p = make_problem(kind, T, dt, gen);
  const Tensor q_finite = p.q;
  Tensor q_nan = p.q.clone();
  if (inj.in_q) {
    q_nan.set_at({1, 0, p.row, 3}, kNaN);
  } else {
    REQUIRE(kind == MaskKind::additive);
    int64_t j = 0;
    while (p.at(1, 0, p.row, j)) ++j;  // the first key the row sees
    Tensor m = p.opts.mask.clone();
    m.set_at({1, 0, p.row, j}, kNaN);
    p.opts.mask = m;
  }
  Tensor dO0 = p.dO.clone();  // the NaN row's dO zero
  for (int64_t c = 0; c < p.d; ++c) dO0.set_at({1, 0, p.row, c}, 0.0);
  const double tol = dt == DType::f64 ? 1e-12 : 2e-5;
  std::vector<Run> runs;
  for (Path path : kPaths) {
    CAPTURE(std::string(path_name(path)));
    runs.push_back(run(p, path, q_nan, p.dO));
    const Run r0 = run(p, path, q_nan, dO0);
    // With q finite the mask-injected NaN stays in; with the NaN in q the row is clean again.
    const Run rf = inj.in_q ? run(p, path, q_finite, dO0) : r0;
    check_rule(p, runs.back(), r0, rf);
    if (runs.size() > 1) {  // every path against the fused kernels: the same NaNs, the same finite numbers
      check_agree("O", runs.back().O, runs[0].O, tol);
      check_agree("dQ", runs.back().dQ, runs[0].dQ, tol);
      check_agree("dK", runs.back().dK, runs[0].dK, tol);
      check_agree("dV", runs.back().dV, runs[0].dV, tol);
    }
  }
}

}  // namespace

TEST_CASE("attention NaN rule (CPU): a NaN row is NaN on its own gradients and gives hidden keys exactly nothing") {
  Generator gen(2024);
  const Injection in_q{"NaN in q", true};
  for (DType dt : {DType::f64, DType::f32})
    for (int64_t T : {40, 300})
      for (MaskKind kind : {MaskKind::causal, MaskKind::boolean, MaskKind::additive, MaskKind::padding})
        check_case(kind, T, dt, in_q, gen);
}

TEST_CASE("attention NaN rule (CPU): a NaN in the additive mask, q finite") {
  Generator gen(2025);
  for (DType dt : {DType::f64, DType::f32})
    for (int64_t T : {40, 300}) check_case(MaskKind::additive, T, dt, {"NaN in the mask", false}, gen);
}

// The rule holds for rows without a NaN as it always did: a hidden key's P and dS are exactly 0, a
// row with no visible key has P = 0 — and with a NaN in its q (a padded query, say) it stays a row
// with no visible key: O = 0, dQ = 0, and nothing for any key.
TEST_CASE("attention NaN rule (CPU): a row with no visible key and a NaN in its q passes nothing") {
  Generator gen(2026);
  for (DType dt : {DType::f64, DType::f32})
    for (Path path : kPaths) {
      CAPTURE(std::string(path_name(path)));
      CAPTURE(std::string(dtype_name(dt)));
      Problem p = make_problem(MaskKind::causal, 40, dt, gen);
      std::vector<bool> m(static_cast<size_t>(40 * 40), true);
      for (int64_t j = 0; j < 40; ++j) m[static_cast<size_t>(7 * 40 + j)] = false;  // query 7 sees nothing
      p.opts = {.mask = bool_tensor(m, {40, 40})};
      Tensor q = p.q.clone();
      q.set_at({1, 0, 7, 0}, kNaN);
      const Run r = run(p, path, q, p.dO), clean = run(p, path, p.q, p.dO);
      CHECK(test::all_zero(r.O.index({1, 0, 7})));
      CHECK(test::all_zero(r.dQ.index({1, 0, 7})));
      CHECK(test::all_finite(r.dK));
      CHECK(test::all_finite(r.dV));
      CHECK(r.dK.to_vector() == clean.dK.to_vector());
      CHECK(r.dV.to_vector() == clean.dV.to_vector());
    }
}
