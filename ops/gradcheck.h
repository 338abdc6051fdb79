// ops/gradcheck.h — the one gradient check every op goes through.
//
// float64 central differences against the tape's backward. The function's output is reduced to a
// scalar with fixed random weights, L = sum(f(x) * R), so one backward gives the analytic
// gradient of every input element, and each numeric derivative is (L(x + eps) - L(x - eps)) / 2eps.
// A random R checks every output direction at once (a wrong Jacobian entry cannot hide unless it
// is orthogonal to R, which has probability zero). Tolerances are PyTorch's defaults:
// an element passes when |analytic - numeric| <= atol + rtol * |numeric|.
//
// The check runs on one device (GradcheckOptions::device): the inputs are copied there, and the
// forward, the backward and every perturbed evaluation run there; only each evaluation's scalar L
// and the finished gradients come back to the host. So the same cases check the CPU kernels and,
// with Device::cuda, the CUDA kernels behind the same ops.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace hg {

using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  bool noncontiguous = true;    // also check with every input laid out non-contiguously
  uint64_t seed = 1234;         // for the output weights R (drawn on the host: the same R on every device)
  Device device = Device::cpu;  // where the whole check runs; the inputs are copied there
};

struct GradcheckReport {
  bool passed = true;
  double max_abs_err = 0.0;  // max |analytic - numeric| over all checked elements
  double max_rel_err = 0.0;  // max |analytic - numeric| / |numeric| over elements with |numeric| > atol
  int64_t checked = 0;       // elements compared
  std::string worst;         // "input 1 [2, 0] (non-contiguous): analytic 0.123, numeric 0.124"
  double worst_violation = 0.0;  // that element's error / (atol + rtol |numeric|); > 1 fails
  Device device = Device::cpu;   // where the check ran
  std::string message() const;   // "passed on cuda: ..." or "FAILED on cuda: worst element ..."
};

// Checks d f / d x for every input that requires grad (they must be float64; the others, such
// as masks and indices, are held constant). The inputs themselves are never modified. Every
// input, whatever its device, is copied to opts.device: one that requires grad becomes a fresh
// leaf there. f must compute on its inputs' device: a tensor it makes itself (a mask, a constant)
// belongs on x[0].device(), or is better passed in as an input that does not require grad.
GradcheckReport gradcheck(const TensorFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& opts = {});

// The second-order check (torch.autograd.gradgradcheck): checks that the backward of f is itself
// differentiated correctly, by running gradcheck on the function
//   h(x, R) = Σ_k < dL/dx_k , W_k >,   L = < f(x), R >,   dL/dx_k computed by grad(create_graph)
// with fixed random W_k. R, the gradient flowing into f's backward, is an input of h too, so the
// backward is checked along its incoming gradient as well as along x. Same tolerances and
// layouts as gradcheck. An op whose backward cannot be differentiated throws an hg::Error that
// says "double backward of <op> is not implemented".
GradcheckReport gradgradcheck(const TensorFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& opts = {});

// The forward-mode check: f's tangent (jvp, engine/forward.h) along a fixed random direction u
// for every input that requires grad, against the central difference (f(x + eps u) − f(x − eps u))
// / 2eps, output element by output element with gradcheck's tolerances; and the transpose
// identity ⟨w, J u⟩ = ⟨Jᵀ w, u⟩ for a random w, whose right side is one reverse-mode backward —
// the two modes held to each other, to `transpose_rtol` relative to the sum of the absolute terms
// (both sides are the same sum in a different order, so only rounding separates them). Same
// layouts (contiguous, then non-contiguous inputs and directions) and devices as gradcheck. An op
// without a tangent rule throws the hg::Error that names it.
struct FwdcheckReport : GradcheckReport {
  double transpose_rel_err = 0.0;  // |⟨w, J u⟩ − ⟨Jᵀ w, u⟩| / Σ|terms|, the worse layout's
  bool transpose_passed = true;
  std::string message() const;
};
FwdcheckReport fwdcheck(const TensorFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& opts = {},
                        double transpose_rtol = 1e-10);

// Central-difference gradient of a scalar-valued f with respect to inputs[which] (float64),
// for labs that show "finite differences" beside the formula and the tape. It runs where the
// inputs are (f is evaluated on them as given) and returns the gradient on inputs[which]'s device.
Tensor numeric_gradient(const TensorFn& f, const std::vector<Tensor>& inputs, size_t which, double eps = 1e-6);

// The same values laid out non-contiguously (every other element of a wider buffer), on x's device.
Tensor noncontiguous_copy(const Tensor& x);

}  // namespace hg
