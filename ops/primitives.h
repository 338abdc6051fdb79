// ops/primitives.h — the floor of ops/: broadcasting, the reductions, the elementwise ops and what
// the ops' tangent rules share, declared together because each one's derivative is written with the
// others. expand's backward is a sum (sum_to) and sum's backward an expand; an elementwise op's
// backward sums its gradient down to a broadcast operand's shape and its tangent adds terms
// (tangent_sum), which adds and expands. Declared apart, their headers and sources would include
// one another round a loop.
//
// The rules every op family shares are stated here once: which operands an op takes and how they
// promote (require_defined, require_float, floated, is_integral, is_whole_number), which dims a
// reduction reduces (reduction), and how a unary op records f' (with_derivative); the strided loop
// of every elementwise kernel is ops/cpu_map.h's strided_map2.
//
// Their sources (ops/broadcast.cpp, ops/reduce.cpp, ops/elementwise.cpp, ops/elementwise_math.cpp,
// ops/tangent.cpp) include this header and, of ops/, only ops/cpu_map.h, ops/device.h,
// ops/registry.h and ops/integer.h (an integer operand's exact arithmetic), which include nothing
// above them. Every other op family sits above this floor and includes the header named for what
// it uses (ops/broadcast.h, ops/reduce.h, ops/elementwise.h, ops/tangent.h), each of which
// includes this one.
//
// Every op ends with `Site where`, defaulted to the caller's line (the operators below pass on
// their own line instead).
#pragma once
#include <cmath>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "engine/tensor.h"

namespace hg {

struct OpDef;

// ---------------------------------------------------------------- operands (ops/broadcast.cpp)
// What an op takes, checked once: an Error naming the op, the tensor and what to do.

// t must be defined ("<op>: <what> is undefined").
void require_defined(const char* op, const Tensor& t, const char* what = "the input");
// t must be defined and float32 or float64.
void require_float(const char* op, const Tensor& t, const char* what = "the input");

// The two operands in one float dtype, PyTorch's promotion: an int64 or bool one takes the other's
// float dtype (it carries no gradient), two of them compute in float32; two floats stay as they
// are (of different widths, the op's dtype-mismatch error).
std::pair<Tensor, Tensor> floated(const char* op, const Tensor& a, const Tensor& b);

// Whether t is int64 or bool (defined), and whether s is a whole number an int64 holds: an int64
// or bool tensor meets such a number as an integer and any other as float32 (PyTorch's promotion).
inline bool is_integral(const Tensor& t) { return t.defined() && !is_floating(t.dtype()); }
inline bool is_whole_number(double s) { return std::isfinite(s) && s == std::trunc(s) && std::abs(s) < 9.2e18; }

// ---------------------------------------------------------------- broadcasting (ops/broadcast.cpp)
// numpy broadcasting: the shape two operands broadcast to, expand (a stride-0 view) and its
// adjoint sum_to (sum a gradient back down to an operand's shape).

// The broadcast of shapes a and b, or an Error naming `op` and both shapes.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// Strides that read x as if it had shape `to` (0 on broadcast dimensions).
Shape broadcast_strides(const char* op, const Tensor& x, const Shape& to);

// A view of x with shape `to` (broadcast dimensions get stride 0). Backward: sum_to(g, x.shape).
Tensor expand(const Tensor& x, const Shape& to, Site where = Site::current());
// Sum g over the dimensions that broadcasting added or stretched, giving shape `to`.
Tensor sum_to(const Tensor& g, const Shape& to);

// Both inputs must share dtype and device; otherwise an Error naming op, both shapes and the fix.
void check_same_dtype_device(const char* op, const Tensor& a, const Tensor& b);

// ---------------------------------------------------------------- reductions (ops/reduce.cpp)
// sum, mean and max over dimensions, with keepdim.

// Which dims a reduction of x reduces, as PyTorch reads `dims`: each wrapped by the dim rule (a
// 0-d tensor takes 0 and −1, and has nothing to reduce), none twice, and an empty list meaning
// every dimension. Every reduction (sum, mean, max, amax, logsumexp, var) plans with it.
struct Reduction {
  Shape dims;        // the reduced dims, ascending (empty only for a 0-d x)
  Shape order;       // x's dims with the reduced ones moved last: kept..., reduced...
  Shape keep_shape;  // the result's shape with keepdim: x's, with 1 on each reduced dim
  Shape out_shape;   // the result's shape as asked (keepdim or not)
  int64_t nrows = 1;  // result elements: the product of the kept sizes
  int64_t ncols = 1;  // entries each one reduces: the product of the reduced sizes
};
Reduction reduction(const char* op, const Tensor& x, const Shape& dims, bool keepdim);

Tensor sum(const Tensor& x, Site where = Site::current());  // all elements -> 0-d
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim = false, Site where = Site::current());
Tensor mean(const Tensor& x, Site where = Site::current());
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim = false, Site where = Site::current());
// Largest value along `dim`. Backward sends the gradient to the first position holding the max.
Tensor max(const Tensor& x, int64_t dim, bool keepdim = false, Site where = Site::current());
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);  // i64, not differentiable

