// attention() on Device::cuda at the sizes the kernels are laid out for, against the CPU op in
// float64 on the values the GPU was given (gpu_compare.h), printed as ‖gpu − cpu‖ / ‖cpu‖:
//   - heads of d = 128 (the tiled kernels' shared-memory rows, kAttentionMaxHead), Tk 280 keys,
//     float32 and float64, every kind of mask — causal, boolean, additive with −inf and lowest/2,
//     a padding mask (B, 1, 1, Tk), and an additive bias (H, 1, Tk) that requires grad — on the
//     tiled path (cuda/attention_tiled_*.cu) at Tq 300, the materialized path (cuBLAS, the row
//     kernels and cuda/attention.cu) and the create_graph backward (recorded ops) at Tq 12;
//   - the NaN rule of ops/attention.h on each of them: one query row holds a NaN in its q, and the
//     GPU puts its NaNs where the CPU does (its O and dQ row, dK and dV of the keys it sees) and
//     gives the keys hidden from it finite gradients;
//   - the bias's gradient on the tiled path summed in the kernel, never through a full
//     (batch..., Tq, Tk) dS (the allocator's footprint stays below what that buffer would take);
//   - one problem large enough that every grid-stride loop of the attention kernels runs more than
//     once (on a GPU; under the CPU emulation the same checks on a small batch).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "cuda/allocator.h"
#include "gpu_compare.h"
#include "handgrad.h"

using namespace hg;
using namespace hg::gpu_test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

enum class Kind { causal, boolean, additive, padding, learnable };
const char* kind_name(Kind k) {
  switch (k) {
    case Kind::causal: return "causal";
    case Kind::boolean: return "boolean (Tq, Tk)";
    case Kind::additive: return "additive (B, H, Tq, Tk), -inf and lowest/2";
    case Kind::padding: return "padding (B, 1, 1, Tk), causal";
    case Kind::learnable: return "learnable bias (H, 1, Tk), causal";
  }
  return "?";
}

enum class Path { materialized, tiled, create_graph };
const char* path_name(Path p) {
  switch (p) {
    case Path::materialized: return "materialized";
    case Path::tiled: return "tiled";
    case Path::create_graph: return "create_graph";
  }
  return "?";
}

// q, k, v, dO (B, 1, Tq | Tk, 128) and the mask on the CPU in dtype t; the NaN row is query nan_row
// of the last slice (B − 1, 0). Tk = 280.
struct Problem {
  Tensor q, k, v, dO, mask;
  bool causal = false;
  int64_t nan_b = 0, nan_row = 0;
};

Problem make_problem(Kind kind, DType t, int64_t B, int64_t Tq, Generator& gen) {
  constexpr int64_t H = 1, Tk = 280, d = 128;
  const double low = std::numeric_limits<double>::lowest() / 2;
  Problem p;
  p.nan_b = B - 1;
  p.nan_row = Tq > 200 ? 150 : Tq / 2;  // 150: its causally hidden keys 151.. in tiles it visits and beyond
  p.q = normal({B, H, Tq, d}, gen, t);
  p.k = normal({B, H, Tk, d}, gen, t);
  p.v = normal({B, H, Tk, d}, gen, t);
  p.dO = normal({B, H, Tq, d}, gen, t);
  p.q.set_at({p.nan_b, 0, p.nan_row, 17}, kNaN);
  p.causal = kind == Kind::causal || kind == Kind::padding || kind == Kind::learnable;
  if (kind == Kind::boolean) {
    std::vector<bool> m;
    for (double u : uniform({Tq, Tk}, gen, DType::f64, 0.0, 1.0).to_vector()) m.push_back(u < 0.7);
    p.mask = bool_tensor(m, {Tq, Tk});
  } else if (kind == Kind::additive) {
    Tensor a = normal({B, H, Tq, Tk}, gen, DType::f64);
    const std::vector<double> u = uniform({a.numel()}, gen, DType::f64, 0.0, 1.0).to_vector();
    for (int64_t e = 0; e < a.numel(); ++e)
      if (u[static_cast<size_t>(e)] < 0.25) a.set_flat(e, e % 2 ? -kInf : low);
    p.mask = a.to(t);
  } else if (kind == Kind::padding) {  // batch entry b sees its first Tk − 20 − 40 (B − 1 − b) keys
    std::vector<bool> m;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < Tk; ++j) m.push_back(j < Tk - 20 - 40 * (B - 1 - b));
    p.mask = bool_tensor(m, {B, 1, 1, Tk});
  } else if (kind == Kind::learnable) {
    Tensor a = normal({H, 1, Tk}, gen, DType::f64);
    for (int64_t j = 5; j < Tk; j += 9) a.set_at({0, 0, j}, -kInf);
    p.mask = a.to(t);
  }
  return p;
}

