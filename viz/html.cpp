// viz/html.cpp — to_html: walks a root's backward with an observer, keeps every step's gradients,
// checks each against central differences (gradcheck's, ops/gradcheck.h), and writes it all into
// one page with its graph (the page's CSS, body and JavaScript are viz/page.css, page_body.html
// and page.js, embedded by viz/page_assets.h).
#include "viz/html.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <unordered_map>

#include <unistd.h>

#include "engine/error.h"
#include "engine/tape.h"
#include "ops/gradcheck.h"
#include "viz/graphviz.h"
#include "viz/page_assets.h"

namespace hg {

namespace {

using nlohmann::json;

// ---------------------------------------------------------------- values

// Each number as the page reads it (json_number: NaN and the infinities as strings).
json numbers_json(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(json_number(x));
  return a;
}

// The page keeps every value of a tensor up to this many elements; beyond, only its shape.
constexpr int64_t kValuesKept = 1 << 14;

std::vector<double> values_of(const Tensor& t) {
  NoGradGuard ng;
  return t.detach().to(Device::cpu).to(DType::f64).contiguous().to_vector();
}

// {"label":..., "shape":[...], "values":[...] or null} for a tensor the graph may no longer hold.
json tensor_json(const std::string& label, const Shape& shape, const Tensor& t) {
  json o = {{"label", label}, {"shape", shape}};
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (t.defined() && n <= kValuesKept) {
    o["values"] = numbers_json(values_of(t));
  } else {
    o["values"] = nullptr;
    o["why"] = t.defined() ? fmt::format("{} elements: too many to keep", n) : "gone";
  }
  return o;
}

Tensor alive(const std::weak_ptr<TensorImpl>& ref) { return Tensor(ref.lock()); }

// ---------------------------------------------------------------- finite differences

// dL/dx by gradcheck's central differences, x being the tensor named `name` with the values `at`,
// through the caller's recompute. Undefined when recompute does not know the name.
Tensor finite_differences(const HtmlOptions& o, const std::string& name, const std::vector<double>& at,
                          const Shape& shape) {
  const Tensor x = tensor(at, shape, DType::f64);
  const Tensor probe = o.recompute(name, x);
  if (!probe.defined()) return Tensor();
  if (probe.numel() != 1)
    fail("to_html", "recompute('{}') returned shape {}; it must return the scalar root", name, shape_str(probe.shape()));
  const TensorFn L = [&](const std::vector<Tensor>& xs) { return o.recompute(name, xs[0]).to(Device::cpu).to(DType::f64); };
  return numeric_gradient(L, {x}, 0, o.eps);
}

// The check of one finished gradient against its central difference: the fields the page reads.
void check_fields(json& o, const HtmlOptions& opt, const std::string& name, const Shape& shape,
                  const std::vector<double>& grad, const Tensor& value) {
  const int64_t n = static_cast<int64_t>(grad.size());
  if (!opt.recompute) {
    o["check"] = "not checked (no recompute function given)";
    return;
  }
  if (n > opt.check_limit) {
    o["check"] = fmt::format("not checked ({} elements)", n);
    return;
  }
  if (!value.defined()) {
    o["check"] = "not checked (its value is gone)";
    return;
  }
  Tensor fd = finite_differences(opt, name, values_of(value), shape);
  if (!fd.defined()) {
    o["check"] = fmt::format("not checked (recompute cannot replace '{}')", name);
    return;
  }
  const std::vector<double> num = fd.to_vector();
  double worst = 0.0;
  bool ok = true;
  for (size_t i = 0; i < num.size(); ++i) {
    const double d = std::abs(grad[i] - num[i]);
    if (!(d <= opt.atol + opt.rtol * std::abs(num[i]))) ok = false;
    if (std::isnan(d)) worst = d;
    else if (!std::isnan(worst)) worst = std::max(worst, d);
  }
  o["fd"] = numbers_json(num);
  o["err"] = json_number(worst);
  o["ok"] = ok;
}

// ---------------------------------------------------------------- the graph as SVG

// to_dot rendered by Graphviz's dot, or "" when dot is not on PATH or fails.
std::string render_svg(const std::string& dot) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0) return "";
  namespace fs = std::filesystem;
  static std::atomic<int> serial = 0;  // several pages may be written at once
  const fs::path base = fs::temp_directory_path() / fmt::format("handgrad-html-{}-{}", ::getpid(), ++serial);
  const std::string in = base.string() + ".dot", out = base.string() + ".svg";
  {
    std::ofstream f(in);
    if (!(f << dot)) return "";
  }
  std::string svg;
  if (std::system(fmt::format("dot -Tsvg '{}' -o '{}' 2>/dev/null", in, out).c_str()) == 0) {
    std::ifstream f(out);
    std::stringstream ss;
    ss << f.rdbuf();
    svg = ss.str();
  }
  std::error_code ec;
  fs::remove(in, ec);
  fs::remove(out, ec);
  const size_t start = svg.find("<svg");
  return start == std::string::npos ? "" : svg.substr(start);
}

