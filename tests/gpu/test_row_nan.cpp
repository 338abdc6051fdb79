// Rows holding NaN among −inf and finite scores, through every row kernel — sum and max along
// rows, softmax and log_softmax with their backwards, the row rule with its D, the Jacobian and
// its backward, cross-entropy — by the public ops on Device::cuda tensors, against the CPU ops:
// NaN, +inf and −inf at the same positions, the finite entries within the usual tolerance.
//
// The NaN rule is the CPU's (ops/softmax.cpp): NaN in, NaN out. The row max skips NaN, so a NaN
// beside a finite score makes the whole row NaN through Σ exp(s − m), and a row of NaN and −inf
// only (no finite score) is found to hold a NaN and made NaN, never taken for a masked row.
//
// These are the rows on which the threads of a block could disagree: with an order-dependent max
// a butterfly of shuffles leaves some threads holding NaN and others −inf, and a branch on that
// value (softmax's "every key masked") then sends part of the block past a barrier the rest waits
// at. The rows therefore put the NaN at lanes 0, 1, 16 and 31 of the first warps and the last,
// in 1-, 2-, 4- and 16-warp blocks. Under tests/gpu/emulation/run the emulator also stops the run if the threads of
// a block ever part at a barrier.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gpu_compare.h"
#include "handgrad.h"

using namespace hg;
using namespace hg::gpu_test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A batch of score rows (rows, n), float64 on the CPU, and what each row is.
struct Batch {
  Tensor x;
  std::vector<std::string> kinds;
  int64_t rows() const { return static_cast<int64_t>(kinds.size()); }
};

// The positions that hold a NaN in the "NaN among −inf" rows: lanes 0, 1, 16, 31 of the first
// `warps` warps and of the last, then 511, 512 and n − 1.
std::vector<int64_t> nan_positions(int64_t n, int64_t warps) {
  std::vector<int64_t> ps;
  const auto add = [&](int64_t p) {
    if (p >= 0 && p < n && (ps.empty() || ps.back() < p)) ps.push_back(p);
  };
  const int64_t last = (n - 1) / 32;
  for (int64_t w = 0; w <= last; ++w) {
    if (w >= warps && w != last) continue;
    for (int64_t lane : {0, 1, 16, 31}) add(32 * w + lane);
  }
  for (int64_t p : {int64_t{511}, int64_t{512}, n - 1}) add(p);  // the last thread of a 512-thread block, its next
  return ps;
}

// The rows, causal-style among them: row i of a causal score matrix sees keys j ≤ i.
Batch nan_rows(int64_t n, int64_t warps, Generator& gen) {
  Batch b;
  std::vector<double> v;
  const std::vector<double> noise = normal({32, n}, gen, DType::f64, 3.0).to_vector();  // 22 rows at most
  size_t next = 0;
  const auto finite = [&] {
    std::vector<double> r(noise.begin() + static_cast<long>(next), noise.begin() + static_cast<long>(next + n));
    next += static_cast<size_t>(n);
    return r;
  };
  const auto add = [&](std::string kind, const std::vector<double>& r) {
    v.insert(v.end(), r.begin(), r.end());
    b.kinds.push_back(std::move(kind));
  };
  const auto filled = [&](double value) { return std::vector<double>(static_cast<size_t>(n), value); };
  const auto with = [](std::vector<double> r, int64_t j, double value) {
    r[static_cast<size_t>(j)] = value;
    return r;
  };
  const auto causal = [&](int64_t i) {  // keys after i masked
    std::vector<double> r = finite();
    for (int64_t j = i + 1; j < n; ++j) r[static_cast<size_t>(j)] = -kInf;
    return r;
  };

  add("finite", finite());
  add("all -inf (every key masked)", filled(-kInf));
  add("all NaN", filled(kNaN));
  add("NaN first, then finite", with(finite(), 0, kNaN));
  add("finite, NaN last", with(finite(), n - 1, kNaN));
  add("finite and one +inf", with(finite(), n / 2, kInf));
  add("-inf and one +inf", with(filled(-kInf), n / 2, kInf));
  for (int64_t p : nan_positions(n, warps))
    add("NaN at " + std::to_string(p) + " among -inf", with(filled(-kInf), p, kNaN));
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{31}, int64_t{32}, n / 2, n - 1}) {
    if (i >= n) continue;
    add("causal row " + std::to_string(i), causal(i));
    add("causal row " + std::to_string(i) + ", NaN at visible key " + std::to_string(i / 2),
        with(causal(i), i / 2, kNaN));
    if (i + 1 < n)
      add("causal row " + std::to_string(i) + ", NaN at masked key " + std::to_string(n - 1),
          with(causal(i), n - 1, kNaN));
  }
  b.x = tensor(v, {b.rows(), n}, DType::f64);
  return b;
}

