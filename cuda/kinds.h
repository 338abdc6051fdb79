// cuda/kinds.h — the elementwise kinds the GPU computes, and their names for error messages.
//
// These codes are the only list of them: ops/elementwise.cpp names its kernels by them, and
// cuda/elementwise.cu computes them (unary_value, binary_value). Adding a kind means adding it
// here, its name at the same place, and its case in cuda/elementwise.cu.
// Plain C++17 with no CUDA header: host code includes it in builds without the CUDA toolkit too.
#pragma once

namespace hg::cuda {

enum UnaryCode : int {
  kNeg,         // -x
  kExp,         // e^x
  kLog,         // ln x
  kSqrt,        // √x
  kRelu,        // max(x, 0)
  kTanh,        // tanh x
  kGelu,        // x Φ(x), exact erf
  kPow,         // x^s
  kAddScalar,   // x + s
  kMulScalar,   // x · s
  kRsubScalar,  // s − x
  kRdivScalar,  // s / x
  kSoftplus,    // log(1 + e^x), stably
  kSin,         // sin x
  kCos,         // cos x
  kTan,         // tan x
  kAsin,        // asin x
  kAcos,        // acos x
  kAtan,        // atan x
  kSinh,        // sinh x
  kCosh,        // cosh x
  kAsinh,       // asinh x
  kAcosh,       // acosh x
  kAtanh,       // atanh x
  kSigmoid,     // 1 / (1 + e^−x), stably
  kSilu,        // x σ(x)
  kLog1p,       // ln(1 + x)
  kExpm1,       // e^x − 1
  kLog2,        // log₂ x
  kExp2,        // 2^x
  kReciprocal,  // 1 / x
  kRsqrt,       // 1 / √x
  kSquare,      // x²
  kAbs,         // |x|
  kSign,        // sign x (±0 and NaN stay)
  kFloor,       // ⌊x⌋
  kCeil,        // ⌈x⌉
  kRound,       // x rounded half to even
  kTrunc,       // x rounded toward 0
  kErf,         // erf x
  kErfc,        // 1 − erf x, without cancellation
  kErfinv,      // erf⁻¹ x (cpu/pointwise_rules.h)
  kLog10,       // log₁₀ x
  kUnaryCount
};
inline constexpr const char* kUnaryNames[] = {
    "neg", "exp", "log", "sqrt", "relu", "tanh", "gelu", "pow", "add_scalar", "mul_scalar", "rsub_scalar",
    "rdiv_scalar", "softplus", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
    "atanh", "sigmoid", "silu", "log1p", "expm1", "log2", "exp2", "reciprocal", "rsqrt", "square", "abs", "sign",
    "floor", "ceil", "round", "trunc", "erf", "erfc", "erfinv", "log10",
};
static_assert(sizeof(kUnaryNames) / sizeof(kUnaryNames[0]) == kUnaryCount, "a name for each UnaryCode, in order");

// For the *_backward kinds a is the incoming gradient g and b the saved tensor (x or y).
enum BinaryCode : int {
  kAdd,           // a + b
  kSub,           // a − b
  kMul,           // a · b
  kDiv,           // a / b
  kReluBackward,  // (g, x) -> g · [x > 0]
  kTanhBackward,  // (g, y) -> g (1 − y²), y = tanh x
  kGeluBackward,  // (g, x) -> g (Φ(x) + x φ(x))
  kSoftplusBackward,  // (g, x) -> g σ(x)
  kPowTensor,     // a^b
  // ops/pointwise.cpp's, by cpu/pointwise_rules.h where C's function is not the whole rule
  kAtan2,         // atan2(a, b)
  kFmod,          // fmod(a, b)
  kRemainder,     // a − b⌊a/b⌋, the exact quotient
  kFloorDivide,   // ⌊a/b⌋, the exact quotient
  kXlogy,         // a ln b, 0 at a = 0
  kCopysign,      // |a| with b's sign bit
  kFmax,          // max, NaN losing
  kFmin,          // min, NaN losing
  kLogaddexp,     // ln(eᵃ + eᵇ)
  kLogaddexp2,    // log₂(2ᵃ + 2ᵇ)
  kHypot,         // √(a² + b²)
  kBinaryCount
};
inline constexpr const char* kBinaryNames[] = {
    "add", "sub", "mul", "div", "relu_backward", "tanh_backward", "gelu_backward", "softplus_backward", "pow_tensor",
    "atan2", "fmod", "remainder", "floor_divide", "xlogy", "copysign", "fmax", "fmin", "logaddexp",
    "logaddexp2", "hypot",
};
static_assert(sizeof(kBinaryNames) / sizeof(kBinaryNames[0]) == kBinaryCount, "a name for each BinaryCode, in order");

}  // namespace hg::cuda