// ---------------------------------------------------------------- one variant

json variant_json(const HtmlVariant& var) {
  const Tensor& root = var.root;
  if (!root.defined() || !root.impl()->node)
    fail("to_html", "'{}': the root has no graph (a leaf, or made under no_grad); give a result of recorded ops",
         var.name);
  if (root.numel() != 1)
    fail("to_html", "'{}': the root has shape {}; the page walks the backward of a scalar (reduce it to one number first)",
         var.name, shape_str(root.shape()));
  const HtmlOptions& opt = var.options;
  const std::vector<std::shared_ptr<Node>> tape = tape_of(root);

  // How many gradient contributions each tensor gets: one per edge from it into the tape. Its
  // check waits for the last, when its gradient is whole.
  std::unordered_map<uint64_t, int> edges_left;
  for (const auto& n : tape)
    for (const InputSlot& in : n->inputs)
      if (in.id != 0 && in.needs_grad) ++edges_left[in.id];
  std::unordered_map<uint64_t, std::vector<double>> wholes;  // each gradient so far

  json steps = json::array();
  BackwardObserver obs;
  obs.after = [&](size_t i, const Node& n, const std::vector<Tensor>& gout, const std::vector<Tensor>& gin) {
    json outs = json::array(), ins = json::array();
    for (size_t k = 0; k < n.outputs.size(); ++k)
      outs.push_back(tensor_json(n.outputs[k].current_label(), n.outputs[k].shape, gout[k]));
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const InputSlot& in = n.inputs[k];
      if (k >= gin.size() || !gin[k].defined() || in.id == 0) continue;
      const std::string label = in.current_label();
      const std::vector<double> part = values_of(gin[k]);
      json g = {{"label", label}, {"shape", in.shape}, {"values", numbers_json(part)}};
      std::vector<double>& whole = wholes[in.id];
      if (whole.empty()) whole.assign(part.size(), 0.0);
      for (size_t e = 0; e < part.size() && e < whole.size(); ++e) whole[e] += part[e];
      const int left = --edges_left[in.id];
      if (left > 0) {
        g["check"] = fmt::format("partial: {} more contribution{} to come; checked when whole", left, left == 1 ? "" : "s");
      } else {
        if (whole != part) g["total"] = numbers_json(whole);
        check_fields(g, opt, label, in.shape, whole, in.leaf ? Tensor(in.leaf) : alive(in.ref));
      }
      auto tv = opt.text_values.find(label);
      if (tv != opt.text_values.end()) g["text"] = numbers_json(tv->second);
      ins.push_back(std::move(g));
    }
    const std::string first = n.outputs.empty() ? "" : n.outputs[0].current_label();
    auto rule = opt.rules.find(first);
    json step = {{"entry", i},
                 {"op", n.op},
                 {"site", n.call_site()},
                 {"rule", rule == opt.rules.end() ? "" : rule->second},
                 {"gout", std::move(outs)},
                 {"gin", std::move(ins)}};
    if (auto broken = opt.broken_rules.find(first); broken != opt.broken_rules.end()) step["broken_rule"] = broken->second;
    steps.push_back(std::move(step));
  };
  BackwardOptions bo;
  bo.retain_graph = true;  // keeps the saved tensors for the node panel and the drawn graph
  bo.observer = &obs;
  backward(root, Tensor(), bo);

  std::unordered_map<const Node*, size_t> index_of;  // which tape entry made an input: the graph's edges
  for (size_t i = 0; i < tape.size(); ++i) index_of[tape[i].get()] = i;
  json nodes = json::array();
  for (size_t i = 0; i < tape.size(); ++i) {
    const Node& n = *tape[i];
    json ins = json::array(), outs = json::array(), saved = json::array();
    for (const InputSlot& in : n.inputs) {
      if (in.id == 0) continue;
      json t = tensor_json(in.current_label(), in.shape, in.leaf ? Tensor(in.leaf) : alive(in.ref));
      auto from = in.node ? index_of.find(in.node.get()) : index_of.end();
      t["kind"] = in.node ? "result" : in.leaf ? "leaf" : "constant";
      t["from"] = from == index_of.end() ? json(nullptr) : json(from->second);
      ins.push_back(std::move(t));
    }
    for (const OutputSlot& out : n.outputs) outs.push_back(tensor_json(out.current_label(), out.shape, alive(out.ref)));
    for (const SavedTensor& s : n.saved)
      saved.push_back(tensor_json(saved_name(n, s), s.data.defined() ? s.data.shape() : Shape{}, s.data));
    nodes.push_back({{"index", i},
                     {"op", n.op},
                     {"site", n.call_site()},
                     {"inputs", std::move(ins)},
                     {"outputs", std::move(outs)},
                     {"saved", std::move(saved)}});
  }
  const std::string svg = opt.draw_graph ? render_svg(to_dot(root)) : "";
  return {{"name", var.name},
          {"title", opt.title},
          {"intro", opt.intro},
          {"root", root.label()},
          {"table_limit", opt.table_limit},
          {"svg", svg.empty() ? json(nullptr) : json(svg)},
          {"nodes", std::move(nodes)},
          {"steps", std::move(steps)}};
}

