// Gradcheck cases for the views and copies of engine/views.cpp and ops/broadcast.h.
#include "cases/gradcheck_cases.h"

namespace hg::cases {

void add_view_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  out.push_back({"transpose", "(3, 4) dims 0, 1", [](const std::vector<Tensor>& x) { return x[0].transpose(0, 1); },
                 {leaf({3, 4}, gen)}});
  out.push_back({"permute", "(2, 3, 4) -> (2, 0, 1)", [](const std::vector<Tensor>& x) { return x[0].permute({2, 0, 1}); },
                 {leaf({2, 3, 4}, gen)}});
  out.push_back({"slice", "dim 1, 1:4 step 2", [](const std::vector<Tensor>& x) { return x[0].slice(1, 1, 4, 2); },
                 {leaf({3, 5}, gen)}});
  out.push_back({"select", "dim 0, index -1", [](const std::vector<Tensor>& x) { return x[0].select(0, -1); },
                 {leaf({3, 4}, gen)}});
  out.push_back({"view", "(2, 6) -> (3, 4)", [](const std::vector<Tensor>& x) { return x[0].view({3, 4}); },
                 {leaf({2, 6}, gen)}});
  out.push_back({"reshape", "after transpose (copies)",
                 [](const std::vector<Tensor>& x) { return x[0].transpose(0, 1).reshape({-1}); }, {leaf({3, 4}, gen)}});
  out.push_back({"unsqueeze/squeeze", "(3, 4)",
                 [](const std::vector<Tensor>& x) { return x[0].unsqueeze(1).squeeze(1).unsqueeze(0); }, {leaf({3, 4}, gen)}});
  out.push_back({"contiguous", "of a transpose", [](const std::vector<Tensor>& x) { return x[0].transpose(0, 1).contiguous(); },
                 {leaf({3, 4}, gen)}});
  out.push_back({"expand", "(3, 1) -> (2, 3, 4)", [](const std::vector<Tensor>& x) { return expand(x[0], {2, 3, 4}); },
                 {leaf({3, 1}, gen)}});
  out.push_back({"clone", "of a slice", [](const std::vector<Tensor>& x) { return x[0].slice(0, 1, 3).clone(); },
                 {leaf({3, 4}, gen)}});
}

}  // namespace hg::cases
