// ops/rearrange.h, ops/statistics.h, ops/extrema.h, ops/compare.h: every refusal names the op and
// says what to give instead (their gradients are gradcheck's, tests/cases/cases_rearrange.cpp);
// ints and bools rearrange exactly, without a gradient.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "handgrad.h"

using namespace hg;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool says(const std::function<void()>& f, const std::string& text) {
  const std::string m = message_of(f);
  INFO(m);
  return m.find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("rearranging ops refuse bad arguments in words") {
  const Tensor x = arange(6, DType::f64).reshape({2, 3});
  CHECK(says([&] { index_select(x, 0, tensor({0, 1}, {2, 1}, DType::i64)); }, "index_select: index must be a 0-d or 1-d int64"));
  CHECK(says([&] { index_select(x, 1, tensor({3}, {1}, DType::i64)); }, "index_select: index 3 is out of range for dim 1"));
  CHECK(says([&] { masked_select(x, tensor({1, 0, 1}, {3}, DType::f64)); }, "masked_select: the mask must be a bool tensor"));
  CHECK(says([&] { masked_select(x, tensor({1, 0}, {2}, DType::b8)); }, "masked_select"));
  CHECK(says([&] { roll(x, {1, 2}); }, "roll: without dims it takes one shift"));
  CHECK(says([&] { roll(x, {1, 2}, {0}); }, "roll: 2 shifts for 1 dims"));
  CHECK(says([&] { diagonal(arange(3, DType::f64)); }, "diagonal: ") );
  CHECK(says([&] { diagonal(x, 0, 1, -1); }, "dim1 and dim2 are both dim 1"));
  CHECK(says([&] { diag(zeros({2, 2, 2}, DType::f64)); }, "diag: "));
  CHECK(says([&] { tril(arange(3, DType::f64)); }, "tril: "));
  CHECK(says([&] { triu(arange(3, DType::f64)); }, "triu: "));
  CHECK(says([&] { stack({}); }, "stack: no tensors given"));
  CHECK(says([&] { stack({x, x.reshape({3, 2})}); }, "stack: "));
  CHECK(says([&] { repeat(x, {2}); }, "repeat: 1 repeats for"));
  CHECK(says([&] { repeat(x, {2, -1}); }, "repeat: repeats (2, -1) has a negative count"));
  CHECK(says([&] { repeat_interleave(x, -1); }, "repeat_interleave: repeats is -1"));
  CHECK(says([&] { repeat_interleave(x, int64_t{1} << 62, 0); }, "repeat_interleave: "));
  CHECK(says([&] { flatten(x, 1, 0); }, "flatten: start_dim 1 comes after end_dim 0"));
  CHECK(says([&] { unflatten(x, 1, {}); }, "unflatten: sizes is empty"));
  CHECK(says([&] { unflatten(x, 1, {-1, -1}); }, "more than one -1"));
  CHECK(says([&] { unflatten(x, 1, {2, -2}); }, "is negative"));
  CHECK(says([&] { unflatten(x, 1, {2, 2}); }, "do not split dim 1"));
  CHECK(says([&] { unflatten(tensor({1}, {}, DType::f64), 0, {1}); }, "unflatten: "));
  CHECK(says([&] { movedim(x, {0, 1}, {1}); }, "movedim: 2 source dims and 1 destinations"));
  CHECK(says([&] { movedim(x, {0, 0}, {0, 1}); }, "movedim: "));
  CHECK(says([&] { narrow(x, 1, 4, 0); }, "narrow: start 4 is out of range"));
  CHECK(says([&] { narrow(x, 1, 1, 3); }, "run past dim 1"));
  CHECK(says([&] { narrow(x, 1, 0, -1); }, "narrow: "));
  CHECK(says([&] { flip(x, {2}); }, "flip: dim 2 is out of range"));
}

TEST_CASE("statistics, extrema and comparisons refuse bad arguments in words") {
  const Tensor x = arange(6, DType::f64).reshape({2, 3});
  const Tensor ints = arange(6, DType::i64);
  CHECK(says([&] { var(ints); }, "var: "));
  CHECK(std::isnan(var(zeros({0, 3}, DType::f64), {0}).to_vector()[2]));  // over no entries: NaN, as PyTorch's
  CHECK(says([&] { amax(zeros({0, 3}, DType::f64), {0}); }, "amax: dim 0 of"));
  CHECK(says([&] { amax(Tensor()); }, "amax: the input is undefined"));
  CHECK(amax(tensor({2.5}, {}, DType::f64), {0}).item() == 2.5);  // a 0-d tensor takes dim 0 and has nothing to reduce
  CHECK(amax(ints).to_int_vector() == std::vector<int64_t>{5});  // the extrema of integers are exact
  CHECK(amin(ints).to_int_vector() == std::vector<int64_t>{0});
  CHECK(argmin(ints, 0).to_int_vector() == std::vector<int64_t>{0});
  CHECK(says([&] { cumsum(ints, 1); }, "cumsum: dim 1 is out of range"));
  CHECK(cumsum(ints, 0).to_int_vector() == std::vector<int64_t>{0, 1, 3, 6, 10, 15});
  CHECK(says([&] { logsumexp(x, {3}); }, "logsumexp: dim 3 is out of range"));
  CHECK(says([&] { eq(x, arange(2, DType::f64)); }, "eq"));
  CHECK(says([&] { lt(Tensor(), x); }, "lt: input a is undefined"));
  CHECK(says([&] { clamp(x, std::nullopt, std::nullopt); }, "clamp: give min or max"));
  CHECK(says([&] { clamp(x, Tensor(), Tensor()); }, "clamp: give min or max"));
  CHECK(says([&] { clamp(ints.to(DType::b8), 0.0, 1.0); }, "clamp: "));
  CHECK(says([&] { isnan(Tensor()); }, "isnan: the input is undefined"));
}

TEST_CASE("ints and bools rearrange exactly, with no float kernel (the text's triu of a bool mask)") {
  const Tensor future = triu(ones({3, 3}, DType::b8), 1);  // the module's causal mask, as it writes it
  CHECK(future.dtype() == DType::b8);
  CHECK(future.to_vector() == std::vector<double>{0, 1, 1, 0, 0, 1, 0, 0, 0});
  CHECK(tril(arange(6, DType::i64).reshape({2, 3})).to_vector() == std::vector<double>{0, 0, 0, 3, 4, 0});
  const int64_t big = (int64_t{1} << 60) + 1;  // past float64's exact integers
  Tensor ids = zeros({3}, DType::i64);
  ids.data_ptr<int64_t>()[0] = big;
  ids.data_ptr<int64_t>()[2] = -big;
  const std::vector<int64_t> flipped = flip(ids, {0}).to_int_vector();
  CHECK(flipped == std::vector<int64_t>{-big, 0, big});
  CHECK(roll(ids, {1}).to_int_vector() == std::vector<int64_t>{-big, big, 0});
  CHECK(masked_select(ids, tensor({1, 0, 1}, {3}, DType::b8)).to_int_vector() == std::vector<int64_t>{big, -big});
  CHECK(repeat_interleave(ids, 2).to_int_vector() == std::vector<int64_t>{big, big, 0, 0, -big, -big});
}
