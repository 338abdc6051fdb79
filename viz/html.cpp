// viz/html.cpp — to_html: walks a root's backward with an observer, keeps every step's gradients,
// checks each against central differences (gradcheck's, ops/gradcheck.h), and writes it all into
// one page with its graph (the page's CSS, body and JavaScript are viz/page.css, page_body.html
// and page.js, embedded by viz/page_assets.h).
#include "viz/html.h"

#include <fmt/format.h>

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

// ---------------------------------------------------------------- JSON, written by hand

std::string json_string(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    switch (c) {
      case '"': q += "\\\""; break;
      case '\\': q += "\\\\"; break;
      case '\n': q += "\\n"; break;
      case '\r': break;
      case '\t': q += "\\t"; break;
      case '<': q += "\\u003c"; break;  // a name holding "</script>" cannot end the page's script
      default:
        if (static_cast<unsigned char>(c) < 0x20) q += fmt::format("\\u{:04x}", c);
        else q += c;
    }
  }
  return q + "\"";
}

// A number; JSON has no infinities or NaN, so those are strings the page reads back.
std::string json_number(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v < 0 ? "\"-inf\"" : "\"inf\"";
  return fmt::format("{:.17g}", v);
}

std::string json_numbers(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += json_number(v[i]);
  }
  return s + "]";
}

std::string json_shape(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? "," : "", shape[i]);
  return s + "]";
}

// Builds one JSON object field by field: {"a":1,"b":"x"}.
struct Object {
  std::string body;
  Object& raw(const std::string& key, const std::string& value) {
    if (!body.empty()) body += ',';
    body += json_string(key);
    body += ':';
    body += value;
    return *this;
  }
  Object& str(const std::string& key, const std::string& value) { return raw(key, json_string(value)); }
  std::string done() const { return "{" + body + "}"; }
};

std::string json_array(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += ',';
    s += items[i];
  }
  return s + "]";
}

// ---------------------------------------------------------------- values

// The page keeps every value of a tensor up to this many elements; beyond, only its shape.
constexpr int64_t kValuesKept = 1 << 14;

std::vector<double> values_of(const Tensor& t) {
  NoGradGuard ng;
  return t.detach().to(Device::cpu).to(DType::f64).contiguous().to_vector();
}

// {"label":..., "shape":[...], "values":[...] or null} for a tensor the graph may no longer hold.
std::string tensor_json(const std::string& label, const Shape& shape, const Tensor& t) {
  Object o;
  o.str("label", label).raw("shape", json_shape(shape));
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (t.defined() && n <= kValuesKept) o.raw("values", json_numbers(values_of(t)));
  else o.raw("values", "null").str("why", t.defined() ? fmt::format("{} elements: too many to keep", n) : "gone");
  return o.done();
}

Tensor alive(const std::weak_ptr<TensorImpl>& ref) { return Tensor(ref.lock()); }

// ---------------------------------------------------------------- finite differences

