// The dim and index rule (engine/dims.h), swept over every op and method of the C++ API that takes
// a dim, dims or an index: tensors of rank 0–4 (one with an empty dimension), every dim from
// −r−2 to r+1, every index from −n−1 to n. Each call either gives PyTorch's result — its shape by
// the rule written out here, its values checked against the input read element by element — or
// throws: an hg::IndexError for a dim or index out of range, never a crash and never a bad dim
// silently accepted. (python/tests/test_dims.py sweeps the Python API the same way against
// PyTorch itself.)
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "handgrad.h"

using namespace hg;

namespace {

// PyTorch's rule, written independently of engine/dims.cpp: rank 0 counts as rank 1.
bool dim_ok(int64_t d, int64_t r) {
  const int64_t R = r == 0 ? 1 : r;
  return d >= -R && d < R;
}
int64_t wrapped(int64_t d, int64_t r) { return d < 0 ? d + (r == 0 ? 1 : r) : d; }

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all{{}, {3}, {2, 3}, {2, 1, 3}, {2, 3, 1, 2}, {2, 0, 3}};
  return all;
}

Tensor sample(const Shape& s) {
  Generator gen(7);
  return randn(s, gen, DType::f64);
}

// ok: the call must succeed (and its checks pass); otherwise it must throw `E`.
template <typename E = IndexError, typename F>
void expect(bool ok, const std::string& call, F&& f) {
  INFO(call);
  if (ok) {
    CHECK_NOTHROW(f());
  } else {
    CHECK_THROWS_AS(f(), E);
  }
}

// x's element at the multi-index `at` as a vector (at() takes an initializer list).
double element(const Tensor& x, const Shape& at) {
  Tensor t = x;
  for (int64_t i : at) t = t.select(0, i);
  return t.item();
}

// Every multi-index of `shape`, row-major.
std::vector<Shape> indices_of(const Shape& shape) {
  std::vector<Shape> out;
  if (shape_numel(shape) == 0) return out;
  Shape at(shape.size(), 0);
  while (true) {
    out.push_back(at);
    int64_t d = static_cast<int64_t>(shape.size()) - 1;
    while (d >= 0 && ++at[d] == shape[d]) at[d--] = 0;
    if (d < 0) return out;
  }
}

}  // namespace

TEST_CASE("size, squeeze, unsqueeze and transpose take PyTorch's dims on every rank, 0 included") {
  for (const Shape& s : shapes()) {
    const Tensor x = sample(s);
    const int64_t r = x.dim();
    for (int64_t d = -r - 2; d <= r + 1; ++d) {
      const std::string on = fmt::format(" on shape ({})", fmt::join(s, ", "));
      // size(d): a 0-d tensor has no dimension to measure (PyTorch: IndexError)
      expect(r > 0 && dim_ok(d, r), fmt::format("size({}){}", d, on), [&] {
        const int64_t n = x.size(d);  // the call first: a CHECK would swallow its exception
        CHECK(n == s[wrapped(d, r)]);
      });
      // squeeze(d): removes the dimension when its size is 1, else a no-op
      expect(dim_ok(d, r), fmt::format("squeeze({}){}", d, on), [&] {
        const Tensor y = x.squeeze(d);
        Shape want = s;
        if (r > 0 && s[wrapped(d, r)] == 1) want.erase(want.begin() + wrapped(d, r));
        CHECK(y.shape() == want);
        CHECK(y.to_vector() == x.to_vector());
      });
      // unsqueeze(d): −r−1 ≤ d ≤ r
      expect(d >= -r - 1 && d <= r, fmt::format("unsqueeze({}){}", d, on), [&] {
        const Tensor y = x.unsqueeze(d);
        Shape want = s;
        want.insert(want.begin() + (d < 0 ? d + r + 1 : d), 1);
        CHECK(y.shape() == want);
        CHECK(y.to_vector() == x.to_vector());
      });
      for (int64_t e = -r - 2; e <= r + 1; ++e)
        expect(dim_ok(d, r) && dim_ok(e, r), fmt::format("transpose({}, {}){}", d, e, on), [&] {
          Tensor y = x.transpose(d, e);
          Shape want = s;
          if (r > 0) std::swap(want[wrapped(d, r)], want[wrapped(e, r)]);
          CHECK(y.shape() == want);
          for (const Shape& at : indices_of(s)) {
            Shape moved = at;
            if (r > 0) std::swap(moved[wrapped(d, r)], moved[wrapped(e, r)]);
            CHECK(element(y, moved) == element(x, at));
          }
          if (r == 0) CHECK(y.item() == x.item());
        });
    }
  }
}

