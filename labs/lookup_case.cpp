#include "lookup_case.h"

#include <cmath>
#include <map>

namespace hg::lab {

LookupTable lookup_table(Device device) {
  LookupTable t;
  t.names = {"pump", "valve", "tank"};
  t.q = tensor({1, 1}, {2}, DType::f64).to(device);
  t.K = tensor({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f64).to(device);
  t.V = tensor({1, 0, 0, 2, 3, 3}, {3, 2}, DType::f64).to(device);
  return t;
}

SoftLookup soft_lookup(double c, Device device) {
  const LookupTable t = lookup_table(device);
  NoGradGuard ng;
  SoftLookup r;
  r.c = c;
  r.scores = matmul(t.K, t.q) / std::sqrt(2.0);  // (3,)  one score per key
  r.weights = softmax(r.scores * c, -1);         // (3,)  positive, summing to 1
  r.output = matmul(r.weights, t.V);             // (2,)  the blend of the values
  // The same lookup as one attention call: one query row, the factor folded into the scale.
  AttentionOptions o;
  o.scale = c / std::sqrt(2.0);
  Tensor fused = attention(t.q.unsqueeze(0), t.K, t.V, o).select(0, 0);  // (2,)
  std::vector<double> a = fused.to_vector(), b = r.output.to_vector();
  for (size_t i = 0; i < a.size(); ++i) r.fused_diff = std::max(r.fused_diff, std::abs(a[i] - b[i]));
  return r;
}

std::vector<double> hard_lookup(const std::string& key) {
  const std::map<std::string, std::vector<double>> table = {{"pump", {1, 0}}, {"valve", {0, 2}}, {"tank", {3, 3}}};
  auto it = table.find(key);
  if (it == table.end()) fail("hard_lookup", "no key '{}' in the table (keys: pump, valve, tank)", key);
  return it->second;
}

std::vector<double> argmax_lookup(Device device) {
  const LookupTable t = lookup_table(device);
  NoGradGuard ng;
  const int64_t best = argmax(matmul(t.K, t.q), 0).to_int_vector()[0];
  return t.V.select(0, best).to_vector();
}

}  // namespace hg::lab
