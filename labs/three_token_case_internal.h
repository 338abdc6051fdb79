// labs/three_token_case_internal.h — the three-token lab's primitive graph, shared by the file that builds
// it (three_token_case.cpp, whose lines the page shows as each op's call site) and the one that
// walks it (three_token_backward.cpp: the step-through, the picture and the page).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "three_token_case.h"

namespace hg::lab {

// Attention from primitive ops, each its own tape entry, every tensor named for printing. The
// tape captures an output's label when the op records it, before we can name it, so the names
// and the text's rule for each step are also kept by tensor id. The named tensors are kept
// alive too: the graph holds its tensors only weakly, and to_dot reads their names from them.
struct PrimitiveGraph {
  Tensor S, P, L;
  struct Named {
    std::string label, rule;
    std::string broken_rule;  // the step's rule as the fault computes it, when it breaks this step
  };
  std::unordered_map<uint64_t, Named> names;
  std::vector<Tensor> named;
};

// A tensor to put in the graph in place of the one of that name (central differences of L with
// respect to an intermediate: the page's finite-difference column). Empty name: none.
struct Replacement {
  std::string name;
  Tensor value;
};

// The primitive graph of one variant, with `fault` built in and `swap` put in place of the tensor
// of its name; its ops' call sites are three_token_case.cpp's lines, which the page prints.
PrimitiveGraph primitive_graph(const ThreeTokenInputs& in, const ThreeTokenVariant& v, Device device,
                               ThreeTokenFault fault = ThreeTokenFault::none, const Replacement& swap = {});

}  // namespace hg::lab
