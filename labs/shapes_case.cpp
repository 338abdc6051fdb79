#include "shapes_case.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "compare.h"

namespace hg::lab {

Shape expand_shape(const std::string& text_shape, int64_t B, int64_t T, int64_t d, int64_t h, int64_t dk) {
  Shape out;
  std::string inner = text_shape;
  std::erase(inner, '(');
  std::erase(inner, ')');
  std::stringstream ss(inner);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    std::erase(tok, ' ');
    if (tok == "B") out.push_back(B);
    else if (tok == "T") out.push_back(T);
    else if (tok == "d") out.push_back(d);
    else if (tok == "h") out.push_back(h);
    else if (tok == "dk") out.push_back(dk);
    else if (!tok.empty() && tok.find_first_not_of("0123456789") == std::string::npos) out.push_back(std::stoll(tok));
    else fail("expand_shape", "unknown symbol '{}' in {} (known: B, T, d, h, dk, numbers)", tok, text_shape);
  }
  return out;
}

MultiHeadShapes multihead_shapes(int64_t B, int64_t T, int64_t d, int64_t h, uint64_t seed, Device device) {
  if (h < 1 || d % h != 0) fail("multihead_shapes", "d = {} must be a multiple of h = {}", d, h);
  MultiHeadShapes r;
  r.B = B, r.T = T, r.d = d, r.h = h, r.dk = d / h;
  const int64_t dk = r.dk;
  auto step = [&](const std::string& what, const std::string& text, const Tensor& t) {
    r.steps.push_back({what, text, expand_shape(text, B, T, d, h, dk), t.shape(), t.is_contiguous()});
  };

  NoGradGuard ng;
  Generator gen(seed);
  Tensor x = randn({B, T, d}, gen, DType::f64).to(device);  // (B, T, d)
  auto linear = [&gen, d, device]() {
    return randn({d, d}, gen, DType::f64, 0.0, 1.0 / std::sqrt(static_cast<double>(d))).to(device);
  };
  Tensor Wq = linear(), Wk = linear(), Wv = linear(), Wo = linear();  // (d, d) each

  step("x", "(B, T, d)", x);
  Tensor xq = matmul(x, Wq);  // (B, T, d): every head's queries side by side
  step("wq(x)", "(B, T, d)", xq);
  Tensor qv = xq.view({B, T, h, dk});
  step(".view(B, T, h, dk)", "(B, T, h, dk)", qv);
  r.view_shares_storage = qv.impl()->storage == xq.impl()->storage;
  Tensor q = qv.transpose(1, 2);  // (B, h, T, dk): each head a batch entry
  step(".transpose(1, 2) = q", "(B, h, T, dk)", q);
  Tensor k = matmul(x, Wk).view({B, T, h, dk}).transpose(1, 2);
  Tensor v = matmul(x, Wv).view({B, T, h, dk}).transpose(1, 2);
  Tensor kt = k.transpose(-2, -1);
  step("kᵀ (k.transpose)", "(B, h, dk, T)", kt);
  Tensor s = matmul(q, kt) / std::sqrt(static_cast<double>(dk));  // (B, h, T, T): one batched multiply
  step("s = q @ kᵀ / √dk", "(B, h, T, T)", s);
  std::vector<bool> future;  // true above the diagonal
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) future.push_back(j > i);
  const Tensor mask = bool_tensor(future, {T, T}).to(device);
  Tensor p = softmax(masked_fill(s, mask, -std::numeric_limits<double>::infinity()), -1);
  step("p = softmax(mask(s))", "(B, h, T, T)", p);
  Tensor heads = matmul(p, v);  // (B, h, T, dk)
  step("p @ v", "(B, h, T, dk)", heads);
  Tensor y = heads.transpose(1, 2);  // (B, T, h, dk), memory still head by head
  step("y = .transpose(1, 2)", "(B, T, h, dk)", y);

  try {
    (void)y.view({B, T, d});
  } catch (const Error& e) {
    r.view_failed = true;
    r.view_error = e.what();
  }
  Tensor cat = y.reshape({B, T, d});  // concatenates the heads (a copy here)
  r.reshaped = cat.shape();
  r.reshape_copied = cat.impl()->storage != y.impl()->storage;
  step(".reshape(B, T, d)", "(B, T, d)", cat);
  Tensor out = matmul(cat, Wo);
  step("out = wo(...)", "(B, T, d)", out);
  r.out = out;

  AttentionOptions o;
  o.causal = true;
  r.fused_vs_hand = max_abs_diff(attention(q, k, v, o), heads);

  // Concatenate, then project = the sum of each head's write through its block of rows of W_O.
  Tensor writes = zeros({B, T, d}, DType::f64, device);
  for (int64_t i = 0; i < h; ++i)
    writes = add(writes, matmul(heads.select(1, i), Wo.slice(0, i * dk, (i + 1) * dk)));  // (B, T, dk) @ (dk, d)
  r.per_head_writes = max_abs_diff(out, writes);
  return r;
}

}  // namespace hg::lab
