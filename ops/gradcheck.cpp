#include "ops/gradcheck.h"

#include <fmt/format.h>

#include <cmath>

#include "engine/error.h"
#include "engine/random.h"
#include "engine/tape.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace hg {

std::string GradcheckReport::message() const {
  if (passed) return fmt::format("passed: {} elements, max abs err {:.3g}, max rel err {:.3g}", checked, max_abs_err, max_rel_err);
  return fmt::format("FAILED: worst element {}; max abs err {:.3g}, max rel err {:.3g}", worst, max_abs_err, max_rel_err);
}

Tensor noncontiguous_copy(const Tensor& x) {
  if (x.dim() == 0 || x.numel() <= 1) return x.detach().clone();
  Shape wide = x.shape();
  wide.back() *= 2;
  Tensor buf = full(wide, std::nan(""), x.dtype());  // the gaps hold NaN: reading one would show
  NoGradGuard ng;
  Tensor v = buf.slice(-1, 0, wide.back(), 2);
  v.copy_(x.detach());
  return v.detach();
}

namespace {

double eval_scalar(const TensorFn& f, const std::vector<Tensor>& xs, const Tensor& weights) {
  NoGradGuard ng;
  Tensor out = f(xs);
  return weights.defined() ? sum(mul(out, weights)).item() : out.item();
}

// Perturbs element i of x by +eps and -eps (restoring it after) and returns the central difference.
double central_difference(const TensorFn& f, const std::vector<Tensor>& xs, const Tensor& x, int64_t i,
                          const Tensor& weights, double eps) {
  NoGradGuard ng;
  const double x0 = x.get_flat(i);
  x.detach().set_flat(i, x0 + eps);
  const double up = eval_scalar(f, xs, weights);
  x.detach().set_flat(i, x0 - eps);
  const double down = eval_scalar(f, xs, weights);
  x.detach().set_flat(i, x0);
  return (up - down) / (2 * eps);
}

void check_layout(const TensorFn& f, const std::vector<Tensor>& originals, bool noncontig,
                  const GradcheckOptions& o, GradcheckReport& rep) {
  std::vector<Tensor> xs;
  for (const Tensor& x : originals) {
    if (!x.defined() || !x.requires_grad()) {
      xs.push_back(x);
      continue;
    }
    if (x.dtype() != DType::f64)
      fail("gradcheck", "input {} is {}; finite differences need float64 inputs (use .to(DType::f64))",
           x.describe(), dtype_name(x.dtype()));
    Tensor c = noncontig ? noncontiguous_copy(x) : x.detach().clone();
    c.requires_grad_();
    xs.push_back(c);
  }
  Tensor out = f(xs);
  if (!out.defined()) fail("gradcheck", "the function returned an undefined tensor");
  Generator gen(o.seed);
  Tensor weights = randn(out.shape(), gen, out.dtype());
  for (double v : out.to_vector())
    if (!std::isfinite(v)) fail("gradcheck", "the function's output {} holds a non-finite value", out.describe());
  if (out.requires_grad()) sum(mul(out, weights)).backward();

  const char* layout = noncontig ? "non-contiguous" : "contiguous";
  for (size_t k = 0; k < xs.size(); ++k) {
    if (!xs[k].defined() || !xs[k].requires_grad()) continue;
    Tensor analytic = xs[k].grad();
    std::vector<double> a = analytic.defined() ? analytic.to_vector() : std::vector<double>(xs[k].numel(), 0.0);
    for (int64_t i = 0; i < xs[k].numel(); ++i) {
      double num = central_difference(f, xs, xs[k], i, weights, o.eps);
      double err = std::abs(a[i] - num);
      ++rep.checked;
      const double bound = o.atol + o.rtol * std::abs(num);
      const double violation = std::isfinite(a[i]) ? err / bound : INFINITY;  // > 1 fails
      rep.max_abs_err = std::max(rep.max_abs_err, err);
      if (std::abs(num) > o.atol) rep.max_rel_err = std::max(rep.max_rel_err, err / std::abs(num));
      if (violation > rep.worst_violation || rep.worst.empty()) {
        rep.worst_violation = violation;
        rep.worst = fmt::format("input {} {} ({}): analytic {:.10g}, numeric {:.10g}{}", k,
                                index_str(xs[k].shape(), i), layout, a[i], num,
                                analytic.defined() ? "" : " (no gradient reached this input)");
      }
      if (violation > 1.0) rep.passed = false;
    }
  }
}

}  // namespace

GradcheckReport gradcheck(const TensorFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& o) {
  GradcheckReport rep;
  check_layout(f, inputs, false, o, rep);
  if (o.noncontiguous) check_layout(f, inputs, true, o, rep);
  return rep;
}

Tensor numeric_gradient(const TensorFn& f, const std::vector<Tensor>& inputs, size_t which, double eps) {
  if (which >= inputs.size()) fail("numeric_gradient", "input {} of {}", which, inputs.size());
  const Tensor& x = inputs[which];
  if (x.dtype() != DType::f64) fail("numeric_gradient", "input {} must be float64", x.describe());
  std::vector<Tensor> xs = inputs;
  xs[which] = x.detach().clone();
  Tensor g = zeros(x.shape(), DType::f64);
  for (int64_t i = 0; i < x.numel(); ++i) g.set_flat(i, central_difference(f, xs, xs[which], i, Tensor(), eps));
  return g;
}

}  // namespace hg