struct Result {
  Tensor O, dQ, dK, dV, dMask;
};

// O and the gradients of ⟨O, dO⟩ on `device` in dtype t (CPU tensors in, values as given).
Result run(const Problem& p, Device device, DType t, Path path) {
  const auto leaf = [&](const Tensor& x) { return x.detach().to(t).to(device).requires_grad_(); };
  Tensor q = leaf(p.q), k = leaf(p.k), v = leaf(p.v);
  const bool live = p.mask.defined() && p.mask.dtype() != DType::b8 && p.mask.dim() == 3;  // the (H, 1, Tk) bias
  Tensor mask;
  if (p.mask.defined()) mask = p.mask.dtype() == DType::b8 ? p.mask.to(device) : p.mask.detach().to(t).to(device);
  if (live) mask.requires_grad_();
  const AttentionOptions o{.causal = p.causal,
                           .mask = mask,
                           .path = path == Path::tiled ? AttentionPath::tiled : AttentionPath::materialized};
  Result r;
  r.O = attention(q, k, v, o);
  std::vector<Tensor> inputs{q, k, v};
  if (live) inputs.push_back(mask);
  const std::vector<Tensor> g =
      grad({r.O}, inputs, {p.dO.detach().to(t).to(device)}, {.create_graph = path == Path::create_graph});
  r.dQ = g[0].detach(), r.dK = g[1].detach(), r.dV = g[2].detach();
  if (live) r.dMask = g[3].detach();
  return r;
}

// The GPU's x against the CPU's: NaN at the same entries, then ‖gpu − cpu‖ / ‖cpu‖ over the rest.
void expect_close_nan(const std::string& what, const Tensor& gpu_x, const Tensor& cpu_x, DType t) {
  REQUIRE(gpu_x.defined());
  CHECK(gpu_x.device() == Device::cuda);
  REQUIRE(gpu_x.shape() == cpu_x.shape());
  std::vector<double> a = gpu_x.to_vector(), b = cpu_x.to_vector();
  size_t nan_here = 0, nan_mismatch = 0;
  for (size_t e = 0; e < a.size(); ++e) {
    if (std::isnan(a[e]) != std::isnan(b[e])) ++nan_mismatch;
    if (std::isnan(a[e]) || std::isnan(b[e])) {
      nan_here += std::isnan(b[e]);
      a[e] = b[e] = 0.0;
    }
  }
  const double rel = rel_error(a, b);
  MESSAGE(what, " ", std::string(dtype_name(t)), " ", shape_str(gpu_x.shape()), ": ||gpu - cpu|| / ||cpu|| = ", rel,
          ", NaN entries ", nan_here, " (", nan_mismatch, " where only one side has one)");
  CHECK(nan_mismatch == 0);
  CHECK(rel < tolerance(t));
}

// Whether every entry of row (b, h, i) of x is NaN / finite.
bool row_all(const Tensor& x, int64_t b, int64_t h, int64_t i, bool nan) {
  for (double v : x.index({b, h, i}).to_vector())
    if (nan ? !std::isnan(v) : !std::isfinite(v)) return false;
  return true;
}

