// The row device ops of the CudaBackend table against the CPU ops: sum and max along rows, the
// softmax family (forward, row rule, log_softmax backward, Jacobian and its backward), the
// cross-entropy forward and backward, the embedding gather and scatter-add, and their errors.
#include <doctest/doctest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "gpu_compare.h"
#include "cuda/ops.h"
#include "handgrad.h"

using namespace hg;
using namespace hg::gpu_test;

namespace {

// Rows of x (a CPU tensor, (rows, n)) rewritten: row 1 all −inf (no visible key), row 2 −inf at
// every other entry, row 3 shifted by +100 (exp would overflow float32 without the max).
void mask_rows(Tensor& x) {
  const int64_t rows = x.size(0), n = x.size(1);
  for (int64_t j = 0; j < n; ++j) {
    if (rows > 1) x.set_at({1, j}, -kInf);
    if (rows > 2 && j % 2 == 0) x.set_at({2, j}, -kInf);
    if (rows > 3) x.set_at({3, j}, x.at({3, j}) + 100.0);
  }
}

struct MaxResult {
  Tensor values, argmax, onehot;
};

}  // namespace

TEST_CASE("sum_rows: trailing dimensions of contiguous, permuted and long rows") {
  Generator gen(201);
  for (DType t : kFloatTypes) {
    const Tensor x = normal({4, 6, 5}, gen, t);
    const Tensor gx = gpu(x);
    expect_close("sum_rows(x, 2)", poisoned([&] { return cuda::sum_rows(gx, 2); }), hg::sum(ref(x), {1, 2}), t);
    expect_close("sum_rows(x.permute(0, 2, 1), 1)", poisoned([&] {
                   return cuda::sum_rows(gx.permute({0, 2, 1}), 1);
                 }),
                 hg::sum(ref(x).permute({0, 2, 1}), {2}), t);
    expect_close("sum_rows(x, 3) (all)", cuda::sum_rows(gx, 3), hg::sum(ref(x)), t);
    expect_close("sum_rows(x, 0) (none)", cuda::sum_rows(gx, 0), ref(x), t);
    const Tensor u = uniform({3, 5000}, gen, t, 0.5, 2.0);  // many warps per row, no cancellation
    expect_close("sum_rows long rows", poisoned([&] { return cuda::sum_rows(gpu(u), 1); }), hg::sum(ref(u), {1}), t);
  }
}

TEST_CASE("max_rows: values, first argmax, one-hot; ties, −inf rows, strided and long rows") {
  Generator gen(202);
  for (DType t : kFloatTypes) {
    for (bool transposed : {false, true}) {
      CAPTURE(transposed);
      Tensor x = transposed ? normal({33, 6}, gen, t).transpose(0, 1) : normal({6, 33}, gen, t);  // (6, 33)
      x.set_at({0, 5}, 10.0);  // a tie: the first position wins
      x.set_at({0, 20}, 10.0);
      for (int64_t j = 0; j < 33; ++j) {
        x.set_at({1, j}, -1.5);                   // all equal: position 0
        x.set_at({2, j}, j == 7 ? -3.0 : -kInf);  // one finite entry
        x.set_at({3, j}, -kInf);                  // all −inf: position 0, value −inf
      }
      const Tensor gx = transposed ? gpu(x.transpose(0, 1)).transpose(0, 1) : gpu(x);
      const MaxResult r = poisoned([&] {
        MaxResult m;
        m.values = cuda::max_rows(gx, &m.argmax, &m.onehot);
        return m;
      });
      const Tensor want_idx = hg::argmax(x, -1);
      expect_equal("max_rows values", r.values, hg::max(x, -1));
      expect_equal("max_rows argmax", r.argmax, want_idx);
      Tensor want_oh = zeros({6, 33}, t);
      for (int64_t i = 0; i < 6; ++i) want_oh.set_at({i, static_cast<int64_t>(want_idx.at({i}))}, 1.0);
      expect_equal("max_rows one-hot", r.onehot, want_oh);
      CHECK(r.argmax.at({0}) == 5);
    }
    const Tensor big = normal({3, 3000}, gen, t);
    Tensor am;
    expect_equal("max_rows long rows", cuda::max_rows(gpu(big), &am, nullptr), hg::max(big, -1));
    expect_equal("max_rows long rows argmax", am, hg::argmax(big, -1));
  }
}