// JSON text to sit inside the page's <script>: a "</script>" in a name or in the SVG would end that
// element early, so every '<' (found only inside strings) is written as JSON's \u003c. A name that
// is not UTF-8 gets U+FFFD in its place rather than an exception.
std::string script_json(const json& data) {
  std::string text;
  for (char c : data.dump(-1, ' ', false, json::error_handler_t::replace)) {
    if (c == '<') text += "\\u003c";
    else text += c;
  }
  return text;
}

std::string escape_html(const std::string& s) {
  std::string e;
  for (char c : s) {
    if (c == '<') e += "&lt;";
    else if (c == '>') e += "&gt;";
    else if (c == '&') e += "&amp;";
    else e += c;
  }
  return e;
}

}  // namespace

json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return v;
}

json page_data(const std::vector<HtmlVariant>& variants) {
  if (variants.empty()) fail("to_html", "no variants given; pass at least one scalar root");
  json vs = json::array();
  for (const HtmlVariant& v : variants) vs.push_back(variant_json(v));
  return vs;
}

std::string to_html(const std::vector<HtmlVariant>& variants, const std::string& title) {
  const std::string data = script_json(page_data(variants));
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "script-src 'unsafe-inline'; img-src data:\">\n"
      "<title>{}</title>\n<style>{}</style></head>\n<body>\n{}\n"
      "<script id=\"hg-data\" type=\"application/json\">{}</script>\n<script>{}</script>\n</body></html>\n",
      escape_html(title), html_page_style(), html_page_body(), data, html_page_script());
}

std::string to_html(const Tensor& root, const HtmlOptions& options) {
  return to_html({HtmlVariant{options.title, root, options}}, options.title);
}

void write_html(const std::string& path, const std::string& html) {
  std::ofstream f(path, std::ios::binary);
  if (!f) fail("to_html", "cannot open '{}' for writing (does its folder exist, and may you write there?)", path);
  f << html;
  f.close();
  if (!f) fail("to_html", "writing '{}' failed after opening it (is the disk full?)", path);
}

}  // namespace hg
