// tests/cases/gradcheck_cases.h — every differentiable op, as a gradcheck case on fresh random inputs.
// Used by the doctest suites (one assertion per case) and by the `gradcheck` program (one table).
//
// A case runs unchanged on either device: gradcheck copies its inputs to the device being
// checked, so a case's fn builds nothing on a fixed device. Masks, index tensors and constants
// are inputs that do not require grad (gradcheck moves them with the rest); any tensor that fn
// still has to make itself belongs on x[0].device().
#pragma once
#include <string>
#include <vector>

#include "handgrad.h"

namespace hg::cases {

struct GradcheckCase {
  std::string op;       // "softmax"
  std::string variant;  // "dim 0, broadcast", "causal", ...
  TensorFn fn;
  std::vector<Tensor> inputs;  // float64 leaves that require grad; masks and indices do not
  // Why the case cannot run on CUDA yet (its op has no CUDA kernel); empty when it can.
  std::string not_on_cuda = {};

  bool runs_on(Device d) const { return d == Device::cpu || not_on_cuda.empty(); }
};

// All cases, built from a fixed seed (the same inputs run after run).
std::vector<GradcheckCase> all_cases(uint64_t seed = 7);

// One function per op family, each in its own tests/cases/cases_<family>.cpp.
void add_view_cases(std::vector<GradcheckCase>& out, Generator& gen);         // cases_views.cpp
void add_elementwise_cases(std::vector<GradcheckCase>& out, Generator& gen);  // cases_elementwise.cpp
void add_reduce_cases(std::vector<GradcheckCase>& out, Generator& gen);       // cases_reduce.cpp
void add_normalization_cases(std::vector<GradcheckCase>& out, Generator& gen);  // cases_normalization.cpp
void add_rearrange_cases(std::vector<GradcheckCase>& out, Generator& gen);    // cases_rearrange.cpp
void add_matmul_cases(std::vector<GradcheckCase>& out, Generator& gen);       // cases_matmul.cpp
void add_softmax_cases(std::vector<GradcheckCase>& out, Generator& gen);      // cases_softmax.cpp
void add_attention_cases(std::vector<GradcheckCase>& out, Generator& gen);    // cases_attention.cpp
void add_indexing_cases(std::vector<GradcheckCase>& out, Generator& gen);     // cases_indexing.cpp
void add_loss_cases(std::vector<GradcheckCase>& out, Generator& gen);         // cases_loss.cpp
void add_positional_cases(std::vector<GradcheckCase>& out, Generator& gen);   // cases_positional.cpp
void add_nn_cases(std::vector<GradcheckCase>& out, Generator& gen);           // cases_nn.cpp

// Whether every node the case's graph records says its backward is differentiable again
// (its definition's second_order): such a case claims second order, and gradgradcheck must pass on
// it; any other must fail with "double backward of <op> is not implemented".
bool claims_second_order(const GradcheckCase& c);

// A float64 leaf that requires grad, N(0, 1) entries.
Tensor leaf(const Shape& shape, Generator& gen);

// A deliberately wrong op, for the tests that gradcheck catches one: forward x², backward 3x g
// (the true derivative is 2x), recorded without a second order.
Tensor wrong_square(const std::vector<Tensor>& x);

}  // namespace hg::cases
