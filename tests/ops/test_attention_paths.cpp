// attention's two paths held to each other (ops/attention.h): the tiled path (FlashAttention-2,
// ops/attention_tiled.cpp: 64 queries by 256 keys a tile) against the materialized one, forward
// and backward, on every kind of mask, across query and key tile boundaries, in float64 (to 1e-12) and float32; a row with no visible key; NaN;
// the same bits on every run and thread count; what each path saves; the automatic choice.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/strided.h"
#include "handgrad.h"
#include "test_util.h"

using namespace hg;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// max |a − b| / max(1, max |b|), NaN-aware: NaN in one and not the other is an infinite error.
double rel_err(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  double worst = 0, scale = 1;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) != std::isnan(y[i])) return kInf;
    if (std::isnan(x[i])) continue;
    worst = std::max(worst, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return worst / scale;
}

struct Run {
  Tensor O, dQ, dK, dV, dMask;
};

// O and the gradients of sum(O ∘ dO) on one path.
Run run(const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& dO, AttentionOptions o, AttentionPath path) {
  Tensor q = q0.detach().clone().requires_grad_(), k = k0.detach().clone().requires_grad_(),
         v = v0.detach().clone().requires_grad_();
  if (o.mask.defined() && o.mask.requires_grad()) o.mask = o.mask.detach().clone().requires_grad_();
  o.path = path;
  Run r;
  r.O = attention(q, k, v, o);
  r.O.backward(dO);
  r.dQ = q.grad(), r.dK = k.grad(), r.dV = v.grad();
  if (o.mask.defined() && o.mask.requires_grad()) r.dMask = o.mask.grad();
  return r;
}

struct Config {
  std::string name;
  Shape q, k, v;
  bool causal = false;
  int mask = 0;  // 0 none, 1 boolean (Tq, Tk), 2 additive (Tq, Tk) with −inf and lowest/2, 3 learnable (H, 1, Tk)
};

Tensor make_mask(const Config& c, Generator& gen, DType t) {
  const int64_t Tq = c.q[c.q.size() - 2], Tk = c.k[c.k.size() - 2];
  if (c.mask == 1) {
    std::vector<bool> m;
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t j = 0; j < Tk; ++j) m.push_back(i != 3 && (i * 7 + j * 3) % 5 != 0);  // row 3: no visible key
    return bool_tensor(m, {Tq, Tk});
  }
  if (c.mask == 2) {
    Tensor a = randn({Tq, Tk}, gen, DType::f64);
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t j = 0; j < Tk; ++j)
        if ((i + 2 * j) % 7 == 0) a.set_flat(i * Tk + j, (i + j) % 2 ? -kInf : std::numeric_limits<double>::lowest() / 2);
    return a.to(t);
  }
  if (c.mask == 3) return randn({c.q[1], 1, Tk}, gen, t).requires_grad_();
  return Tensor();
}

const std::vector<Config>& configs() {
  static const std::vector<Config> list = {
      {"no mask, T 70 (two tiles)", {2, 3, 70, 8}, {2, 3, 70, 8}, {2, 3, 70, 5}},
      {"causal, T 130 (two query tiles of 128)", {1, 2, 130, 8}, {1, 2, 130, 8}, {1, 2, 130, 4}, true},
      {"causal, T 300 (three key tiles)", {1, 1, 300, 4}, {1, 1, 300, 4}, {1, 1, 300, 3}, true},
      {"additive mask, Tk 520 (five key tiles)", {1, 70, 4}, {1, 520, 4}, {1, 520, 3}, false, 2},
      {"causal, Tq 70 < Tk 130", {2, 70, 4}, {2, 130, 4}, {2, 130, 3}, true},
      {"causal, Tq 130 > Tk 70", {2, 130, 4}, {2, 70, 4}, {2, 70, 3}, true},
      {"boolean mask with an empty row", {2, 2, 70, 4}, {2, 2, 70, 4}, {2, 2, 70, 4}, false, 1},
      {"causal + additive mask (−inf, lowest/2)", {2, 2, 70, 4}, {2, 2, 70, 4}, {2, 2, 70, 4}, true, 2},
      {"learnable bias (H, 1, Tk), causal", {2, 3, 66, 4}, {2, 3, 66, 4}, {2, 3, 66, 4}, true, 3},
      {"K, V shared by the heads (B, 1, T, d)", {2, 3, 70, 4}, {2, 1, 70, 4}, {2, 1, 70, 4}, true},
  };
  return list;
}

}  // namespace