// dL/dx by gradcheck's central differences, x being the tensor named `name` with the values `at`,
// through the caller's recompute. Undefined when recompute does not know the name.
Tensor central_difference(const HtmlOptions& o, const std::string& name, const std::vector<double>& at,
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
void check_fields(Object& o, const HtmlOptions& opt, const std::string& name, const Shape& shape,
                  const std::vector<double>& grad, const Tensor& value) {
  const int64_t n = static_cast<int64_t>(grad.size());
  if (!opt.recompute) {
    o.str("check", "not checked (no recompute function given)");
    return;
  }
  if (n > opt.check_limit) {
    o.str("check", fmt::format("not checked ({} elements)", n));
    return;
  }
  if (!value.defined()) {
    o.str("check", "not checked (its value is gone)");
    return;
  }
  Tensor fd = central_difference(opt, name, values_of(value), shape);
  if (!fd.defined()) {
    o.str("check", fmt::format("not checked (recompute cannot replace '{}')", name));
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
  o.raw("fd", json_numbers(num)).raw("err", json_number(worst)).raw("ok", ok ? "true" : "false");
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

std::string variant_json(const HtmlVariant& var) {
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

  std::vector<std::string> steps;
  BackwardObserver obs;
  obs.after = [&](size_t i, const Node& n, const std::vector<Tensor>& gout, const std::vector<Tensor>& gin) {
    std::vector<std::string> outs, ins;
    for (size_t k = 0; k < n.outputs.size(); ++k)
      outs.push_back(tensor_json(n.outputs[k].current_label(), n.outputs[k].shape, gout[k]));
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const InputSlot& in = n.inputs[k];
      if (k >= gin.size() || !gin[k].defined() || in.id == 0) continue;
      const std::string label = in.current_label();
      Object g;
      g.str("label", label).raw("shape", json_shape(in.shape));
      const std::vector<double> part = values_of(gin[k]);
      g.raw("values", json_numbers(part));
      std::vector<double>& whole = wholes[in.id];
      if (whole.empty()) whole.assign(part.size(), 0.0);
      for (size_t e = 0; e < part.size() && e < whole.size(); ++e) whole[e] += part[e];
      const int left = --edges_left[in.id];
      if (left > 0) {
        g.str("check", fmt::format("partial: {} more contribution{} to come; checked when whole", left,
                                   left == 1 ? "" : "s"));
      } else {
        if (whole != part) g.raw("total", json_numbers(whole));
        check_fields(g, opt, label, in.shape, whole, in.leaf ? Tensor(in.leaf) : alive(in.ref));
      }
      auto tv = opt.text_values.find(label);
      if (tv != opt.text_values.end()) g.raw("text", json_numbers(tv->second));
      ins.push_back(g.done());
    }
    const std::string first = n.outputs.empty() ? "" : n.outputs[0].current_label();
    auto rule = opt.rules.find(first);
    steps.push_back(Object()
                        .raw("entry", std::to_string(i))
                        .str("op", n.op)
                        .str("site", n.call_site())
                        .str("rule", rule == opt.rules.end() ? "" : rule->second)
                        .raw("gout", json_array(outs))
                        .raw("gin", json_array(ins))
                        .done());
  };
  BackwardOptions bo;
  bo.retain_graph = true;  // keeps the saved tensors for the node panel and the drawn graph
  bo.observer = &obs;
  backward(root, Tensor(), bo);

  std::unordered_map<const Node*, size_t> index_of;  // which tape entry made an input: the graph's edges
  for (size_t i = 0; i < tape.size(); ++i) index_of[tape[i].get()] = i;
  std::vector<std::string> nodes;
  for (size_t i = 0; i < tape.size(); ++i) {
    const Node& n = *tape[i];
    std::vector<std::string> ins, outs, saved;
    for (const InputSlot& in : n.inputs) {
      if (in.id == 0) continue;
      std::string t = tensor_json(in.current_label(), in.shape, in.leaf ? Tensor(in.leaf) : alive(in.ref));
      auto from = in.node ? index_of.find(in.node.get()) : index_of.end();
      t.insert(t.size() - 1, fmt::format(",\"kind\":\"{}\",\"from\":{}", in.node ? "result" : in.leaf ? "leaf" : "constant",
                                         from == index_of.end() ? "null" : std::to_string(from->second)));
      ins.push_back(t);
    }
    for (const OutputSlot& out : n.outputs) outs.push_back(tensor_json(out.current_label(), out.shape, alive(out.ref)));
    for (const SavedTensor& s : n.saved)
      saved.push_back(tensor_json(saved_name(n, s), s.data.defined() ? s.data.shape() : Shape{}, s.data));
    nodes.push_back(Object()
                        .raw("index", std::to_string(i))
                        .str("op", n.op)
                        .str("site", n.call_site())
                        .raw("inputs", json_array(ins))
                        .raw("outputs", json_array(outs))
                        .raw("saved", json_array(saved))
                        .done());
  }
  const std::string svg = opt.draw_graph ? render_svg(to_dot(root)) : "";
  return Object()
      .str("name", var.name)
      .str("title", opt.title)
      .str("intro", opt.intro)
      .str("root", root.label())
      .raw("table_limit", std::to_string(opt.table_limit))
      .raw("svg", svg.empty() ? "null" : json_string(svg))
      .raw("nodes", json_array(nodes))
      .raw("steps", json_array(steps))
      .done();
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

std::string page_data(const std::vector<HtmlVariant>& variants) {
  if (variants.empty()) fail("to_html", "no variants given; pass at least one scalar root");
  std::vector<std::string> vs;
  for (const HtmlVariant& v : variants) vs.push_back(variant_json(v));
  return json_array(vs);
}

std::string to_html(const std::vector<HtmlVariant>& variants, const std::string& title) {
  const std::string data = page_data(variants);
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