// ---------------------------------------------------------------- elementwise (ops/elementwise.cpp)
// Elementwise ops with numpy broadcasting (float32 / float64): forward kernels and hand-derived
// backward rules are in ops/elementwise.cpp, the functions of a learner's API in
// ops/elementwise_math.cpp.

// Binary, broadcasting.
Tensor add(const Tensor& a, const Tensor& b, Site where = Site::current());
Tensor sub(const Tensor& a, const Tensor& b, Site where = Site::current());
Tensor mul(const Tensor& a, const Tensor& b, Site where = Site::current());
Tensor div(const Tensor& a, const Tensor& b, Site where = Site::current());

// With a scalar.
Tensor add(const Tensor& a, double s, Site where = Site::current());
Tensor mul(const Tensor& a, double s, Site where = Site::current());
Tensor rsub(const Tensor& a, double s, Site where = Site::current());  // s - a
Tensor rdiv(const Tensor& a, double s, Site where = Site::current());  // s / a

// Unary.
Tensor neg(const Tensor& x, Site where = Site::current());
Tensor exp(const Tensor& x, Site where = Site::current());
Tensor log(const Tensor& x, Site where = Site::current());
Tensor pow(const Tensor& x, double p, Site where = Site::current());
Tensor sqrt(const Tensor& x, Site where = Site::current());
Tensor relu(const Tensor& x, Site where = Site::current());
Tensor tanh(const Tensor& x, Site where = Site::current());
Tensor gelu(const Tensor& x, Site where = Site::current());  // exact: x * Phi(x), Phi the standard normal CDF (PyTorch's default)
Tensor softplus(const Tensor& x, Site where = Site::current());  // log(1 + e^x), computed without overflow