TEST_CASE("select, slice, index and at take a dim and an index by the rule; a 0-d tensor has neither") {
  for (const Shape& s : shapes()) {
    const Tensor x = sample(s);
    const int64_t r = x.dim();
    const std::string on = fmt::format(" on shape ({})", fmt::join(s, ", "));
    for (int64_t d = -r - 2; d <= r + 1; ++d) {
      const bool dim_exists = r > 0 && dim_ok(d, r);
      const int64_t n = dim_exists ? s[wrapped(d, r)] : 0;
      for (int64_t i = -n - 1; i <= n; ++i)
        expect(dim_exists && i >= -n && i < n, fmt::format("select({}, {}){}", d, i, on), [&] {
          const int64_t w = wrapped(d, r), j = i < 0 ? i + n : i;
          Tensor y = x.select(d, i);
          Shape want = s;
          want.erase(want.begin() + w);
          CHECK(y.shape() == want);
          for (const Shape& at : indices_of(want)) {
            Shape full = at;
            full.insert(full.begin() + w, j);
            CHECK(element(y, at) == element(x, full));
          }
        });
      expect(dim_exists, fmt::format("slice({}, 0, 1){}", d, on), [&] {
        Shape want = s;
        Tensor y = x.slice(d, 0, 1);
        want[wrapped(d, r)] = std::min<int64_t>(1, s[wrapped(d, r)]);
        CHECK(y.shape() == want);
      });
    }
    // at({...}) and index({...}): one index per dimension, each in range
    if (r == 2) {
      for (int64_t i = -3; i <= 2; ++i)
        for (int64_t j = -4; j <= 3; ++j) {
          const bool ok = i >= -2 && i < 2 && j >= -3 && j < 3;
          expect(ok, fmt::format("at({{{}, {}}}){}", i, j, on), [&] {
            const double v = x.at({i, j});
            CHECK(v == element(x, {i < 0 ? i + 2 : i, j < 0 ? j + 3 : j}));
          });
          expect(ok, fmt::format("index({{{}, {}}}){}", i, j, on), [&] {
            const Tensor y = x.index({i, j});
            CHECK(y.item() == element(x, {i < 0 ? i + 2 : i, j < 0 ? j + 3 : j}));
          });
        }
      CHECK_THROWS_AS(x.at({0}), Error);        // too few indices
      CHECK_THROWS_AS(x.index({0, 0, 0}), Error);  // too many
    }
  }
}

TEST_CASE("permute takes each dim once, wrapped by the rule; a repeated or out-of-range dim is refused") {
  for (const Shape& s : shapes()) {
    const Tensor x = sample(s);
    const int64_t r = x.dim();
    if (r > 3) continue;  // 8^3 orders at rank 3; rank 4 adds nothing the rule does not already cover
    const int64_t lo = -r - 1, span = 2 * r + 3;  // dims from −r−1 to r+1
    int64_t count = 1;
    for (int64_t i = 0; i < r; ++i) count *= span;
    for (int64_t code = 0; code < count; ++code) {
      Shape order(r);
      int64_t c = code;
      for (int64_t i = 0; i < r; ++i, c /= span) order[i] = lo + c % span;
      bool ok = true;
      std::vector<bool> seen(r, false);
      for (int64_t d : order) {
        ok = ok && dim_ok(d, r);
        if (ok) {
          ok = !seen[wrapped(d, r)];
          seen[wrapped(d, r)] = true;
        }
      }
      expect(ok, fmt::format("permute(({})) on shape ({})", fmt::join(order, ", "), fmt::join(s, ", ")), [&] {
        const Tensor y = x.permute(order);
        for (int64_t i = 0; i < r; ++i) CHECK(y.shape()[i] == s[wrapped(order[i], r)]);
      });
    }
    // an order of the wrong length is an Error (not a dim out of range)
    Shape longer(static_cast<size_t>(r + 1), 0);
    CHECK_THROWS_AS(x.permute(longer), Error);
  }
}