// out (GPU) against the CPU reference: the same NaN / +inf / −inf positions, the finite entries
// within tolerance(t). A failure names the first entry that differs, its row and the row's kind.
void expect_same(const std::string& what, const Tensor& out, const Tensor& cpu_ref, DType t, const Batch& batch) {
  REQUIRE(out.defined());
  CHECK(out.device() == Device::cuda);
  REQUIRE(out.shape() == cpu_ref.shape());
  const std::vector<double> a = out.to_vector(), b = cpu_ref.to_vector();
  int64_t differ = 0, first = -1, nans = 0;
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool a_nan = std::isnan(a[i]), b_nan = std::isnan(b[i]);
    bool same = true;
    if (a_nan || b_nan) {
      same = a_nan == b_nan;
      nans += a_nan && b_nan;
    } else if (std::isinf(a[i]) || std::isinf(b[i])) {
      same = a[i] == b[i];
    } else {
      num += (a[i] - b[i]) * (a[i] - b[i]);
      den += b[i] * b[i];
    }
    if (!same && differ++ == 0) first = static_cast<int64_t>(i);
  }
  const double rel = num == 0.0 ? 0.0 : std::sqrt(num) / std::sqrt(den);
  MESSAGE(what, " ", std::string(dtype_name(t)), " ", shape_str(out.shape()), ": ", nans,
          " NaN on both; ||gpu - cpu|| / ||cpu|| over the finite entries = ", rel);
  if (differ > 0) {
    std::string row;  // outputs with the batch's rows first name the row and its kind
    const int64_t per_row = out.numel() / batch.rows();
    if (per_row > 0 && out.numel() % batch.rows() == 0)
      row = ", row " + std::to_string(first / per_row) + " (" + batch.kinds[static_cast<size_t>(first / per_row)] + ")";
    FAIL_CHECK(what, " ", std::string(dtype_name(t)), ": ", differ,
               " entries differ in kind (NaN, inf or finite); the first at ", index_str(out.shape(), first), row,
               ": gpu ", a[static_cast<size_t>(first)], ", cpu ", b[static_cast<size_t>(first)]);
  }
  CHECK(rel < tolerance(t));
}

// f on the GPU in float64 and float32 against the CPU op in float64 on the values the GPU was
// given: the output and the gradient of sum(out ∘ R) (run_op, gpu_compare.h).
void compare_op(const std::string& what, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                const std::vector<Tensor>& xs, const Batch& batch, bool backward = true) {
  for (DType t : kFloatTypes) {
    std::vector<Tensor> given;
    for (const Tensor& x : xs) given.push_back(is_floating(x.dtype()) ? ref(x.to(t)) : x);
    const OpRun cpu = run_op(f, given, Device::cpu, DType::f64);
    const OpRun gpu = run_op(f, xs, Device::cuda, t);
    expect_same(what + " forward", gpu.out, cpu.out, t, batch);
    if (!backward) continue;
    for (size_t k = 0; k < xs.size(); ++k) {
      if (!cpu.grads[k].defined()) continue;
      REQUIRE(gpu.grads[k].defined());
      expect_same(what + " d/dx" + std::to_string(k), gpu.grads[k], cpu.grads[k], t, batch);
    }
  }
}

struct Size {
  int64_t n, warps;  // row length; the warps whose lanes get a NaN
};
// 32, 64, 128 and 512 threads per block (row_threads); the last with two entries per thread.
constexpr Size kSizes[] = {{5, 1}, {33, 2}, {100, 4}, {700, 2}};

}  // namespace

TEST_CASE("NaN rows: softmax and log_softmax, forward and backward, match the CPU") {
  Generator gen(301);
  for (const Size& s : kSizes) {
    CAPTURE(s.n);
    const Batch b = nan_rows(s.n, s.warps, gen);
    compare_op("softmax", [](const std::vector<Tensor>& in) { return hg::softmax(in[0], -1); }, {b.x}, b);
    compare_op("log_softmax", [](const std::vector<Tensor>& in) { return hg::log_softmax(in[0], -1); }, {b.x}, b);
    // What the comparison rests on: a NaN beside a finite score, visible or masked, is no masked
    // key — the whole row comes out NaN (NaN in, NaN out).
    const std::vector<double> x = b.x.to_vector(), p = hg::softmax(gpu(b.x), -1).to_vector();
    for (int64_t r = 0; r < b.rows(); ++r) {
      bool has_nan = false, has_finite = false;
      for (int64_t j = 0; j < s.n; ++j) {
        has_nan = has_nan || std::isnan(x[static_cast<size_t>(r * s.n + j)]);
        has_finite = has_finite || std::isfinite(x[static_cast<size_t>(r * s.n + j)]);
      }
      if (!has_nan || !has_finite) continue;
      CAPTURE(b.kinds[static_cast<size_t>(r)]);
      int64_t nans = 0;
      for (int64_t j = 0; j < s.n; ++j) nans += std::isnan(p[static_cast<size_t>(r * s.n + j)]);
      CHECK(nans == s.n);
    }
  }
}

