// labs/three_token_report.h — the three-token lab's report, shared by the program (three_token.cpp)
// and the live page (three_token_live.cpp), which shows the same comparisons with the text.
#pragma once
#include <vector>

#include "report.h"
#include "three_token_case.h"

namespace hg::lab {

// Under "scores": the raw and scaled scores; then each variant's forward (`variants`: causal, without the mask,
// without the scale); in the text's case beside the text's numbers, with the geometry of o₂ and o₃.
void three_token_forward_report(Report& rep, const ThreeTokenInputs& in, const std::vector<ThreeTokenVariant>& variants,
                                Device device);

// The backward of `variant`: dO, dP, D, dS, row 3's Jacobian, dQ, dK, dV (the text's numbers
// beside them in its scaled case), each gradient by formula, tape, finite differences and the
// primitive tape, and that tape's listing. `step`: the listing's closing line does not suggest --step.
void three_token_backward_report(Report& rep, const ThreeTokenVariant& variant, bool step, Device device);

}  // namespace hg::lab
