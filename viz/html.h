// viz/html.h — a backward pass as one self-contained HTML page, to step through in a browser.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/tensor.h"

namespace hg {

struct HtmlOptions {
  std::string title = "backward pass";
  std::string intro;  // a paragraph above the step control (plain text)
  // For the finite-difference column: the scalar root recomputed with the tensor named `name` (a
  // leaf, or an intermediate the caller named) replaced by `value` (a float64 CPU tensor of its
  // shape). Return an undefined Tensor for a name it cannot replace ("not checked" on the page).
  // Left empty, the page has no finite differences.
  std::function<Tensor(const std::string& name, const Tensor& value)> recompute;
  int64_t check_limit = 64;  // tensors with more elements say "not checked (N elements)"
  int64_t table_limit = 48;  // matrices with more elements are drawn as heatmaps (values on hover)
  double eps = 1e-6, atol = 1e-5, rtol = 1e-3;  // central differences and their tolerance
  // Whether to draw the graph with Graphviz's dot (when it is on PATH); without, the page lays
  // the tape out itself. The live page, in a browser, has no dot to run.
  bool draw_graph = true;
  // The formula of a step, in the text's notation, keyed by the name of the step's first output
  // ("P" -> "dS = P ∘ (dP − ḡ)"). A step without one shows its op's name only.
  std::map<std::string, std::string> rules;
  // A step whose backward is wrong on purpose (a lab's "break it"): the rule it computes instead,
  // keyed as `rules`. The page shows it marked broken, with the right rule beside it.
  std::map<std::string, std::string> broken_rules;
  // The text's numbers for a gradient, keyed by the tensor's name ("S" for dL/dS), one per
  // element in row-major order, NaN where the text prints none.
  std::map<std::string, std::vector<double>> text_values;
};

// One graph on the page; several make variants the page can switch between.
struct HtmlVariant {
  std::string name;  // "causal, scaled by 1/√d_k"
  Tensor root;       // a scalar result whose graph is still there (not yet walked by backward)
  HtmlOptions options;
};

// The page: the graph (to_dot rendered by Graphviz's dot when it is on PATH; otherwise the tape
// as a list), each node clickable (op, call site, inputs' and outputs' shapes and values, what its
// backward saved); a step control (buttons, ← and → keys) walking the backward one tape entry at a
// time, last to first; at each step the incoming and outgoing gradients with their shapes, the
// formula, and beside each gradient its central difference and the largest disagreement.
// CSS, JavaScript and the SVG are inlined: the file works offline.
//
// The graph holds the forward's tensors weakly: an intermediate's values (and its finite
// differences) are on the page while the caller keeps it alive; its gradients always are.
// Runs each root's backward (retain_graph, so the page can show what was saved): the leaves'
// .grad accumulate as after root.backward(). Throws hg::Error for a root that is not a scalar or
// has no graph.
std::string to_html(const std::vector<HtmlVariant>& variants, const std::string& title);
std::string to_html(const Tensor& root, const HtmlOptions& options = {});

// The JSON the page's script reads: one object per variant ({name, title, intro, root, svg,
// nodes[], steps[]}, as viz/page_assets.h describes). The live page asks the WebAssembly build for
// it on every edit. Runs each root's backward as to_html does.
nlohmann::json page_data(const std::vector<HtmlVariant>& variants);

// A number as the pages read it: JSON has no infinities or NaN, so those are the strings "inf",
// "-inf" and "nan" (the pages' num() reads them back); every other number is itself.
nlohmann::json json_number(double v);

// The live page of the three-token example: the step-through page with an editor of its inputs
// above it (viz/live.js), and `module_js` — the library built as WebAssembly with the lab's one call
// (labs/three_token_live.h) — inlined, so the page recomputes every number itself on each edit.
// One file; no network request.
std::string live_page_html(const std::string& module_js);
// The module's script from `path` (the full build writes it to build/wasm/three_token_live.js when
// Emscripten is installed); throws hg::Error saying how to build it when it is not there, or when
// it is not a module that defines `export_name` (the induction page's is handgradInduction).
std::string read_live_module(const std::string& path, const std::string& export_name = "handgradLive");

// Writes `html` to `path`; throws hg::Error naming the path and the reason when it cannot.
void write_html(const std::string& path, const std::string& html);

}  // namespace hg