TEST_CASE("NaN rows: the row rule softmax_backward(P, dP) and its D match the CPU") {
  Generator gen(302);
  for (const Size& s : kSizes) {
    CAPTURE(s.n);
    const Batch b = nan_rows(s.n, s.warps, gen);
    const Tensor P = hg::softmax(b.x, -1);  // NaN rows, zero rows (nothing visible), ordinary rows
    Tensor dP = normal(b.x.shape(), gen, DType::f64);
    dP.set_at({0, 0}, kNaN);  // and a NaN in the incoming gradient of an ordinary row
    for (DType t : kFloatTypes) {
      Tensor D_gpu, D_cpu;
      const Tensor dS_gpu = poisoned([&] { return hg::softmax_backward(gpu(P.to(t)), gpu(dP.to(t)), &D_gpu); });
      const Tensor dS_cpu = hg::softmax_backward(ref(P.to(t)), ref(dP.to(t)), &D_cpu);
      expect_same("softmax_backward dS", dS_gpu, dS_cpu, t, b);
      expect_same("softmax_backward D", D_gpu, D_cpu, t, b);
    }
  }
}

TEST_CASE("NaN rows: the softmax Jacobian and its backward match the CPU") {
  Generator gen(303);
  for (const Size& s : kSizes) {
    if (s.n > 100) continue;  // (rows, n, n)
    CAPTURE(s.n);
    const Batch b = nan_rows(s.n, s.warps, gen);
    compare_op("softmax_jacobian(softmax(x))",
               [](const std::vector<Tensor>& in) { return hg::softmax_jacobian(hg::softmax(in[0], -1)); }, {b.x}, b);
  }
}

TEST_CASE("NaN rows: sum and max along rows, argmax, match the CPU") {
  Generator gen(304);
  for (const Size& s : kSizes) {
    CAPTURE(s.n);
    const Batch b = nan_rows(s.n, s.warps, gen);
    compare_op("sum(x, {1})", [](const std::vector<Tensor>& in) { return hg::sum(in[0], {1}); }, {b.x}, b);
    compare_op("max(x, 1)", [](const std::vector<Tensor>& in) { return hg::max(in[0], 1); }, {b.x}, b);
    compare_op("argmax(x, 1)", [](const std::vector<Tensor>& in) { return hg::argmax(in[0], 1).to(DType::f64); },
               {b.x}, b, false);
  }
}

TEST_CASE("NaN rows: cross_entropy ignores NaN rows that are ignored, and names the first kept NaN row") {
  Generator gen(305);
  const int64_t kIgnore = -100;
  for (const Size& s : kSizes) {
    CAPTURE(s.n);
    const Batch b = nan_rows(s.n, s.warps, gen);
    // Kept (target 0, a key every causal row sees): the rows with a finite loss — no NaN, no +inf,
    // something finite. Every other row, NaN or not, is ignored.
    std::vector<int64_t> targets;
    const std::vector<double> xv = b.x.to_vector();
    for (int64_t r = 0; r < b.rows(); ++r) {
      bool clean = true, any_finite = false;
      for (int64_t j = 0; j < s.n; ++j) {
        const double v = xv[static_cast<size_t>(r * s.n + j)];
        clean = clean && !std::isnan(v) && v != kInf;
        any_finite = any_finite || std::isfinite(v);
      }
      targets.push_back(clean && any_finite ? 0 : kIgnore);
    }
    const Tensor tg = index_tensor(targets, {b.rows()});
    compare_op("cross_entropy (NaN rows ignored)",
               [&](const std::vector<Tensor>& in) { return hg::cross_entropy(in[0], in[1], kIgnore); },
               {b.x, tg}, b);

    // The same rows all kept (target 0): the first row whose loss is NaN is named, on both devices.
    const Tensor all_kept = index_tensor(std::vector<int64_t>(static_cast<size_t>(b.rows()), 0), {b.rows()});
    std::string cpu_error;
    try {
      (void)hg::cross_entropy(b.x, all_kept, kIgnore);
    } catch (const Error& e) {
      cpu_error = e.what();
    }
    for (DType t : kFloatTypes) {
      CAPTURE(dtype_name(t));
      std::string gpu_error;
      try {
        (void)hg::cross_entropy(gpu(b.x.to(t)), gpu(all_kept), kIgnore).item();
      } catch (const Error& e) {
        gpu_error = e.what();
      }
      // The first row with a NaN loss: row 1 (all −inf) comes before any NaN row.
      const std::string named = "row [1] (target 0) is NaN";
      CHECK_MESSAGE(cpu_error.find(named) != std::string::npos, cpu_error);
      CHECK_MESSAGE(gpu_error.find(named) != std::string::npos, gpu_error);
    }
  }
}