// The elementwise functions of ops/elementwise_math.cpp, PyTorch's names (each f' by hand there).
Tensor sin(const Tensor& x, Site where = Site::current());
Tensor cos(const Tensor& x, Site where = Site::current());
Tensor tan(const Tensor& x, Site where = Site::current());
Tensor asin(const Tensor& x, Site where = Site::current());
Tensor acos(const Tensor& x, Site where = Site::current());
Tensor atan(const Tensor& x, Site where = Site::current());
Tensor sinh(const Tensor& x, Site where = Site::current());
Tensor cosh(const Tensor& x, Site where = Site::current());
Tensor asinh(const Tensor& x, Site where = Site::current());
Tensor acosh(const Tensor& x, Site where = Site::current());
Tensor atanh(const Tensor& x, Site where = Site::current());
Tensor sigmoid(const Tensor& x, Site where = Site::current());
Tensor silu(const Tensor& x, Site where = Site::current());
Tensor log1p(const Tensor& x, Site where = Site::current());
Tensor expm1(const Tensor& x, Site where = Site::current());
Tensor log2(const Tensor& x, Site where = Site::current());
Tensor exp2(const Tensor& x, Site where = Site::current());
Tensor log10(const Tensor& x, Site where = Site::current());
Tensor erf(const Tensor& x, Site where = Site::current());
Tensor erfc(const Tensor& x, Site where = Site::current());  // 1 − erf x, accurate where erf x is near 1
Tensor erfinv(const Tensor& x, Site where = Site::current());  // erf's inverse on [−1, 1] (±1: ±inf)
Tensor reciprocal(const Tensor& x, Site where = Site::current());
Tensor rsqrt(const Tensor& x, Site where = Site::current());
Tensor square(const Tensor& x, Site where = Site::current());
Tensor abs(const Tensor& x, Site where = Site::current());  // its gradient at 0 is 0, as PyTorch's
Tensor sign(const Tensor& x, Site where = Site::current());
Tensor floor(const Tensor& x, Site where = Site::current());
Tensor ceil(const Tensor& x, Site where = Site::current());
Tensor round(const Tensor& x, Site where = Site::current());  // half to even, as PyTorch
Tensor trunc(const Tensor& x, Site where = Site::current());

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, double s) { return add(a, s); }
inline Tensor operator+(double s, const Tensor& a) { return add(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return add(a, -s); }
inline Tensor operator-(double s, const Tensor& a) { return rsub(a, s); }
inline Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
inline Tensor operator*(double s, const Tensor& a) { return mul(a, s); }
// An int64 or bool tensor divides as float32 (true division), as in PyTorch.
inline Tensor operator/(const Tensor& a, double s) {
  return mul(a.defined() && !is_floating(a.dtype()) ? a.to(DType::f32) : a, 1.0 / s);
}
inline Tensor operator/(double s, const Tensor& a) { return rdiv(a, s); }

// ---------------------------------------------------------------- unary derivatives (ops/elementwise.cpp)
// out = f(x) elementwise, so by the chain rule, per element (g = dL/dout):
//   backward  dx = g · f'(x)        tangent  ȯ = f'(x) · ẋ
// — one derivative serves both. An op writes `chain(v, saved)` = v · f' once, computing f' from
// what it saves (x, or out where f' reads more simply from it) with recorded ops, so the gradient
// can be differentiated again (create_graph); with_derivative records it as the backward (v = g)
// and the tangent (v = ẋ). Where a fused kernel computes g · f' in one pass, it is given as
// `fused`: the engine runs it when no graph is being created, and `chain` under create_graph
// (gradgradcheck holds the two to each other). A piecewise-constant f (Keep::nothing) passes a
// zero gradient and tangent, as PyTorch's.
enum class Keep { input, output, nothing };
using Chain = std::function<Tensor(const Tensor& v, const Tensor& saved)>;
Tensor with_derivative(const OpDef& def, Keep keep, const Tensor& x, const Tensor& out, Chain chain, Site where,
                       Chain fused = {});

// ---------------------------------------------------------------- tangent helpers (ops/tangent.cpp)
// What the ops' tangent rules (forward mode, engine/forward.h) share. A rule is given one tangent
// per input, undefined where that input carries none, and returns one per output. Most are sums of
// terms, one per moving input (ȯ = ȧ b + a ḃ): a term is computed only when its input moves, and
// the sum of no terms is no tangent at all.

// f(dot) when the tangent dot is defined, else an undefined Tensor (the term is absent).
template <typename F>
Tensor if_tangent(const Tensor& dot, F f) {
  return dot.defined() ? f(dot) : Tensor();
}

// The defined terms added, read at `shape` (a term of a broadcast operand's shape is expanded to
// it); undefined when every term is.
Tensor tangent_sum(std::initializer_list<Tensor> terms, const Shape& shape);

}  // namespace hg
