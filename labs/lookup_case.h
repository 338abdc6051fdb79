// labs/lookup_case.h — Section 1: attention as a soft dictionary lookup.
//
//   q = (1, 1),  keys (1, 0), (0, 1), (1, 1) ("pump", "valve", "tank"),  values (1, 0), (0, 2), (3, 3)
//   s = K q / √2,  w = softmax(c · s),  o = w V
//
// c = 1 is attention as written; c → ∞ sharpens it into the hard lookup (an argmax), c → 0 flattens
// it into the plain average of the values.
//
// The tensors are built on the CPU and moved to the device given; the ops run there.
#pragma once
#include <string>
#include <vector>

#include "handgrad.h"

namespace hg::lab {

struct LookupTable {
  std::vector<std::string> names;  // "pump", "valve", "tank"
  Tensor q;                        // (2,)    the query (all three on the device)
  Tensor K;                        // (3, 2)  one key per row
  Tensor V;                        // (3, 2)  one value per row
};
LookupTable lookup_table(Device device = Device::cpu);  // float64

struct SoftLookup {
  double c = 1.0;
  Tensor scores;   // K q / √2, before the factor c  (3,)  (all three on the device)
  Tensor weights;  // softmax(c · scores)            (3,)
  Tensor output;   // weights V                      (2,)
  double fused_diff = 0.0;  // |output − attention(q, K, V, scale = c/√2)|, the same lookup by the op
};
SoftLookup soft_lookup(double c, Device device = Device::cpu);

// The dictionary: the one key equal to the query's key name, and its value; fails for a missing key.
std::vector<double> hard_lookup(const std::string& key);
// The limit c → ∞ of the soft lookup: the value of the best-scoring key (an argmax).
std::vector<double> argmax_lookup(Device device = Device::cpu);

}  // namespace hg::lab
