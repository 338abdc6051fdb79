// labs/three_token_tangent.h — Section 3's example pushed forwards: `three_token --jvp q32`.
//
// The backward asks how L = o₃,₂ changes with every entry of Q, K and V at once. Forward mode asks
// the other question: move one entry along a direction (Q̇ = e₃₂, the unit matrix at row 3,
// column 2) and see how every number of the forward moves with it —
//   Ṡ = (Q̇ Kᵀ + Q K̇ᵀ) · scale,   Ṗ = P ∘ (Ṡ − rowsum(P ∘ Ṡ)),   Ȯ = Ṗ V + P V̇,
// each printed, each checked against central differences of the forward, and L̇ = ȯ₃,₂ against
// ⟨dL/dQ, Q̇⟩ = (dL/dQ)₃,₂, the number the backward prints: the two modes meet in one number.
#pragma once
#include <string>

#include "report.h"
#include "three_token_case.h"

namespace hg::lab {

// One entry of Q, K or V to move, 0-based (the text writes e₃₂ for row 3, column 2).
struct ThreeTokenDirection {
  char input = 'q';  // 'q', 'k' or 'v'
  int64_t row = 2, col = 1;
  std::string name() const;  // "Q̇ = e₃₂"
};
// "q32", "k11", "v3,2" (1-based, as the text writes indices) -> the direction; throws hg::Error
// naming --jvp and the matrix's shape when it is not one of its entries.
ThreeTokenDirection parse_direction(const std::string& text, const ThreeTokenData& data);

struct ThreeTokenTangent {
  AttentionTangentTrace trace;  // the formulas: Ṡ, rowsum(P ∘ Ṡ), Ṗ, Ȯ
  Tensor engine;                // Ȯ from jvp() through the attention op
  Tensor numeric_O, numeric_P;  // central differences of O and P along the direction (on the device)
  double dL = 0;                // L̇ = ȯ at L's entry
  double dL_reverse = 0;        // ⟨dL/dX, Ẋ⟩ from the backward: that entry of dL/dX
};
ThreeTokenTangent three_token_tangent(const ThreeTokenVariant& v, const ThreeTokenDirection& dir,
                                      Device device = Device::cpu);

// The section `three_token --jvp` prints.
void tangent_report(Report& rep, const ThreeTokenVariant& v, const ThreeTokenDirection& dir, Device device);

}  // namespace hg::lab
