// tests/browser/tinycharlm_page.h — one TinyCharLM block's cross-entropy loss on a batch of two short
// sequences, ready for to_html: what a user writes to step through a graph of their own. Used by
// test_html.cpp (the page's data) and tinycharlm_page.cpp (the page the browser test walks).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "handgrad.h"
#include "nn/tinycharlm.h"

namespace hg::test {

struct TinyCharLMPage {
  std::unique_ptr<nn::TinyCharLM> model;
  nn::NamedTensors named;      // the parameters, each named by its full name ("blks.0.qkv.weight")
  std::vector<Tensor> params;  // the same tensors, in that order
  Tensor x, y;                 // tokens and targets, (2, 5) i64
  Tensor loss;                 // the scalar root
  HtmlOptions options;         // recompute replaces a parameter by name; check_limit 100 elements
};

inline std::unique_ptr<TinyCharLMPage> tinycharlm_page() {
  auto p = std::make_unique<TinyCharLMPage>();
  Generator gen(7);
  nn::TinyCharLMConfig cfg{.vocab = 7, .d = 8, .heads = 2, .blocks = 1, .pos = "learned", .max_len = 8,
                           .dtype = DType::f64};
  p->model = std::make_unique<nn::TinyCharLM>(cfg, gen);
  p->named = p->model->named_parameters();
  for (auto& [name, t] : p->named) {
    t.set_name(name);  // the page and recompute know each parameter by its full name
    p->params.push_back(t);
  }
  p->x = randint({2, 5}, gen, 0, 7);
  p->y = randint({2, 5}, gen, 0, 7);
  TinyCharLMPage* self = p.get();
  auto loss_with = [self](const std::vector<Tensor>& ps) {
    return cross_entropy(self->model->forward(self->x, ps).reshape({10, 7}), self->y.reshape({10}));
  };
  p->loss = loss_with(p->params);
  p->options.title = "one TinyCharLM block: cross-entropy of two sequences of 5 tokens";
  p->options.intro = "d = 8, 2 heads, learned positions, vocabulary 7, float64. Matrices above 48 elements are "
                     "heatmaps (hover for values); parameters above 100 elements are not checked.";
  p->options.check_limit = 100;
  p->options.recompute = [self, loss_with](const std::string& name, const Tensor& value) {
    std::vector<Tensor> ps = self->params;
    bool found = false;
    for (size_t i = 0; i < self->named.size(); ++i)
      if (self->named[i].first == name) {
        ps[i] = value;
        found = true;
      }
    if (!found) return Tensor();  // an intermediate: this recompute knows the parameters only
    NoGradGuard ng;
    return loss_with(ps);
  };
  return p;
}

}  // namespace hg::test