TEST_CASE("reductions, softmax and log_softmax take dims by the rule; an empty list reduces every dimension") {
  for (const Shape& s : shapes()) {
    const Tensor x = sample(s);
    const int64_t r = x.dim();
    const std::string on = fmt::format(" on shape ({})", fmt::join(s, ", "));
    double total = 0;
    for (double v : x.to_vector()) total += v;
    for (int64_t d = -r - 2; d <= r + 1; ++d) {
      const bool ok = dim_ok(d, r);
      const int64_t w = wrapped(d, r);
      const int64_t n = r > 0 && ok ? s[w] : 1;  // the size reduced
      for (bool keepdim : {false, true}) {
        Shape want = s;
        if (r > 0 && ok) {
          if (keepdim) want[w] = 1;
          else want.erase(want.begin() + w);
        }
        expect(ok, fmt::format("sum(x, {{{}}}, {}){}", d, keepdim, on), [&] {
          Tensor y = sum(x, {d}, keepdim);
          CHECK(y.shape() == want);
          CHECK(sum(y).item() == doctest::Approx(total).epsilon(1e-12));
        });
        // mean over an empty dimension is refused (PyTorch returns NaN; handgrad never a silent NaN)
        if (!ok || n > 0)
          expect(ok, fmt::format("mean(x, {{{}}}, {}){}", d, keepdim, on), [&] {
            const Tensor y = mean(x, {d}, keepdim);
            CHECK(y.shape() == want);
          });
        else
          CHECK_THROWS_AS(mean(x, {d}, keepdim), Error);
        if (!ok || n > 0) {
          expect(ok, fmt::format("max(x, {}, {}){}", d, keepdim, on), [&] {
            Tensor m = max(x, d, keepdim), a = argmax(x, d, keepdim);
            CHECK(m.shape() == want);
            CHECK(a.shape() == want);
            CHECK(a.dtype() == DType::i64);
          });
        } else {
          CHECK_THROWS_AS(max(x, d, keepdim), Error);
          CHECK_THROWS_AS(argmax(x, d, keepdim), Error);
        }
      }
      expect(ok, fmt::format("softmax(x, {}){}", d, on), [&] {
        Tensor p = softmax(x, d), lp = log_softmax(x, d);
        CHECK(p.shape() == s);
        CHECK(lp.shape() == s);
        if (shape_numel(s) > 0) {
          Tensor rows = sum(p, {d});  // each row of p sums to 1
          for (double v : rows.to_vector()) CHECK(v == doctest::Approx(1.0).epsilon(1e-12));
          std::vector<double> pv = p.to_vector(), lv = lp.to_vector();
          for (size_t i = 0; i < pv.size(); ++i) CHECK(std::exp(lv[i]) == doctest::Approx(pv[i]).epsilon(1e-12));
        }
        if (r == 0) CHECK(p.item() == 1.0);
      });
    }
    // a dim twice is refused; the empty list reduces all, as in PyTorch
    if (r >= 1) CHECK_THROWS_AS(sum(x, {0, -r}), IndexError);
    CHECK_THROWS_AS(sum(x, {0, 0}), IndexError);
    CHECK(sum(x, Shape{}).shape() == Shape{});
    CHECK(sum(x, Shape{}, true).shape() == Shape(s.size(), 1));
    CHECK(sum(x, Shape{}).item() == doctest::Approx(total).epsilon(1e-12));
  }
}

TEST_CASE("concat, split and chunk need a dimension; their dim follows the rule") {
  for (const Shape& s : shapes()) {
    const Tensor x = sample(s);
    const int64_t r = x.dim();
    const std::string on = fmt::format(" on shape ({})", fmt::join(s, ", "));
    if (r == 0) {
      CHECK_THROWS_AS(concat({x, x}, 0), Error);
      CHECK_THROWS_AS(split(x, {1}, 0), Error);
      CHECK_THROWS_AS(chunk(x, 1, 0), Error);
      CHECK_THROWS_AS(chunk(x, 1, -1), Error);
    }
    for (int64_t d = -r - 2; d <= r + 1; ++d) {
      const bool ok = r > 0 && dim_ok(d, r);
      if (r == 0) continue;
      const int64_t w = wrapped(d, r);
      expect(ok, fmt::format("concat({{x, x}}, {}){}", d, on), [&] {
        Tensor y = concat({x, x}, d);
        Shape want = s;
        want[w] *= 2;
        CHECK(y.shape() == want);
        CHECK(y.slice(d, s[w], 2 * s[w]).contiguous().to_vector() == x.to_vector());
      });
      expect(ok, fmt::format("split(x, {{n}}, {}){}", d, on), [&] {
        std::vector<Tensor> pieces = split(x, {ok ? s[w] : 1}, d);
        REQUIRE(pieces.size() == 1);
        CHECK(pieces[0].shape() == s);
      });
      expect(ok, fmt::format("chunk(x, 2, {}){}", d, on), [&] {
        int64_t total = 0;
        for (const Tensor& p : chunk(x, 2, d)) total += p.shape()[w];
        CHECK(total == s[w]);
      });
    }
  }
}

