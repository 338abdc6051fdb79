// labs/induction_why.cpp — see induction_why.h.
#include "induction_why.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "kit.h"

namespace hg::lab::induction {

namespace {

constexpr const char* kOp = "why_prediction";

// The model's parameters in float64, by role.
struct Weights64 {
  Tensor E;                                   // (V, d)
  std::vector<Tensor> qkv_w, qkv_b, proj_w, proj_b;  // per block (biases undefined without bias)
};

Weights64 weights64(const nn::TinyCharLM& model) {
  auto f64 = [](const Tensor& t) { return t.defined() ? t.detach().to(DType::f64).contiguous() : Tensor(); };
  Weights64 w;
  w.E = f64(model.token_emb->weight);
  for (const auto& b : model.blks) {
    w.qkv_w.push_back(f64(b->qkv->weight));
    w.qkv_b.push_back(f64(b->qkv->bias));
    w.proj_w.push_back(f64(b->proj->weight));
    w.proj_b.push_back(f64(b->proj->bias));
  }
  return w;
}

Tensor linear64(const Tensor& x, const Tensor& W, const Tensor& b) {
  Tensor y = matmul(x, W.transpose(0, 1));
  return b.defined() ? add(y, b) : y;
}

// Target t's loss for inputs x (1, T) with the embeddings perturbed by de (1, T, d) and each
// block's attention weights by dP[l] (1, H, T, T); the forward's P per block into *patterns.
Tensor target_loss(const nn::TinyCharLM& model, const Weights64& w, const Tensor& x, int64_t target, int64_t t,
                   const Tensor& de, const std::vector<Tensor>& dP, std::vector<Tensor>* patterns) {
  const nn::TinyCharLMConfig& cfg = model.config();
  const int64_t T = x.size(1), d = cfg.d, H = cfg.heads, d_h = d / H;
  std::vector<double> causal(static_cast<size_t>(T * T), 0.0);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = i + 1; j < T; ++j) causal[static_cast<size_t>(i * T + j)] = -std::numeric_limits<double>::infinity();
  const Tensor mask = tensor(causal, {T, T}, DType::f64);
  Tensor h = add(embedding(w.E, x), de);  // (1, T, d)
  for (size_t l = 0; l < w.qkv_w.size(); ++l) {
    const auto [q, k, v] = qkv_heads(linear64(h, w.qkv_w[l], w.qkv_b[l]), H, cfg.pos == "rope");
    const Tensor S = add(mul(matmul(q, k.transpose(2, 3)), 1.0 / std::sqrt(static_cast<double>(d_h))), mask);
    const Tensor P = softmax(S, -1);
    if (patterns) patterns->push_back(P.detach());
    Tensor o = matmul(add(P, dP[l]), v);  // (1, H, T, d_h)
    std::vector<double> keep(static_cast<size_t>(H), 1.0);
    bool any = false;
    for (int64_t hd = 0; hd < H; ++hd)
      if (model.is_ablated(static_cast<int64_t>(l), hd)) {
        keep[static_cast<size_t>(hd)] = 0.0;
        any = true;
      }
    if (any) o = mul(o, tensor(keep, {1, H, 1, 1}, DType::f64));
    h = add(h, linear64(o.transpose(1, 2).reshape({1, T, d}), w.proj_w[l], w.proj_b[l]));
  }
  const Tensor logits = matmul(h.select(0, 0).select(0, t), w.E.transpose(0, 1));  // (V,)
  return neg(log_softmax(logits, -1).select(0, target));
}

}  // namespace