// The paths on one problem against the CPU, and the NaN rule on each.
void check_paths(Kind kind, DType t, const Problem& p, std::initializer_list<Path> paths) {
  CAPTURE(std::string(kind_name(kind)));
  CAPTURE(std::string(dtype_name(t)));
  const Result cpu = run(p, Device::cpu, DType::f64, Path::materialized);  // on the values the GPU gets
  // The keys the NaN row sees, as the CPU's gradients show them (tests/ops/test_attention_nan.cpp holds
  // the CPU to the rule).
  const int64_t Tk = p.k.size(2);
  std::vector<bool> seen(static_cast<size_t>(Tk));
  for (int64_t j = 0; j < Tk; ++j) seen[static_cast<size_t>(j)] = row_all(cpu.dV, p.nan_b, 0, j, true);
  for (Path path : paths) {
    CAPTURE(std::string(path_name(path)));
    // The bias's gradient on the tiled path from a poisoned cache: an entry the kernel leaves
    // unwritten would be NaN.
    const bool poison = path == Path::tiled && kind == Kind::learnable;
    const Result gpu = poison ? poisoned([&] { return run(p, Device::cuda, t, path); }) : run(p, Device::cuda, t, path);
    const std::string at = std::string(path_name(path)) + " " + kind_name(kind) + ": ";
    expect_close_nan(at + "O", gpu.O, cpu.O, t);
    expect_close_nan(at + "dQ", gpu.dQ, cpu.dQ, t);
    expect_close_nan(at + "dK", gpu.dK, cpu.dK, t);
    expect_close_nan(at + "dV", gpu.dV, cpu.dV, t);
    if (cpu.dMask.defined()) expect_close_nan(at + "dMask", gpu.dMask, cpu.dMask, t);
    // The rule itself: NaN on the row's own outputs and the keys it sees, none for those hidden from it.
    CHECK(row_all(gpu.O, p.nan_b, 0, p.nan_row, true));
    CHECK(row_all(gpu.dQ, p.nan_b, 0, p.nan_row, true));
    int64_t hidden = 0, wrong = 0;
    for (int64_t j = 0; j < Tk; ++j) {
      const bool s = seen[static_cast<size_t>(j)];
      hidden += !s;
      wrong += !row_all(gpu.dK, p.nan_b, 0, j, s) || !row_all(gpu.dV, p.nan_b, 0, j, s);
    }
    CHECK(hidden > 0);
    CHECK(hidden < Tk);
    CHECK(wrong == 0);
  }
}

// The tiled path at Tq 300 queries (10 forward and 19 backward query tiles in float32).
void check_tiled(Kind kind) {
  Generator gen(9100 + static_cast<uint64_t>(kind));
  for (DType t : kFloatTypes)
    check_paths(kind, t, make_problem(kind, t, kind == Kind::padding ? 2 : 1, 300, gen), {Path::tiled});
}

// The materialized path and the create_graph backward at Tq 6 queries: the emulation runs their
// row kernels one block of 512 threads per score row, about 0.2 s a row, so few rows here (the
// query tiles are the tiled kernels', covered above). create_graph in float64.
void check_materialized(Kind kind) {
  Generator gen(9150 + static_cast<uint64_t>(kind));
  for (DType t : kFloatTypes) {
    const std::initializer_list<Path> f64 = {Path::materialized, Path::create_graph}, f32 = {Path::materialized};
    check_paths(kind, t, make_problem(kind, t, kind == Kind::padding ? 2 : 1, 6, gen), t == DType::f64 ? f64 : f32);
  }
}

}  // namespace

TEST_CASE("attention on cuda, tiled, d 128, Tq 300, Tk 280, NaN rule: causal") { check_tiled(Kind::causal); }
TEST_CASE("attention on cuda, tiled, d 128, Tq 300, Tk 280, NaN rule: boolean mask") { check_tiled(Kind::boolean); }
TEST_CASE("attention on cuda, tiled, d 128, Tq 300, Tk 280, NaN rule: additive mask") { check_tiled(Kind::additive); }
TEST_CASE("attention on cuda, tiled, d 128, Tq 300, Tk 280, NaN rule: padding mask") { check_tiled(Kind::padding); }
TEST_CASE("attention on cuda, tiled, d 128, Tq 300, Tk 280, NaN rule: learnable bias") { check_tiled(Kind::learnable); }
TEST_CASE("attention on cuda, materialized, d 128, Tq 6, Tk 280, NaN rule: causal") { check_materialized(Kind::causal); }
TEST_CASE("attention on cuda, materialized, d 128, Tq 6, Tk 280, NaN rule: boolean mask") {
  check_materialized(Kind::boolean);
}
TEST_CASE("attention on cuda, materialized, d 128, Tq 6, Tk 280, NaN rule: additive mask") {
  check_materialized(Kind::additive);
}
TEST_CASE("attention on cuda, materialized, d 128, Tq 6, Tk 280, NaN rule: padding mask") {
  check_materialized(Kind::padding);
}
TEST_CASE("attention on cuda, materialized, d 128, Tq 6, Tk 280, NaN rule: learnable bias") {
  check_materialized(Kind::learnable);
}