TEST_CASE("attention paths: tiled equals materialized, forward and backward, every mask kind and dtype") {
  Generator gen(71);
  for (DType t : {DType::f64, DType::f32}) {
    const double tol = t == DType::f64 ? 1e-12 : 2e-5;
    for (const Config& c : configs()) {
      CAPTURE(c.name);
      CAPTURE(dtype_name(t));
      const Tensor q = randn(c.q, gen, t), k = randn(c.k, gen, t), v = randn(c.v, gen, t);
      const AttentionOptions o{.causal = c.causal, .mask = make_mask(c, gen, t)};
      const Tensor dO = randn(attention(q, k, v, o).shape(), gen, t);
      const Run a = run(q, k, v, dO, o, AttentionPath::materialized), b = run(q, k, v, dO, o, AttentionPath::tiled);
      CHECK(rel_err(b.O, a.O) <= tol);
      CHECK(rel_err(b.dQ, a.dQ) <= tol);
      CHECK(rel_err(b.dK, a.dK) <= tol);
      CHECK(rel_err(b.dV, a.dV) <= tol);
      if (c.mask == 3) CHECK(rel_err(b.dMask, a.dMask) <= tol);
      // A non-contiguous Q (a transposed copy read back through transpose) gives the same numbers.
      const Tensor qt = q.transpose(-2, -1).contiguous().transpose(-2, -1);
      CHECK_FALSE(qt.is_contiguous());
      CHECK(rel_err(run(qt, k, v, dO, o, AttentionPath::tiled).O, b.O) == 0.0);
    }
  }
}

TEST_CASE("attention paths: a row with no visible key gives O = 0 and zero gradients on the tiled path") {
  Generator gen(5);
  const Tensor q = randn({1, 70, 4}, gen, DType::f64), k = randn({1, 70, 4}, gen, DType::f64),
               v = randn({1, 70, 4}, gen, DType::f64), dO = randn({1, 70, 4}, gen, DType::f64);
  std::vector<bool> m(70 * 70, true);
  for (int64_t j = 0; j < 70; ++j) m[static_cast<size_t>(65 * 70 + j)] = false;  // row 65, in the second tile
  const Run r = run(q, k, v, dO, {.mask = bool_tensor(m, {70, 70})}, AttentionPath::tiled);
  const std::vector<double> O = r.O.to_vector(), dQ = r.dQ.to_vector();
  for (int64_t c = 0; c < 4; ++c) {
    CHECK(O[static_cast<size_t>(65 * 4 + c)] == 0.0);
    CHECK(dQ[static_cast<size_t>(65 * 4 + c)] == 0.0);
  }
  for (double x : r.dK.to_vector()) CHECK(std::isfinite(x));
}

TEST_CASE("attention paths: a NaN score gives NaN on its row, a hidden NaN is never read") {
  Tensor q = tensor(std::vector<double>(70 * 2, 0.5), {70, 2}, DType::f64);
  Tensor k = tensor(std::vector<double>(70 * 2, 0.25), {70, 2}, DType::f64);
  const Tensor v = tensor(std::vector<double>(70 * 2, 1.0), {70, 2}, DType::f64);
  q.set_flat(66 * 2, std::nan(""));  // query 66: every visible score of row 66 is NaN
  k.set_flat(69 * 2, std::nan(""));  // key 69: visible only to query 69 under the causal rule
  const Tensor O = attention(q, k, v, {.causal = true, .path = AttentionPath::tiled});
  const std::vector<double> o = O.to_vector();
  CHECK(std::isnan(o[66 * 2]));
  CHECK(std::isnan(o[69 * 2]));
  for (int64_t i : {0, 5, 64, 65, 67, 68}) CHECK(o[static_cast<size_t>(i * 2)] == doctest::Approx(1.0));
}

TEST_CASE("attention paths: the tiled path gives the same bits on every run and on one thread") {
  Generator gen(9);
  const Tensor q = randn({2, 4, 130, 8}, gen, DType::f32), k = randn({2, 4, 130, 8}, gen, DType::f32),
               v = randn({2, 4, 130, 8}, gen, DType::f32), dO = randn({2, 4, 130, 8}, gen, DType::f32);
  const AttentionOptions o{.causal = true};
  const Run a = run(q, k, v, dO, o, AttentionPath::tiled), b = run(q, k, v, dO, o, AttentionPath::tiled);
  Run serial;  // inside a parallel_for, the kernels' own parallel_for runs on one thread
  parallel_for(2, int64_t{1} << 40, [&](int64_t begin, int64_t) {
    if (begin == 0) serial = run(q, k, v, dO, o, AttentionPath::tiled);
  });
  for (const Run* r : {static_cast<const Run*>(&b), static_cast<const Run*>(&serial)}) {
    CHECK(r->O.to_vector() == a.O.to_vector());
    CHECK(r->dQ.to_vector() == a.dQ.to_vector());
    CHECK(r->dK.to_vector() == a.dK.to_vector());
    CHECK(r->dV.to_vector() == a.dV.to_vector());
  }
}