TEST_CASE("softmax_rows and log_softmax_rows: masked rows, large scores, strided and long rows") {
  struct Case {
    int64_t rows, n;
    bool transposed;
  };
  const Case cases[] = {{6, 33, false}, {6, 33, true}, {4, 4097, false}, {3, 1, false}, {70, 100, true}};
  Generator gen(203);
  for (DType t : kFloatTypes)
    for (const Case& c : cases) {
      CAPTURE(c.rows);
      CAPTURE(c.n);
      CAPTURE(c.transposed);
      Tensor x = c.transposed ? normal({c.n, c.rows}, gen, t, 3.0).transpose(0, 1) : normal({c.rows, c.n}, gen, t, 3.0);
      mask_rows(x);
      const Tensor gx = c.transposed ? gpu(x.transpose(0, 1)).transpose(0, 1) : gpu(x);
      const Tensor p = poisoned([&] { return cuda::softmax_rows(gx); });
      expect_close("softmax_rows", p, hg::softmax(ref(x), -1), t);
      expect_close("log_softmax_rows", poisoned([&] { return cuda::log_softmax_rows(gx); }), hg::log_softmax(ref(x), -1),
                   t);
      if (c.rows > 1 && c.n > 1) {
        bool zero_row = true;
        for (int64_t j = 0; j < c.n; ++j) zero_row = zero_row && p.at({1, j}) == 0.0;
        CHECK(zero_row);  // no visible key: weights 0, not NaN, not the average
      }
    }
}

TEST_CASE("softmax_backward_rows: the row rule dS = P ∘ (dP − rowsum(P ∘ dP)) and D") {
  Generator gen(204);
  for (DType t : kFloatTypes)
    for (const Shape& s : {Shape{5, 9}, Shape{2, 3, 7}, Shape{3, 2000}}) {
      CAPTURE(shape_str(s));
      Tensor scores = normal(s, gen, DType::f64, 2.0);
      if (s.size() == 2) mask_rows(scores);
      const Tensor P = hg::softmax(scores, -1).to(t);
      Shape swapped = s;
      std::swap(swapped[swapped.size() - 2], swapped.back());
      const Tensor dP_base = normal(swapped, gen, t);  // dP is its transpose: non-contiguous
      const Tensor dP = dP_base.transpose(-2, -1);
      struct Out {
        Tensor dS, D;
      };
      const Out r = poisoned([&] {
        Out o;
        o.dS = cuda::softmax_backward_rows(gpu(P), gpu(dP_base).transpose(-2, -1), &o.D);
        return o;
      });
      Tensor D_ref;
      const Tensor dS_ref = hg::softmax_backward(ref(P), ref(dP), &D_ref);
      expect_close("softmax_backward_rows dS", r.dS, dS_ref, t);
      expect_close("softmax_backward_rows D", r.D, D_ref, t);
    }
}

TEST_CASE("log_softmax_backward_rows matches the CPU log_softmax backward, 0 on a row of −inf") {
  Generator gen(205);
  for (DType t : kFloatTypes) {
    Tensor s = normal({6, 8}, gen, t, 2.0);
    mask_rows(s);
    const Tensor y = hg::log_softmax(s, -1);  // in t, as the op saves it
    const Tensor g = normal({6, 8}, gen, t);
    Tensor s64 = ref(s).requires_grad_();
    hg::log_softmax(s64, -1).backward(ref(g));
    const Tensor out = poisoned([&] { return cuda::log_softmax_backward_rows(gpu(y), gpu(g)); });
    expect_close("log_softmax_backward_rows", out, s64.grad(), t);
    for (int64_t j = 0; j < 8; ++j) CHECK(out.at({1, j}) == 0.0);
  }
}

TEST_CASE("softmax_jacobian_rows and its backward") {
  Generator gen(206);
  for (DType t : kFloatTypes) {
    const Tensor p = hg::softmax(normal({2, 3, 6}, gen, DType::f64, 1.5), -1).to(t);
    expect_close("softmax_jacobian_rows", poisoned([&] { return cuda::softmax_jacobian_rows(gpu(p)); }),
                 hg::softmax_jacobian(ref(p)), t);
    const Tensor G = normal({2, 3, 6, 6}, gen, t);
    Tensor p64 = ref(p).requires_grad_();
    hg::softmax_jacobian(p64).backward(ref(G));
    expect_close("softmax_jacobian_backward_rows",
                 poisoned([&] { return cuda::softmax_jacobian_backward_rows(gpu(p), gpu(G)); }), p64.grad(), t);
  }
}