// The learnable bias's gradient on the tiled path is summed to the bias's shape in the kernel: the
// device memory the forward and backward take (the allocator's blocks in use or cached after it,
// from an empty cache) stays far below one (B, H, Tq, Tk) dS, let alone the path's other buffers.
TEST_CASE("attention on cuda, tiled: a learnable bias's gradient without a full dS") {
  Generator gen(9200);
  for (DType t : kFloatTypes) {
    CAPTURE(std::string(dtype_name(t)));
    constexpr int64_t B = 1, H = 2, T = 200, d = 4;
    const Tensor q = gpu(normal({B, H, T, d}, gen, t)).requires_grad_(), k = gpu(normal({B, H, T, d}, gen, t));
    const Tensor v = gpu(normal({B, H, T, d}, gen, t)), dO = gpu(normal({B, H, T, d}, gen, t));
    const Tensor bias = gpu(normal({H, 1, T}, gen, t)).requires_grad_();
    cu().synchronize();
    cuda::allocator_release_cached();
    const size_t before = cuda::allocator_stats().bytes_in_use;
    {
      const Tensor O = attention(q, k, v, {.causal = true, .mask = bias, .path = AttentionPath::tiled});
      const std::vector<Tensor> g = grad({O}, {q, bias}, {dO});
      CHECK(g[1].shape() == bias.shape());
      cu().synchronize();
    }
    const cuda::AllocatorStats s = cuda::allocator_stats();
    const size_t footprint = s.bytes_in_use + s.bytes_cached - before;
    const size_t full_ds = static_cast<size_t>(B * H * T * T) * dtype_size(t);
    MESSAGE(std::string(dtype_name(t)), ": device memory taken by forward and backward ", footprint, " bytes; a full dS takes ",
            full_ds);
    CHECK(footprint < full_ds / 4);
  }
}

// ---------------------------------------------------------------- every grid-stride loop twice
//
// The grids are capped at kMaxGrid = 2^20 blocks (cuda/device_common.cuh: grid_for, rows_grid),
// of kThreads = 256 threads for the one-thread-per-element (or per-row) kernels. With N = 2^20 + 1
// slices of Tq 256 queries, Tk 2 keys, heads of 1, in float32:
//   tiled      forward_kernel     N · ⌈256 / 32⌉ blocks of work > 2^20
//              rowsum_kernel      N · 256 rows > 2^28 threads (in the backward and the bias's gradient)
//              key_grads_kernel   N · ⌈2 / 16⌉ = N > 2^20;  query_grads_kernel  N · ⌈256 / 16⌉ > 2^20
//              mask_grad_kernel   N bias entries (N, 1, Tk), one key tile each, > 2^20
//   materialized scale_mask_kernel  N · 256 · 2 scores > 2^28;  zero_hidden_kernel  N · 256 rows > 2^28
//              finite_part_kernel  N · 256 entries of Q > 2^28
// so that each runs its loop at least twice. The slices repeat 17 problems (2^20 + 1 = 17 · 61681),
// and slice b is checked against the CPU's answer for problem b mod 17 at the slices the first and
// the last blocks' second passes reach; the last slice holds a NaN row (problem 16) with a hidden key.
// Under the CPU emulation (whose blocks run one at a time) the same test runs on 17 slices of 32.
bool emulated() { return std::string(cu().device_summary()).find("emulation") != std::string::npos; }