TEST_CASE("attention paths: what each saves, and the automatic choice") {
  Generator gen(3);
  auto saved_names = [&](int64_t T, AttentionPath path) {
    Tensor q = randn({1, 2, T, 4}, gen, DType::f32).requires_grad_();
    const Tensor o = attention(q, q, q, {.causal = true, .path = path});
    std::vector<std::string> names;
    for (const SavedTensor& s : o.grad_fn()->saved) names.push_back(s.what);
    return names;
  };
  const std::vector<std::string> materialized{"query Q", "key K", "value V", "attention weights P"};
  const std::vector<std::string> tiled{"query Q", "key K", "value V", "output O", "row log-sum-exp L"};
  CHECK(saved_names(16, AttentionPath::materialized) == materialized);
  CHECK(saved_names(16, AttentionPath::tiled) == tiled);
  CHECK(saved_names(16, AttentionPath::automatic) == materialized);  // short: the materialized path
  CHECK(saved_names(1024, AttentionPath::automatic) == tiled);       // long: the tiled path
  CHECK(std::string(attention_path_name(AttentionPath::tiled)) == "tiled");
  CHECK(attention_path_named("materialized") == AttentionPath::materialized);
  CHECK_THROWS_WITH_AS(attention_path_named("flash"), doctest::Contains("no path named 'flash'"), Error);
}

// merged_output changes O's layout, never a value: the same O and gradients bit for bit, and with
// q (B, H, T, d_h) the merge o.transpose(1, 2) is contiguous (a free reshape to (B, T, H·d_h)).
TEST_CASE("attention's merged_output hint: the same numbers, and the heads' merge without a copy") {
  Generator gen(11);
  for (DType dt : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dt));
    const Tensor q0 = randn({2, 3, 9, 4}, gen, dt), k0 = randn({2, 3, 9, 4}, gen, dt), v0 = randn({2, 3, 9, 5}, gen, dt);
    const Tensor w = randn({2, 9, 15}, gen, dt);
    auto run = [&](bool merged) {
      Tensor q = q0.clone().requires_grad_(), k = k0.clone().requires_grad_(), v = v0.clone().requires_grad_();
      Tensor o = attention(q, k, v, {.causal = true, .merged_output = merged});
      Tensor m = o.transpose(1, 2).reshape({2, 9, 15});
      if (merged) {
        CHECK(o.transpose(1, 2).is_contiguous());
        CHECK(m.raw_data() == o.raw_data());  // a view of O's storage
      }
      backward(sum(mul(m, w)));
      return std::vector<Tensor>{o.contiguous(), q.grad(), k.grad(), v.grad()};
    };
    const std::vector<Tensor> a = run(true), b = run(false);
    for (size_t i = 0; i < a.size(); ++i) {
      CAPTURE(i);
      CHECK(test::max_abs_diff(a[i], b[i]) == 0.0);
    }
  }
  // one batch dimension: nothing to merge, O stays contiguous
  Tensor o = attention(randn({3, 6, 4}, gen), randn({3, 6, 4}, gen), randn({3, 6, 4}, gen), {.merged_output = true});
  CHECK(o.is_contiguous());
}

// The fused CPU kernels do a causal slice in row blocks (of 32 queries),
// each over only the keys its queries see; the op-by-op trace computes every score. Shapes with
// several blocks, a short last block, Tq != Tk either way, and an additive mask beside the rule.
TEST_CASE("attention: causal row blocks of the fused kernels equal the op-by-op trace") {
  Generator gen(21);
  struct Shape4 {
    int64_t Tq, Tk;
  };
  for (DType dt : {DType::f64, DType::f32})
    for (Shape4 s : {Shape4{100, 100}, Shape4{200, 200}, Shape4{70, 150}, Shape4{150, 70}, Shape4{33, 33}})
      for (bool with_mask : {false, true}) {
        CAPTURE(dtype_name(dt));
        CAPTURE(s.Tq);
        CAPTURE(s.Tk);
        CAPTURE(with_mask);
        Tensor q = randn({2, 2, s.Tq, 8}, gen, dt).requires_grad_(), k = randn({2, 2, s.Tk, 8}, gen, dt).requires_grad_(),
               v = randn({2, 2, s.Tk, 6}, gen, dt).requires_grad_();
        AttentionOptions o{.causal = true, .path = AttentionPath::materialized};
        if (with_mask) o.mask = mul(randn({s.Tq, s.Tk}, gen, dt), 0.5);
        const Tensor dO = randn({2, 2, s.Tq, 6}, gen, dt);
        AttentionTrace t = attention_trace(q, k, v, dO, o);
        Tensor out = attention(q, k, v, o);
        out.backward(dO);
        const double tol = dt == DType::f64 ? 1e-12 : 2e-5;
        CHECK(test::max_abs_diff(out, t.O) < tol);
        CHECK(test::max_abs_diff(q.grad(), t.dQ) < tol);
        CHECK(test::max_abs_diff(k.grad(), t.dK) < tol);
        CHECK(test::max_abs_diff(v.grad(), t.dV) < tol);
      }
}