TEST_CASE("cross_entropy: loss, logsumexp and n_kept with ignore_index; backward; strided logits") {
  Generator gen(207);
  for (DType t : kFloatTypes) {
    const Tensor base = normal({4, 7, 5}, gen, t, 2.0);
    const Tensor logits = base.permute({0, 2, 1});  // (4, 5, 7), non-contiguous
    const Tensor glogits = gpu(base).permute({0, 2, 1});
    Tensor targets = randint({4, 5}, gen, 0, 7);
    std::vector<int64_t> ignore_neg = {-100, 3};
    for (int64_t ignore : ignore_neg) {
      CAPTURE(ignore);
      Tensor tg = targets.clone();
      for (int64_t i = 0; i < 4; ++i) tg.set_at({i, i}, static_cast<double>(ignore));  // 4 ignored rows at least
      if (ignore == 3) tg.set_at({0, 4}, 3.0);
      struct Out {
        Tensor loss, lse, kept;
      };
      const Out r = poisoned([&] {
        Out o;
        o.loss = cuda::cross_entropy(glogits, gpu(tg), ignore, &o.lse, &o.kept);
        return o;
      });
      const Tensor L = hg::cross_entropy(ref(logits), tg, ignore);
      expect_close("cross_entropy loss", r.loss, L, t);
      // n_kept and logsumexp, counted and summed here in double
      const std::vector<int64_t> tv = tg.to_int_vector();
      const std::vector<double> xv = ref(logits).to_vector();
      std::vector<double> lse_want(tv.size(), 0.0);
      int64_t kept = 0;
      for (size_t row = 0; row < tv.size(); ++row) {
        if (tv[row] == ignore) continue;
        ++kept;
        double z = 0.0;
        for (size_t c = 0; c < 7; ++c) z += std::exp(xv[row * 7 + c]);
        lse_want[row] = std::log(z);
      }
      REQUIRE(r.kept.device() == Device::cuda);
      CHECK(static_cast<int64_t>(r.kept.item()) == kept);
      expect_close("cross_entropy logsumexp", r.lse, tensor(lse_want, {20}, DType::f64), t);

      Tensor x64 = ref(logits).requires_grad_();
      hg::mul(hg::cross_entropy(x64, tg, ignore), 0.7).backward();
      const Tensor g = full({}, 0.7, t, Device::cuda);  // dL/dloss, read by the kernel with n_kept
      expect_close("cross_entropy_backward",
                   poisoned([&] { return cuda::cross_entropy_backward(glogits, gpu(tg), r.lse, ignore, g, r.kept); }),
                   x64.grad(), t);
    }
    // Every row ignored: loss 0, nothing kept, zero gradient.
    const Tensor none = full({4, 5}, -100.0, DType::i64);
    Tensor lse, kept;
    const Tensor zero_loss = cuda::cross_entropy(glogits, gpu(none), -100, &lse, &kept);
    CHECK(zero_loss.item() == 0.0);
    CHECK(kept.item() == 0.0);
    expect_equal("cross_entropy_backward all ignored",
                 cuda::cross_entropy_backward(glogits, gpu(none), lse, -100, full({}, 1.0, t, Device::cuda), kept),
                 zeros({4, 5, 7}, t));
  }
}

