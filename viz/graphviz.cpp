// viz/graphviz.cpp — to_dot: the tape of a result, drawn. Reads the graph only; records nothing.
#include "viz/graphviz.h"

#include <fmt/format.h>

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/tape.h"

namespace hg {

namespace {

// A DOT quoted string holding `lines`. Only `"` and `\` are special inside quotes (`\` starts
// DOT's own escapes such as \n), so names like `a"b` or `x\y` come out as written; UTF-8 ("Kᵀ")
// passes through, as DOT reads UTF-8 by default.
std::string quoted(const std::vector<std::string>& lines) {
  std::string q = "\"";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) q += "\\n";
    for (char c : lines[i]) {
      if (c == '"' || c == '\\') q += '\\';
      if (c == '\n') q += "\\n";  // a line break inside a name stays a line break
      else if (c != '\r') q += c;
    }
  }
  return q + "\"";
}

// "P (3, 3) float64", with the device when it is not the CPU: Tensor::describe()'s words, for a
// tensor the graph knows only by its slot (it may be gone).
std::string describe(const std::string& label, const Shape& shape, DType dtype, Device device) {
  std::string s = fmt::format("{} {} {}", label, shape_str(shape), dtype_name(dtype));
  if (device != Device::cpu) s += fmt::format(" {}", device_name(device));
  return s;
}

constexpr const char* kNodeStyle = "shape=box";
constexpr const char* kRootStyle = "shape=box style=\"filled,bold\" penwidth=2 fillcolor=\"#fde8a6\"";
constexpr const char* kLeafStyle = "shape=box style=\"rounded,filled\" fillcolor=\"#d6e9f8\"";
constexpr const char* kConstantStyle = "shape=box style=\"rounded,dashed\" color=grey50 fontcolor=grey40";

// A leaf's box: its name now, its shape, and its gradient's shape once a backward has set it.
std::string leaf_label(const InputSlot& in) {
  std::vector<std::string> lines = {describe(in.current_label(), in.shape, in.dtype, in.device)};
  if (in.leaf && in.leaf->grad) lines.push_back(fmt::format("grad {}", shape_str(in.leaf->grad->shape)));
  if (!in.leaf) lines.push_back("constant");
  return quoted(lines);
}

}  // namespace

std::string saved_name(const Node& node, const SavedTensor& saved) {
  // An output the op's own words already name ("... output P") stays as they say it.
  auto named = [&](const std::string& label, bool is_name, bool is_output) {
    const bool said = is_output && (saved.what == label || saved.what.ends_with(" " + label));
    return is_name && !said ? fmt::format("{} ({})", label, saved.what) : saved.what;
  };
  for (const InputSlot& in : node.inputs) {
    const TensorImpl* impl = in.leaf ? in.leaf.get() : in.ref.lock().get();
    if (impl && impl == saved.source) return named(in.current_label(), !impl->name.empty(), false);
  }
  for (const OutputSlot& out : node.outputs) {
    const std::shared_ptr<TensorImpl> impl = out.ref.lock();
    if (impl && impl.get() == saved.source) return named(out.current_label(), !impl->name.empty(), true);
  }
  return saved.what;
}

std::string to_dot(const Tensor& root) {
  std::string dot = "digraph handgrad {\n  graph [fontname=\"Helvetica\"];\n"
                    "  node [fontname=\"Helvetica\" fontsize=11];\n  edge [color=grey30 arrowsize=0.7];\n";
  if (!root.defined()) return dot + "}\n";
  if (!root.impl()->node) {  // a leaf: nothing was recorded, so it is the whole graph
    InputSlot self;
    self.label = root.label();
    self.shape = root.shape();
    self.dtype = root.dtype();
    self.device = root.device();
    self.leaf = root.impl_ptr();
    return dot + fmt::format("  l{} [{} label={}];\n}}\n", root.id(), kRootStyle, leaf_label(self));
  }

  const std::vector<std::shared_ptr<Node>> tape = tape_of(root);
  std::unordered_map<const Node*, size_t> index;  // a node's place on the tape: its number in the picture
  for (size_t i = 0; i < tape.size(); ++i) index[tape[i].get()] = i;
  dot += fmt::format("  label={} labelloc=t;\n",
                     quoted({fmt::format("graph of {}: {} nodes in tape order (backward runs #{} to #0)",
                                         root.label(), tape.size(), tape.size() - 1)}));

  std::unordered_set<std::string> drawn_leaves;  // a leaf read by several nodes is drawn once
  for (size_t i = 0; i < tape.size(); ++i) {
    const Node& n = *tape[i];
    std::vector<std::string> lines = {fmt::format("#{} {}", i, n.op)};
    for (const OutputSlot& out : n.outputs) lines.push_back(describe(out.current_label(), out.shape, out.dtype, out.device));
    for (const SavedTensor& s : n.saved) lines.push_back("saves " + saved_name(n, s));
    if (n.freed) lines.push_back("freed by backward");
    const bool is_root = &n == root.impl()->node.get();
    dot += fmt::format("  n{} [{} label={} tooltip={}];\n", i, is_root ? kRootStyle : kNodeStyle, quoted(lines),
                       quoted({fmt::format("{} recorded at {}", n.op, n.call_site())}));

    for (const InputSlot& in : n.inputs) {
      if (in.id == 0) continue;  // an optional input left undefined: nothing flows along it
      std::string from, edge_attrs;
      if (in.node) {
        from = fmt::format("n{}", index.at(in.node.get()));
        if (in.node->outputs.size() > 1)  // say which of the producer's outputs this is
          edge_attrs = fmt::format(" [label={}]", quoted({in.node->outputs[in.output_nr].current_label()}));
      } else {
        // Leaves and constants are keyed apart: a tensor read as a constant, then marked
        // requires_grad and read again, is two different things to the graph.
        from = fmt::format("{}{}", in.leaf ? "l" : "c", in.id);
        if (drawn_leaves.insert(from).second)
          dot += fmt::format("  {} [{} label={}];\n", from, in.leaf ? kLeafStyle : kConstantStyle, leaf_label(in));
        if (!in.leaf) edge_attrs = " [style=dashed color=grey50]";
      }
      dot += fmt::format("  {} -> n{}{};\n", from, i, edge_attrs);
    }
  }
  return dot + "}\n";
}

}  // namespace hg