TEST_CASE("bad sizes and indices elsewhere: reshape's -1, negative sizes, expand, token ids, targets") {
  Generator gen(3);
  const Tensor x = randn({2, 3}, gen, DType::f64);
  CHECK(x.reshape({-1}).shape() == Shape{6});
  CHECK(x.reshape({3, -1}).shape() == Shape{3, 2});
  CHECK_THROWS_AS(x.reshape({-1, -1}), Error);  // only one -1
  CHECK_THROWS_AS(x.reshape({-2, 3}), Error);   // no size below -1
  CHECK_THROWS_AS(x.reshape({4, -1}), Error);   // 6 is not a multiple of 4
  CHECK_THROWS_AS(x.view({7}), Error);
  CHECK(randn({0, 3}, gen).reshape({-1, 3}).shape() == Shape{0, 3});
  CHECK_THROWS_AS(randn({0, 3}, gen).reshape({0, -1}), Error);  // -1 of an empty tensor is ambiguous
  CHECK_THROWS_AS(zeros({-1, 2}), Error);
  CHECK_THROWS_AS(zeros({int64_t{1} << 40, int64_t{1} << 40}), Error);  // overflows the byte count
  CHECK_THROWS_AS(expand(x, {-1, 3}), Error);
  CHECK_THROWS_AS(expand(x, {3}), Error);
  CHECK(expand(x, {4, 2, 3}).shape() == Shape{4, 2, 3});
  CHECK_THROWS_AS(x.slice(0, 0, 2, 0), Error);
  CHECK_THROWS_AS(causal_mask(-1), Error);
  CHECK_THROWS_AS(causal_mask(int64_t{1} << 40), Error);  // T · T bytes overflow, refused before any allocation
  CHECK(causal_mask(3).shape() == Shape{3, 3});
  CHECK(x.slice(1, 0, 3, std::numeric_limits<int64_t>::max()).shape() == Shape{2, 1});
  CHECK(x.slice(1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()).shape() == Shape{2, 3});

  const Tensor weight = randn({4, 2}, gen, DType::f64);
  CHECK_THROWS_AS(embedding(weight, index_tensor({0, 4}, {2})), Error);
  CHECK_THROWS_AS(embedding(weight, index_tensor({-1}, {1})), Error);
  CHECK_THROWS_AS(embedding(weight, tensor({0.0, 1.0}, {2})), Error);  // float ids
  CHECK(embedding(weight, index_tensor({}, {0})).shape() == Shape{0, 2});

  const Tensor logits = randn({3, 4}, gen, DType::f64);
  CHECK_THROWS_AS(cross_entropy(logits, index_tensor({0, 1, 4}, {3})), Error);
  CHECK_THROWS_AS(cross_entropy(logits, index_tensor({0, 1, -2}, {3})), Error);
  CHECK_THROWS_AS(cross_entropy(logits, tensor({0, 1, 2}, {3})), Error);  // float targets
  CHECK(std::isfinite(cross_entropy(logits, index_tensor({0, -100, 3}, {3})).item()));
}

TEST_CASE("an empty dimension through softmax, matmul and attention: PyTorch's result or a clear error") {
  Generator gen(5);
  // softmax of an empty row: an empty result
  CHECK(softmax(randn({2, 0}, gen, DType::f64), -1).shape() == Shape{2, 0});
  CHECK(log_softmax(randn({0, 3}, gen, DType::f64), -1).shape() == Shape{0, 3});
  // matmul with K = 0: zeros, as in PyTorch
  Tensor c = matmul(randn({2, 0}, gen, DType::f64), randn({0, 3}, gen, DType::f64));
  CHECK(c.shape() == Shape{2, 3});
  for (double v : c.to_vector()) CHECK(v == 0.0);
  CHECK(matmul(randn({0, 4}, gen, DType::f64), randn({4, 3}, gen, DType::f64)).shape() == Shape{0, 3});
  // attention with T = 0 queries or keys
  Tensor q0 = randn({0, 2}, gen, DType::f64), k = randn({3, 2}, gen, DType::f64), v = randn({3, 2}, gen, DType::f64);
  CHECK(attention(q0, k, v).shape() == Shape{0, 2});
  Tensor q = randn({2, 2}, gen, DType::f64), k0 = randn({0, 2}, gen, DType::f64), v0 = randn({0, 2}, gen, DType::f64);
  Tensor o = attention(q, k0, v0);  // no key at all: every row hides every key, so zeros (ops/attention.h)
  CHECK(o.shape() == Shape{2, 2});
  for (double e : o.to_vector()) CHECK(e == 0.0);
}
