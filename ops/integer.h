// ops/integer.h — arithmetic on int64 and bool tensors (ops/integer.cpp), the half of PyTorch's
// type promotion that involves them: an integer or bool operand meets a float one as that float's
// dtype, two integer operands stay int64 (bool with bool stays bool), and true division of integers
// is float32's. Integers carry no gradient, so nothing here is recorded.
#pragma once
#include <cstdint>

#include "engine/tensor.h"

namespace hg {

// Which operands are integral and which numbers whole: is_integral and is_whole_number
// (ops/primitives.h), the one test every op family reads.

enum class IntArith : uint8_t { add, sub, mul, floor_divide, remainder, pow };

// out = a ∘ b elementwise, broadcast (numpy's rules), both int64 or bool (bool reads as 0/1): int64, or bool when
// both are bool (add is "or", mul "and"; sub of bools is refused, as PyTorch does). floor_divide
// rounds towards −∞ and remainder takes the divisor's sign (Python's rules, PyTorch's); a zero
// divisor is an Error; pow by repeated squaring, a negative exponent an Error. Wrapping on overflow, as int64 arithmetic in PyTorch.
Tensor integer_binary(const char* op, IntArith kind, const Tensor& a, const Tensor& b);

// out = a ∘ s (reversed: s ∘ a) for an int64 or bool tensor a and a whole number s: int64.
Tensor integer_scalar(const char* op, IntArith kind, const Tensor& a, int64_t s, bool reversed = false);

// out = cond ? a : b for cond, a, b of one shape, a and b int64 or bool: bool when both are bool,
// else int64 (ops/indexing.cpp's where broadcasts first).
Tensor integer_where(const Tensor& cond, const Tensor& a, const Tensor& b);

}  // namespace hg