TEST_CASE("attention on cuda: a batch that runs every grid-stride loop of the attention kernels twice") {
  const int64_t N = emulated() ? 17 : (int64_t{1} << 20) + 1, reps = N / 17, Tq = emulated() ? 32 : 256, Tk = 2;
  MESSAGE("batch N = ", N, " slices (Tq ", Tq, ", Tk ", Tk, ", d 1)");
  Generator gen(9300);
  const DType t = DType::f32;
  // The 17 problems (17, ·, ·): problem 16's query 3 Tq / 4 has a NaN in q and key 1 hidden by the bias.
  // q and dO positive: with two keys dS_i0 = −dS_i1 = P_i0 P_i1 dO_i (v_0 − v_1), so each dK_j sums
  // terms of one sign (no cancellation for float32 to lose digits in).
  Tensor q17 = uniform({17, Tq, 1}, gen, t, 0.5, 1.5), k17 = normal({17, Tk, 1}, gen, t);
  Tensor v17 = normal({17, Tk, 1}, gen, t), dO17 = uniform({17, Tq, 1}, gen, t, 0.5, 1.5);
  Tensor bias17 = normal({17, 1, Tk}, gen, t);
  q17.set_at({16, Tq * 3 / 4, 0}, kNaN);
  bias17.set_at({16, 0, 1}, -kInf);
  bias17.set_at({5, 0, 0}, -kInf);
  const auto tile = [&](const Tensor& x) {  // (17, a, b) -> (N, a, b) on the GPU: slice b holds problem b mod 17
    const Tensor g = gpu(x);
    return expand(g.unsqueeze(0), {reps, 17, x.size(1), x.size(2)}).contiguous().reshape({N, x.size(1), x.size(2)});
  };
  const Tensor q = tile(q17), k = tile(k17), v = tile(v17), dO = tile(dO17), bias = tile(bias17);
  std::vector<int64_t> check_slices;  // the first, the middle, those the last blocks' second passes reach
  for (int64_t b : {int64_t{0}, int64_t{1}, int64_t{16}, int64_t{17}, (int64_t{1} << 17) + 3, N / 2, N - 18, N - 2, N - 1})
    if (b >= 0 && b < N && std::find(check_slices.begin(), check_slices.end(), b) == check_slices.end())
      check_slices.push_back(b);
  for (AttentionPath path : {AttentionPath::tiled, AttentionPath::materialized}) {
    CAPTURE(std::string(attention_path_name(path)));
    const auto on = [&](const Tensor& qq, const Tensor& kk, const Tensor& vv, const Tensor& bb, const Tensor& dd) {
      Tensor ql = qq.detach().requires_grad_(), kl = kk.detach().requires_grad_(), vl = vv.detach().requires_grad_(),
             bl = bb.detach().requires_grad_();
      Result r;
      r.O = attention(ql, kl, vl, {.mask = bl, .path = path});
      const std::vector<Tensor> g = grad({r.O}, {ql, kl, vl, bl}, {dd});
      r.dQ = g[0], r.dK = g[1], r.dV = g[2], r.dMask = g[3];
      return r;
    };
    const Result cpu = on(ref(q17), ref(k17), ref(v17), ref(bias17), ref(dO17));
    const Result got = on(q, k, v, bias, dO);
    for (int64_t b : check_slices) {
      CAPTURE(b);
      const int64_t pb = b % 17;
      const std::string at = std::string(attention_path_name(path)) + " slice " + std::to_string(b) + ": ";
      expect_close_nan(at + "O", got.O.index({b}), cpu.O.index({pb}), t);
      expect_close_nan(at + "dQ", got.dQ.index({b}), cpu.dQ.index({pb}), t);
      expect_close_nan(at + "dK", got.dK.index({b}), cpu.dK.index({pb}), t);
      expect_close_nan(at + "dV", got.dV.index({b}), cpu.dV.index({pb}), t);
      expect_close_nan(at + "dMask", got.dMask.index({b}), cpu.dMask.index({pb}), t);
    }
    // The last slice's NaN row: key 0, which it sees, gets NaN; key 1, hidden by the bias, does not.
    const std::vector<double> dK_last = got.dK.index({N - 1}).to_vector();
    CHECK(std::isnan(dK_last[0]));
    CHECK(std::isfinite(dK_last[1]));
  }
}
