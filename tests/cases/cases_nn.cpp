// Gradcheck cases for nn/module.h: Linear (with and without bias, on a 3-D input) and Embedding.
// The module's forward is what is checked: each call points the module's weight (and bias) at the
// gradcheck inputs, so the perturbed values flow through Linear::forward / Embedding::forward.
#include <memory>

#include "cases/gradcheck_cases.h"
#include "nn/module.h"

namespace hg::cases {

void add_nn_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  using V = std::vector<Tensor>;
  Generator init(0);  // the modules' own draws are replaced by the inputs below
  auto with_bias = std::make_shared<nn::Linear>(4, 3, true, init, DType::f64);
  out.push_back({"Linear", "x (2, 3, 4), W (3, 4), b (3,)",
                 [with_bias](const V& x) {
                   with_bias->weight = x[1];
                   with_bias->bias = x[2];
                   return with_bias->forward(x[0]);
                 },
                 {leaf({2, 3, 4}, gen), leaf({3, 4}, gen), leaf({3}, gen)}});
  auto no_bias = std::make_shared<nn::Linear>(4, 5, false, init, DType::f64);
  out.push_back({"Linear", "no bias, x (2, 3, 4), W (5, 4)",
                 [no_bias](const V& x) {
                   no_bias->weight = x[1];
                   return no_bias->forward(x[0]);
                 },
                 {leaf({2, 3, 4}, gen), leaf({5, 4}, gen)}});
  auto emb = std::make_shared<nn::Embedding>(6, 3, init, DType::f64);
  out.push_back({"Embedding", "(6, 3), ids (2, 4) with repeats",
                 [emb](const V& x) {
                   emb->weight = x[0];
                   return emb->forward(x[1]);
                 },
                 {leaf({6, 3}, gen), index_tensor({5, 1, 1, 0, 3, 5, 5, 2}, {2, 4})}});
}

}  // namespace hg::cases
