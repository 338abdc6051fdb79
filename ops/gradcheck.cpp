#include "ops/gradcheck.h"

#include <fmt/format.h>

#include <cmath>

#include "engine/backend.h"
#include "engine/error.h"
#include "engine/forward.h"
#include "engine/interrupt.h"
#include "engine/random.h"
#include "engine/tape.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace hg {

std::string GradcheckReport::message() const {
  const char* on = device_name(device);
  if (passed)
    return fmt::format("passed on {}: {} elements, max abs err {:.3g}, max rel err {:.3g}", on, checked, max_abs_err,
                       max_rel_err);
  return fmt::format("FAILED on {}: worst element {}; max abs err {:.3g}, max rel err {:.3g}", on, worst, max_abs_err,
                     max_rel_err);
}

Tensor noncontiguous_copy(const Tensor& x) {
  if (x.dim() == 0 || x.numel() <= 1) return x.detach().clone();
  Shape wide = x.shape();
  wide.back() *= 2;
  Tensor buf = full(wide, std::nan(""), x.dtype(), x.device());  // the gaps hold NaN: reading one would show
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

// Element i (row-major) of x as a 0-d view of its storage: fill_ on it writes that one element in
// place, in x's own layout, on either device (set_flat is CPU-only).
Tensor element(const Tensor& x, int64_t i) {
  std::vector<int64_t> index(static_cast<size_t>(x.dim()));
  for (int64_t d = x.dim() - 1; d >= 0; --d) {
    index[static_cast<size_t>(d)] = i % x.size(d);
    i /= x.size(d);
  }
  Tensor e = x.detach();
  for (int64_t k : index) e = e.select(0, k);
  return e;
}

// Sets element i of x to x0 + eps and x0 - eps, restoring x0 after, and returns the central
// difference. x0 is the element's value, read by the caller from a host copy of x.
double central_difference(const TensorFn& f, const std::vector<Tensor>& xs, const Tensor& x, int64_t i, double x0,
                          const Tensor& weights, double eps) {
  NoGradGuard ng;
  Tensor xi = element(x, i);
  xi.fill_(x0 + eps);
  const double up = eval_scalar(f, xs, weights);
  xi.fill_(x0 - eps);
  const double down = eval_scalar(f, xs, weights);
  xi.fill_(x0);
  return (up - down) / (2 * eps);
}

// The inputs on the check's device: masks, indices and constants as plain copies, the float64
// inputs that require grad as fresh leaves there (laid out non-contiguously when asked).
std::vector<Tensor> layout_inputs(const char* check, const std::vector<Tensor>& originals, bool noncontig, Device device) {
  std::vector<Tensor> xs;
  for (const Tensor& x : originals) {
    if (!x.defined()) {
      xs.push_back(x);
      continue;
    }
    if (!x.requires_grad()) {
      xs.push_back(x.detach().to(device));
      continue;
    }
    if (x.dtype() != DType::f64)
      fail(check, "input {} is {}; finite differences need float64 inputs (use .to(DType::f64))",
           x.describe(), dtype_name(x.dtype()));
    Tensor on_device = x.detach().to(device);
    Tensor c = noncontig ? noncontiguous_copy(on_device) : on_device.clone();
    c.requires_grad_();
    xs.push_back(c);
  }
  return xs;
}

void check_output(const char* check, const Tensor& out, Device device) {
  if (!out.defined()) fail(check, "the function returned an undefined tensor");
  if (out.device() != device)
    fail(check, "the function's output {} is on {}, but the check runs on {}: f must compute on the device "
         "of its inputs", out.describe(), device_name(out.device()), device_name(device));
}

void check_layout(const TensorFn& f, const std::vector<Tensor>& originals, bool noncontig,
                  const GradcheckOptions& o, GradcheckReport& rep) {
  std::vector<Tensor> xs = layout_inputs("gradcheck", originals, noncontig, o.device);
  Tensor out = f(xs);
  check_output("gradcheck", out, o.device);
  Generator gen(o.seed);
  Tensor weights = randn(out.shape(), gen, out.dtype()).to(o.device);
  for (double v : out.to_vector())
    if (!std::isfinite(v)) fail("gradcheck", "the function's output {} holds a non-finite value", out.describe());
  if (out.requires_grad()) sum(mul(out, weights)).backward();

  const char* layout = noncontig ? "non-contiguous" : "contiguous";
  for (size_t k = 0; k < xs.size(); ++k) {
    if (!xs[k].defined() || !xs[k].requires_grad()) continue;
    Tensor analytic = xs[k].grad();
    std::vector<double> a = analytic.defined() ? analytic.to_vector() : std::vector<double>(xs[k].numel(), 0.0);
    const std::vector<double> x0 = xs[k].to_vector();  // one read from the device, not one per element
    for (int64_t i = 0; i < xs[k].numel(); ++i) {
      check_interrupt();
      double num = central_difference(f, xs, xs[k], i, x0[i], weights, o.eps);
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
  if (o.device == Device::cuda) require_cuda("gradcheck");  // says why not (no GPU, no CUDA build) before any work
  GradcheckReport rep;
  rep.device = o.device;
  check_layout(f, inputs, false, o, rep);
  if (o.noncontiguous) check_layout(f, inputs, true, o, rep);
  return rep;
}

GradcheckReport gradgradcheck(const TensorFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& o) {
  Tensor out0;
  {
    NoGradGuard ng;
    out0 = f(inputs);
  }
  if (!out0.defined()) fail("gradgradcheck", "the function returned an undefined tensor");
  Generator gen(o.seed + 1);
  std::vector<size_t> wrt;  // the inputs that require grad
  std::vector<Tensor> W;    // one fixed random weight per such input, on the host
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].defined() && inputs[k].requires_grad()) {
      wrt.push_back(k);
      W.push_back(randn(inputs[k].shape(), gen, DType::f64));
    }
  if (wrt.empty()) fail("gradgradcheck", "no input requires grad; mark the inputs to check with requires_grad_()");
  TensorFn h = [f, wrt, W](const std::vector<Tensor>& xs) {
    GradModeGuard on(true);  // h differentiates inside, also when gradcheck evaluates it without grad
    std::vector<Tensor> x(xs.begin(), xs.end() - 1);
    const Tensor& R = xs.back();
    std::vector<Tensor> targets;
    for (size_t k : wrt) targets.push_back(x[k]);
    std::vector<Tensor> g = grad({sum(mul(f(x), R))}, targets, {}, {.create_graph = true, .allow_unused = true});
    Tensor total;
    for (size_t i = 0; i < g.size(); ++i) {
      if (!g[i].defined()) continue;  // this input does not reach the output: its gradient is 0
      Tensor term = sum(mul(g[i], W[i].to(g[i].device())));
      total = total.defined() ? add(total, term) : term;
    }
    return total.defined() ? total : zeros({}, DType::f64, R.device());
  };
  std::vector<Tensor> hx = inputs;
  hx.push_back(randn(out0.shape(), gen, DType::f64).to(out0.device()).requires_grad_());  // R
  return gradcheck(h, hx, o);
}

std::string FwdcheckReport::message() const {
  std::string s = GradcheckReport::message();
  return s + fmt::format("; transpose identity rel err {:.3g}{}", transpose_rel_err,
                         transpose_passed ? "" : " (FAILED: reverse mode disagrees)");
}

namespace {

// One layout of fwdcheck: the tangent along random directions u against central differences
// (f(x + εu) − f(x − εu)) / 2ε, element by element, and ⟨w, J u⟩ against ⟨Jᵀ w, u⟩.
void fwd_layout(const TensorFn& f, const std::vector<Tensor>& originals, bool noncontig, const GradcheckOptions& o,
                double transpose_rtol, FwdcheckReport& rep) {
  std::vector<Tensor> xs = layout_inputs("fwdcheck", originals, noncontig, o.device);
  Generator gen(o.seed + 7);
  std::vector<Tensor> us(xs.size());  // a direction per input that moves (requires grad)
  for (size_t k = 0; k < xs.size(); ++k)
    if (xs[k].defined() && xs[k].requires_grad()) {
      Tensor u = randn(xs[k].shape(), gen, DType::f64).to(o.device);
      us[k] = noncontig ? noncontiguous_copy(u) : u;
    }
  JvpResult r;
  {
    NoGradGuard ng;  // forward mode alone: no node is recorded
    r = jvp([&](const std::vector<Tensor>& x) { return std::vector<Tensor>{f(x)}; }, xs, us);
  }
  const Tensor& out = r.outputs[0];
  check_output("fwdcheck", out, o.device);
  auto moved = [&](double step) {  // the inputs at x + step·u, in the same layout
    NoGradGuard ng;
    std::vector<Tensor> m = xs;
    for (size_t k = 0; k < xs.size(); ++k)
      if (us[k].defined()) {
        Tensor v = add(xs[k].detach(), mul(us[k], step));
        m[k] = noncontig ? noncontiguous_copy(v) : v;
      }
    return f(m).to_vector();
  };
  const std::vector<double> up = moved(o.eps), down = moved(-o.eps), analytic = r.tangents[0].to_vector();
  const char* layout = noncontig ? "non-contiguous" : "contiguous";
  for (size_t i = 0; i < analytic.size(); ++i) {
    const double num = (up[i] - down[i]) / (2 * o.eps), err = std::abs(analytic[i] - num);
    ++rep.checked;
    const double violation = std::isfinite(analytic[i]) ? err / (o.atol + o.rtol * std::abs(num)) : INFINITY;
    rep.max_abs_err = std::max(rep.max_abs_err, err);
    if (std::abs(num) > o.atol) rep.max_rel_err = std::max(rep.max_rel_err, err / std::abs(num));
    if (violation > rep.worst_violation || rep.worst.empty()) {
      rep.worst_violation = violation;
      rep.worst = fmt::format("output {} ({}): tangent {:.10g}, numeric {:.10g}", index_str(out.shape(), static_cast<int64_t>(i)),
                              layout, analytic[i], num);
    }
    if (violation > 1.0) rep.passed = false;
  }
  // The transpose identity: ⟨w, J u⟩ = ⟨Jᵀ w, u⟩, with Jᵀ w from one backward.
  Tensor w = randn(out.shape(), gen, DType::f64).to(o.device);
  double jvp_side = 0, vjp_side = 0, scale = 0;
  {
    NoGradGuard ng;
    const std::vector<double> wv = w.to_vector();
    for (size_t i = 0; i < wv.size(); ++i) {
      jvp_side += wv[i] * analytic[i];
      scale += std::abs(wv[i] * analytic[i]);
    }
  }
  std::vector<Tensor> wrt;
  std::vector<size_t> at;
  for (size_t k = 0; k < xs.size(); ++k)
    if (us[k].defined()) {
      wrt.push_back(xs[k]);
      at.push_back(k);
    }
  Tensor y = f(xs);
  if (y.requires_grad() && !wrt.empty()) {
    std::vector<Tensor> g = grad({sum(mul(y, w))}, wrt, {}, {.allow_unused = true});
    NoGradGuard ng;
    for (size_t j = 0; j < g.size(); ++j) {
      if (!g[j].defined()) continue;
      const std::vector<double> gv = g[j].to_vector(), uv = us[at[j]].to_vector();
      for (size_t i = 0; i < gv.size(); ++i) {
        vjp_side += gv[i] * uv[i];
        scale += std::abs(gv[i] * uv[i]);
      }
    }
  }
  const double rel = std::abs(jvp_side - vjp_side) / std::max(scale, 1e-300);
  rep.transpose_rel_err = std::max(rep.transpose_rel_err, std::isfinite(rel) ? rel : INFINITY);
  if (!(rel <= transpose_rtol)) {
    rep.transpose_passed = false;
    rep.passed = false;
  }
}

}  // namespace

FwdcheckReport fwdcheck(const TensorFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& o,
                        double transpose_rtol) {
  if (o.device == Device::cuda) require_cuda("fwdcheck");
  FwdcheckReport rep;
  rep.device = o.device;
  fwd_layout(f, inputs, false, o, transpose_rtol, rep);
  if (o.noncontiguous) fwd_layout(f, inputs, true, o, transpose_rtol, rep);
  return rep;
}

Tensor numeric_gradient(const TensorFn& f, const std::vector<Tensor>& inputs, size_t which, double eps) {
  if (which >= inputs.size()) fail("numeric_gradient", "input {} of {}", which, inputs.size());
  const Tensor& x = inputs[which];
  if (x.dtype() != DType::f64) fail("numeric_gradient", "input {} must be float64", x.describe());
  std::vector<Tensor> xs = inputs;
  xs[which] = x.detach().clone();  // perturbed in place; the caller's tensor is never written
  const std::vector<double> x0 = x.to_vector();
  std::vector<double> g(x0.size());
  for (int64_t i = 0; i < x.numel(); ++i) {
    check_interrupt();
    g[i] = central_difference(f, xs, xs[which], i, x0[i], Tensor(), eps);
  }
  return tensor(g, x.shape(), DType::f64).to(x.device());
}

}  // namespace hg