Why why_prediction(const nn::TinyCharLM& model, const std::vector<int64_t>& tokens, int64_t t, const WhyCheck& check) {
  const nn::TinyCharLMConfig& cfg = model.config();
  if (cfg.pos != "rope" && cfg.pos != "none")
    fail(kOp, "the model's positions are '{}'; this view writes out the forward of RoPE (or no positions) only", cfg.pos);
  const int64_t n = static_cast<int64_t>(tokens.size()), T = n - 1, H = cfg.heads, blocks = cfg.blocks;
  if (n < 2) fail(kOp, "a sequence of {} tokens has no target; give at least 2", n);
  if (t < 0 || t >= T) fail(kOp, "position {} is not a target: the {} tokens give targets 0 to {}", t, n, T - 1);
  const Weights64 w = weights64(model);
  const Tensor x = index_tensor(std::vector<int64_t>(tokens.begin(), tokens.end() - 1), {1, T});
  const int64_t target = tokens[static_cast<size_t>(t + 1)];

  GradModeGuard off(false);  // only the differentiated forward below records
  Tensor de = zeros({1, T, cfg.d}, DType::f64);
  std::vector<Tensor> dP;
  for (int64_t l = 0; l < blocks; ++l) dP.push_back(zeros({1, H, T, T}, DType::f64));
  Why why;
  std::vector<Tensor> grads;
  std::vector<Tensor> P;
  {
    GradModeGuard on(true);
    de.requires_grad_();
    for (Tensor& p : dP) p.requires_grad_();
    const Tensor loss = target_loss(model, w, x, target, t, de, dP, &P);
    why.loss = loss.item();
    std::vector<Tensor> inputs{de};
    inputs.insert(inputs.end(), dP.begin(), dP.end());
    grads = grad({loss}, inputs);
  }
  const Tensor ge = grads[0].select(0, 0).contiguous();  // (T, d)
  for (int64_t j = 0; j < T; ++j) {
    const std::vector<double> g = ge.select(0, j).contiguous().to_vector();
    double s = 0;
    for (double v : g) s += v * v;
    why.embedding.push_back(std::sqrt(s));
  }
  for (int64_t l = 0; l < blocks; ++l) {
    why.weights.emplace_back();
    why.patterns.emplace_back();
    for (int64_t hd = 0; hd < H; ++hd) {
      why.weights.back().push_back(grads[static_cast<size_t>(1 + l)].select(0, 0).select(0, hd).contiguous());
      why.patterns.back().push_back(P[static_cast<size_t>(l)].select(0, 0).select(0, hd).contiguous());
    }
  }
  if (check.kind == WhyCheck::Kind::none) return why;

  // The central difference: the same function with the one perturbation at ±ε.
  why.checked = true;
  why.eps = 1e-5;
  Tensor plus_e = zeros({1, T, cfg.d}, DType::f64), minus_e = plus_e;
  std::vector<Tensor> plus_P = dP, minus_P = dP;
  for (size_t l = 0; l < dP.size(); ++l) plus_P[l] = minus_P[l] = zeros({1, H, T, T}, DType::f64);
  if (check.kind == WhyCheck::Kind::embedding) {
    const int64_t j = check.key;
    if (j < 0 || j >= T) fail(kOp, "no input position {}: the inputs are positions 0 to {}", j, T - 1);
    std::vector<double> u = ge.select(0, j).contiguous().to_vector();
    const double norm = why.embedding[static_cast<size_t>(j)];
    if (norm > 0) {
      for (double& v : u) v /= norm;
    } else {
      u.assign(u.size(), 0.0);  // no direction to follow: the first coordinate
      u[0] = 1.0;
    }
    std::vector<double> p(static_cast<size_t>(T * cfg.d), 0.0), m = p;
    for (int64_t c = 0; c < cfg.d; ++c) {
      p[static_cast<size_t>(j * cfg.d + c)] = why.eps * u[static_cast<size_t>(c)];
      m[static_cast<size_t>(j * cfg.d + c)] = -why.eps * u[static_cast<size_t>(c)];
    }
    plus_e = tensor(p, {1, T, cfg.d}, DType::f64);
    minus_e = tensor(m, {1, T, cfg.d}, DType::f64);
    why.analytic = norm;
    why.what = fmt::format("the embedding of input position {} (token {}), along its gradient", j,
                           tokens[static_cast<size_t>(j)]);
  } else {
    const WhyCheck& c = check;
    if (c.block < 0 || c.block >= blocks || c.head < 0 || c.head >= H)
      fail(kOp, "no head [{}, {}]: the model has blocks 0 to {} and heads 0 to {}", c.block, c.head, blocks - 1, H - 1);
    if (c.query < 0 || c.query >= T || c.key < 0 || c.key > c.query)
      fail(kOp, "no attention weight at query {}, key {}: queries run 0 to {} and keys 0 to the query (causal)",
           c.query, c.key, T - 1);
    std::vector<double> p(static_cast<size_t>(H * T * T), 0.0), m = p;
    const size_t at = static_cast<size_t>((c.head * T + c.query) * T + c.key);
    p[at] = why.eps;
    m[at] = -why.eps;
    plus_P[static_cast<size_t>(c.block)] = tensor(p, {1, H, T, T}, DType::f64);
    minus_P[static_cast<size_t>(c.block)] = tensor(m, {1, H, T, T}, DType::f64);
    why.analytic = why.weights[static_cast<size_t>(c.block)][static_cast<size_t>(c.head)].select(0, c.query).select(0, c.key).item();
    why.what = fmt::format("the attention weight of block {} head {} (counting from 1), query {} on key {}", c.block + 1,
                           c.head + 1, c.query, c.key);
  }
  const double up = target_loss(model, w, x, target, t, plus_e, plus_P, nullptr).item();
  const double down = target_loss(model, w, x, target, t, minus_e, minus_P, nullptr).item();
  why.numeric = (up - down) / (2 * why.eps);
  return why;
}

}  // namespace hg::lab::induction
