// labs/three_token_faults.h — the definitions of the faulty twins of three primitive ops, which the
// three-token lab's "break it" mode records (three_token_case.cpp): each computes the same forward
// and sends back a wrong gradient, under a name that says it is broken.
#pragma once
#include "engine/op_def.h"

namespace hg::lab {

constexpr OpDef kSoftmaxNoGbar{.name = "softmax (broken: no −ḡ)", .saves = {{"output", "dS = P ∘ dP, wrongly"}},
                               .derivation = "labs/three_token_case.cpp"};
constexpr OpDef kMatmulUntransposed{.name = "matmul (broken: dK untransposed)",
                                    .saves = {{"left operand a", "db"}, {"right operand b", "da"}},
                                    .derivation = "labs/three_token_case.cpp"};
constexpr OpDef kMatmulWrongDv{.name = "matmul (broken: dV = P dO)",
                               .saves = {{"left operand a", "db"}, {"right operand b", "da"}},
                               .derivation = "labs/three_token_case.cpp"};
constexpr OpDef kScaleForgotten{.name = "mul (broken: scale forgotten)", .saves_nothing = "it forgets the scale",
                                .derivation = "labs/three_token_case.cpp"};

}  // namespace hg::lab
