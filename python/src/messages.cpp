// python/src/messages.cpp — an hg::Error's text as a Python user reads it.
//
// The library's messages speak its C++ API: `.to(DType::f64)`, `Device::cpu`, `NoGradGuard`,
// `retain_graph=true`, a tensor named by its internal id ("t366 (2, 3) float32"), the C++ line
// that recorded a node. Raised into Python, every message passes through python_message, the one
// place that rewrites it in the names the learner typed: `.double()`, `'cpu'`, `hg.no_grad()`,
// `retain_graph=True`, "a float32 tensor of shape (2, 3)". C++ source locations are dropped unless
// anomaly mode is on (then they are what the learner asked for).
#include "bind.h"

#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "engine/tape.h"

namespace hgpy {

namespace {

struct Rewrite {
  std::regex from;
  std::string to;
};

// In order: the specific spellings before the general ones they contain.
const std::vector<Rewrite>& rewrites() {
  static const std::vector<Rewrite> all = [] {
    const std::vector<std::pair<const char*, const char*>> rules = {
        // Conversions, as a PyTorch user writes them.
        {R"(\.?\bto\(DType::(f64|float64)\))", ".double()"},
        {R"(\.?\bto\(DType::(f32|float32)\))", ".float()"},
        {R"(\.?\bto\(DType::(i64|int64)\))", ".long()"},
        {R"(\.?\bto\(DType::(b8|bool)\))", ".bool()"},
        {R"(\.to\(DType::\{?\}?\))", ".to(dtype)"},
        {R"(\.to\(Device::(cpu|cuda)\))", ".to('$1')"},
        {R"(\.to\(Device::\.\.\.\))", ".to(device)"},
        // Names of dtypes and devices.
        {R"(DType::(f64|float64)\b)", "hg.float64"},
        {R"(DType::(f32|float32)\b)", "hg.float32"},
        {R"(DType::(i64|int64)\b)", "hg.int64"},
        {R"(DType::(b8|bool)\b)", "hg.bool"},
        {R"(Device::(cpu|cuda)\b)", "'$1'"},
        {R"(`b8` \(boolean\))", "hg.bool"},
        {R"(\bf64\b)", "float64"},
        {R"(\bf32\b)", "float32"},
        {R"(\bi64\b)", "int64"},
        {R"(\bb8\b)", "bool"},
        // Building a mask, a guard, a dual level, a flag.
        {R"(`?\bbool_tensor\([^)]*\)`?)", "a comparison such as `x > 0`"},
        {R"((hg::)?NoGradGuard\b)", "hg.no_grad()"},
        {R"(\(hg::DualLevel level;\))", "(with hg.autograd.forward_ad.dual_level():)"},
        {R"(\b(retain_graph|create_graph|keepdim|requires_grad|causal)\s*=\s*true\b)", "$1=True"},
        {R"(\b(retain_graph|create_graph|keepdim|requires_grad|causal)\s*=\s*false\b)", "$1=False"},
        {R"(\btrue = may attend\b)", "True = may attend"},
        {R"(\bModule::(\w+))", "Module.$1"},
        {R"(\bhg::)", "hg."},
        // A tensor by its shape and dtype, not its internal id.
        {R"(\bt[0-9]+ (\([^)]*\)) int64 cuda\b)", "an int64 tensor of shape $1 on 'cuda'"},
        {R"(\bt[0-9]+ (\([^)]*\)) (float32|float64|bool) cuda\b)", "a $2 tensor of shape $1 on 'cuda'"},
        {R"(\bt[0-9]+ (\([^)]*\)) int64\b)", "an int64 tensor of shape $1"},
        {R"(\bt[0-9]+ (\([^)]*\)) (float32|float64|bool)\b)", "a $2 tensor of shape $1"},
        {R"(\bt[0-9]+\b)", "a tensor"},
    };
    std::vector<Rewrite> out;
    for (const auto& [from, to] : rules) out.push_back({std::regex(from), to});
    return out;
  }();
  return all;
}

// Where a node was recorded, in the library's C++ ("called from ops.cpp:116"): noise to a Python
// user except under anomaly mode, which asks for it.
const std::vector<Rewrite>& locations() {
  static const std::vector<Rewrite> all = {
      {std::regex(R"( \(called from [^,()]*\))"), ""},
      {std::regex(R"(; called from [^ ]*:[0-9]+\.)"), "."},
      {std::regex(R"( \(called from [^,()]*, )"), " ("},
  };
  return all;
}

}  // namespace

std::string python_message(std::string text) {
  if (!hg::anomaly_enabled())
    for (const Rewrite& r : locations()) text = std::regex_replace(text, r.from, r.to);
  for (const Rewrite& r : rewrites()) text = std::regex_replace(text, r.from, r.to);
  return text;
}

}  // namespace hgpy