TEST_CASE("cross_entropy errors: a target out of range, a NaN loss — reported at the next wait for the device") {
  Generator gen(208);
  const Tensor x = gpu(normal({3, 4}, gen, DType::f64));
  // The kernels check on the device; the error comes at the next copy to the host or synchronize().
  const auto loss_of = [&](const Tensor& logits, const Tensor& targets) {
    return cuda::cross_entropy(logits, targets, -100, nullptr, nullptr).item();
  };
  CHECK_THROWS_WITH_AS(loss_of(x, gpu(index_tensor({0, 4, 1}, {3}))),
                       doctest::Contains("target 4 at position [1] of targets (3,) is out of range for C = 4"), Error);
  CHECK_THROWS_WITH_AS(loss_of(x, gpu(index_tensor({0, 1, -5}, {3}))), doctest::Contains("target -5 at position [2]"),
                       Error);
  Tensor lse, kept;
  (void)cuda::cross_entropy(x, gpu(index_tensor({0, 1, 2}, {3})), -100, &lse, &kept);
  const Tensor bad_targets = gpu(index_tensor({0, 9, 2}, {3}));  // the upload waits; the backward must not
  const uint64_t waits = cu().host_waits();
  const Tensor dx =  // queued: nothing waits, nothing throws yet
      cuda::cross_entropy_backward(x, bad_targets, lse, -100, full({}, 1.0, DType::f64, Device::cuda), kept);
  CHECK(cu().host_waits() == waits);
  CHECK_THROWS_WITH_AS(cu().synchronize(), doctest::Contains("target 9 at position [1]"), Error);
  Tensor bad = normal({3, 4}, gen, DType::f64);
  bad.set_at({2, 1}, std::nan(""));
  CHECK_THROWS_WITH_AS(loss_of(gpu(bad), gpu(index_tensor({0, 1, 2}, {3}))),
                       doctest::Contains("row [2] (target 2) is NaN"), Error);
  // Shapes and dtypes are checked on the host, at once.
  CHECK_THROWS_WITH_AS(cuda::cross_entropy(x, gpu(index_tensor({0, 1}, {2})), -100, nullptr, nullptr),
                       doctest::Contains("targets have shape"), Error);
  CHECK_THROWS_WITH_AS(cuda::cross_entropy(x, gpu(full({3}, 0.0, DType::f64)), -100, nullptr, nullptr),
                       doctest::Contains("i64"), Error);
  (void)cuda::cross_entropy(x, gpu(index_tensor({0, 1, 2}, {3})), -100, nullptr, &kept);  // works after the errors
  CHECK(kept.item() == 3.0);
}

TEST_CASE("embedding: gather with repeated ids, scatter-add backward, strided weight") {
  Generator gen(209);
  for (DType t : kFloatTypes)
    for (bool transposed : {false, true}) {
      CAPTURE(transposed);
      const Tensor w = transposed ? normal({6, 11}, gen, t).transpose(0, 1) : normal({11, 6}, gen, t);  // (11, 6)
      const Tensor gw = transposed ? gpu(w.transpose(0, 1)).transpose(0, 1) : gpu(w);
      Tensor idx = randint({3, 4}, gen, 0, 11);
      idx.set_at({0, 0}, 4);  // 4 read three times, 10 (the last row) at least once
      idx.set_at({1, 2}, 4);
      idx.set_at({2, 3}, 4);
      idx.set_at({2, 0}, 10);
      expect_equal("embedding", poisoned([&] { return cuda::embedding(gw, gpu(idx)); }), hg::embedding(w, idx));

      const Tensor g_base = normal({3, 6, 4}, gen, t);
      const Tensor g = g_base.permute({0, 2, 1});  // (3, 4, 6), non-contiguous
      Tensor w64 = ref(w).requires_grad_();
      hg::embedding(w64, idx).backward(ref(g));
      expect_close("embedding_backward", poisoned([&] {
                     return cuda::embedding_backward(gpu(g_base).permute({0, 2, 1}), gpu(idx), 11);
                   }),
                   w64.grad(), t);
    }
}

TEST_CASE("embedding errors: an index out of range names it and its position") {
  Generator gen(210);
  const Tensor w = gpu(normal({11, 6}, gen, DType::f32));
  Tensor idx = randint({3, 4}, gen, 0, 11);
  idx.set_at({1, 2}, 11);
  // Checked on the device, reported at the next copy to the host (to_vector) or synchronize().
  CHECK_THROWS_WITH_AS(
      cuda::embedding(w, gpu(idx)).to_vector(),
      doctest::Contains("index 11 at position [1, 2] of indices (3, 4) is out of range for a table of V = 11"), Error);
  idx.set_at({1, 2}, 3);
  idx.set_at({0, 1}, -1);
  CHECK_THROWS_WITH_AS(cuda::embedding(w, gpu(idx)).to_vector(), doctest::Contains("index -1 at position [0, 1]"), Error);
  (void)cuda::embedding_backward(gpu(normal({3, 4, 6}, gen, DType::f32)), gpu(idx), 11);
  CHECK_THROWS_WITH_AS(cu().synchronize(), doctest::Contains("index -1 at position [0, 1]"), Error);
  CHECK_THROWS_WITH_AS(cuda::embedding(w, gpu(idx.to(DType::f64))), doctest::Contains("i64"), Error);
  CHECK_THROWS_WITH_AS(cuda::embedding(w, idx), doctest::Contains("is on cpu"), Error);
  idx.set_at({0, 1}, 0);
  const Tensor ok = cuda::embedding(w, gpu(idx));  // works after the errors
  expect_equal("embedding after errors", ok, hg::embedding(w.to(Device::cpu), idx));
}