// Attention's weights are softmax's, bit for bit, on every path that keeps P: the fused CPU
// kernels (what attention() saves) and the op-by-op trace call the one softmax row of
// cpu/row_rules.h; the create_graph backward calls softmax() itself. The reference is softmax()
// of scores written down here exactly: small integers in Q and K and a power-of-two scale make
// every score exact in either dtype, whatever order a gemm sums in. Rows of 21 keys (two 8-lane
// blocks and a tail), every causal row length 1..21, a padding mask hiding trailing and inner keys.
TEST_CASE("attention's P is softmax's bit for bit: fused kernels and trace, causal or not, masked, strided inputs") {
  const int64_t B = 2, H = 3, T = 21, dk = 4;
  std::vector<double> qv(static_cast<size_t>(B * H * T * dk)), kv(qv.size()), vv(qv.size());
  uint32_t state = 12345;
  const auto next_int = [&] {  // −3 .. 3
    state = state * 1664525u + 1013904223u;
    return static_cast<double>(static_cast<int>((state >> 16) % 7) - 3);
  };
  for (size_t i = 0; i < qv.size(); ++i) qv[i] = next_int(), kv[i] = next_int(), vv[i] = next_int() / 4;
  std::vector<bool> keep(static_cast<size_t>(B * T), true);  // (B, 1, 1, T): batch 1 hides keys 5 and 17..20
  for (int64_t j : {5, 17, 18, 19, 20}) keep[static_cast<size_t>(T + j)] = false;
  const Tensor padding = bool_tensor(keep, {B, 1, 1, T});
  for (DType dt : {DType::f64, DType::f32})
    for (bool causal : {false, true})
      for (bool masked : {false, true})
        for (bool strided : {false, true}) {
          CAPTURE(dtype_name(dt));
          CAPTURE(causal);
          CAPTURE(masked);
          CAPTURE(strided);
          // strided: the same values read through a (B, T, H, dk) tensor's transpose, as a model's heads are
          const auto heads = [&](const std::vector<double>& x) {
            if (!strided) return tensor(x, {B, H, T, dk}, dt);
            return tensor(x, {B, H, T, dk}, dt).transpose(1, 2).contiguous().transpose(1, 2);
          };
          Tensor q = heads(qv).requires_grad_(), k = heads(kv), v = heads(vv);
          CHECK(q.is_contiguous() == !strided);
          AttentionOptions o{.scale = 0.25, .causal = causal, .path = AttentionPath::materialized};
          if (masked) o.mask = padding;
          // the scores, exactly: S_ij = q_i · k_j / 4, −inf where a key is hidden
          std::vector<double> S(static_cast<size_t>(B * H * T * T));
          for (int64_t b = 0; b < B; ++b)
            for (int64_t h = 0; h < H; ++h)
              for (int64_t i = 0; i < T; ++i)
                for (int64_t j = 0; j < T; ++j) {
                  const size_t base = static_cast<size_t>(((b * H + h) * T) * dk);
                  double dot = 0;
                  for (int64_t c = 0; c < dk; ++c) dot += qv[base + i * dk + c] * kv[base + j * dk + c];
                  const bool hidden = (causal && j > i) || (masked && !keep[static_cast<size_t>(b * T + j)]);
                  S[static_cast<size_t>(((b * H + h) * T + i) * T + j)] = hidden ? -kInf : dot / 4;
                }
          const std::vector<double> want = softmax(tensor(S, {B, H, T, T}, dt), -1).to_vector();
          const Tensor out = attention(q, k, v, o);
          const SavedTensor& P = out.grad_fn()->saved.at(3);
          REQUIRE(P.what == "attention weights P");
          CHECK(P.data.to_vector() == want);  // the fused kernels'
          Generator gen(1);
          const AttentionTrace t = attention_trace(q, k, v, randn({B, H, T, dk}, gen, dt), o);
          CHECK(t.S.to_vector() == std::vector<double>(S.begin(), S.end()));
          CHECK(t.P.to_vector() == want);  // the op-by-op trace's
        }
}
