// engine/tape.cpp — the graph: grad and anomaly modes, nodes, recording, printing. The reverse
// walk that backward() and grad() run is engine/backward.cpp.
#include "engine/tape.h"
#include "engine/tape_internal.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "engine/error.h"

namespace hg {

// ---------------------------------------------------------------- modes

namespace {
thread_local bool t_grad_enabled = true;
thread_local int t_anomaly = -1;  // -1: no guard on this thread, the environment decides
std::atomic<size_t> g_live_nodes{0};
std::atomic<uint64_t> g_next_seq{1};

bool anomaly_from_environment() {
  static const bool on = [] {
    const char* v = std::getenv("HANDGRAD_DETECT_ANOMALY");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}
}  // namespace

bool grad_enabled() { return t_grad_enabled; }
NoGradGuard::NoGradGuard() : prev_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = prev_; }
GradModeGuard::GradModeGuard(bool on) : prev_(t_grad_enabled) { t_grad_enabled = on; }
GradModeGuard::~GradModeGuard() { t_grad_enabled = prev_; }

bool anomaly_enabled() { return t_anomaly < 0 ? anomaly_from_environment() : t_anomaly == 1; }
AnomalyMode::AnomalyMode(bool on) : prev_(t_anomaly) { t_anomaly = on ? 1 : 0; }
AnomalyMode::~AnomalyMode() { t_anomaly = prev_; }

// ---------------------------------------------------------------- nodes

namespace {
// Nodes waiting to be dropped. A node's destructor hands its input nodes here instead of dropping
// them itself, and the outermost destructor drains the list: no recursion, however deep the graph.
thread_local std::vector<std::shared_ptr<Node>> t_release;
thread_local bool t_releasing = false;
}  // namespace

Node::Node() { ++g_live_nodes; }
Node::~Node() {
  --g_live_nodes;
  for (InputSlot& in : inputs)
    if (in.node) t_release.push_back(std::move(in.node));
  for (SavedTensor& s : saved)
    if (s.node) t_release.push_back(std::move(s.node));
  if (t_releasing) return;
  t_releasing = true;
  while (!t_release.empty()) {
    std::shared_ptr<Node> n = std::move(t_release.back());
    t_release.pop_back();
    n.reset();  // may destroy it, which appends its inputs to t_release
  }
  t_releasing = false;
}
size_t Node::live_count() { return g_live_nodes.load(); }

std::string Node::call_site() const {
  if (!origin.empty()) return origin;
  const char* file = where.file_name();
  const char* base = std::strrchr(file, '/');
  return fmt::format("{}:{}", base ? base + 1 : file, where.line());
}

// ---------------------------------------------------------------- recording

namespace {
bool needs_node(const std::vector<Tensor>& inputs) {
  if (!t_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}
}  // namespace

bool should_record(const std::vector<Tensor>& inputs) { return needs_node(inputs) || detail::any_tangent(inputs); }

SavedTensor save(SavedSlot slot, const Tensor& t) {
  SavedTensor s;
  if (slot.def && slot.index < OpDef::kMaxSaved) s.what = std::string(slot.def->saves[slot.index].label);
  s.slot = slot.index;
  s.def = slot.def;
  s.data = t.detach();
  s.version = t.impl()->storage->version;
  s.source = t.impl();
  if (has_tangent(t)) detail::set_tangent(s.data, tangent_of(t));
  if (t.requires_grad()) {
    if (t.impl()->node) {
      s.node = t.impl()->node;
      s.output_nr = t.impl()->output_nr;
    } else {
      s.leaf = t.impl_ptr();
    }
  }
  return s;
}

namespace {

bool all_finite(const Tensor& t) {
  if (!t.defined() || !is_floating(t.dtype())) return true;
  for (double v : t.to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

std::string shapes_of(const std::vector<InputSlot>& inputs) {
  std::vector<std::string> s;
  for (const InputSlot& in : inputs) s.push_back(shape_str(in.shape));
  return fmt::format("{}", fmt::join(s, ", "));
}

// Anomaly mode, forward: an op that turns finite inputs into NaN/Inf is named with its call site.
void check_forward(const Node& n, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  for (const Tensor& in : inputs)
    if (!all_finite(in)) return;  // not this op's doing: an earlier one, or the data
  for (size_t k = 0; k < outputs.size(); ++k)
    if (!all_finite(outputs[k]))
      fail(n.op, "anomaly: the forward produced NaN or Inf in output {} {} from finite inputs of shapes ({}); "
           "called from {}. Check the values this op is given there (e.g. the logarithm or the root of a negative entry, a "
           "division by zero).", k, shape_str(outputs[k].shape()), shapes_of(n.inputs), n.call_site());
}

// The saved tensors held to the definition: each saved under a slot of this definition, in the
// order of its `saves` and each at most once, and every slot it lists as always saved, saved.
void check_saves(const OpDef& def, const std::vector<SavedTensor>& saved) {
  const std::span<const SavedLabel> listed = def.saved_labels();
  for (const SavedTensor& s : saved)
    if (s.def != &def || s.slot >= listed.size())
      fail(def.name, "its forward saves a tensor under {}, not a slot of this op's definition; save each tensor "
           "under a slot of the definition recorded (def.slot(\"label\"))",
           s.def && s.slot < s.def->saved_labels().size() ? fmt::format("{}'s slot \"{}\"", s.def->name, s.what)
                                                           : std::string("no slot it lists"));
  for (size_t k = 1; k < saved.size(); ++k)
    if (saved[k].slot <= saved[k - 1].slot)
      fail(def.name, "its forward saves \"{}\" after \"{}\": out of order (or twice) for its definition, which "
           "lists its saved tensors in one order", saved[k].what, saved[k - 1].what);
  for (size_t i = 0; i < listed.size(); ++i)
    if (listed[i].when.empty() && std::none_of(saved.begin(), saved.end(), [&](const SavedTensor& s) { return s.slot == i; }))
      fail(def.name, "its definition lists \"{}\" as saved (always), but the forward did not save it; save it, "
           "or say in the definition when it is saved (or remove it)", listed[i].label);
}

}  // namespace

void record(const OpDef& def, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            std::vector<SavedTensor> saved, BackwardFn backward, Site where) {
  record(def, inputs, outputs, std::move(saved), std::move(backward), BackwardFn{}, TangentFn{}, where);
}

void record(const OpDef& def, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            std::vector<SavedTensor> saved, BackwardFn backward, BackwardFn fused, Site where) {
  record(def, inputs, outputs, std::move(saved), std::move(backward), std::move(fused), TangentFn{}, where);
}

void record(const OpDef& def, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            std::vector<SavedTensor> saved, BackwardFn backward, TangentFn tangent, Site where) {
  record(def, inputs, outputs, std::move(saved), std::move(backward), BackwardFn{}, std::move(tangent), where);
}

void record(const OpDef& def, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            std::vector<SavedTensor> saved, BackwardFn backward, BackwardFn fused, TangentFn tangent, Site where) {
  if (tangent && def.tangent.empty())
    fail(def.name, "was recorded with a tangent rule that its definition does not describe; write the rule in the "
         "definition's `tangent`");
  if (!tangent && !def.tangent.empty())
    fail(def.name, "its definition gives a tangent rule ({}) but none was recorded; pass it to record() after the "
         "backward", def.tangent);
  const bool dual = detail::any_tangent(inputs);
  if (dual && !tangent)
    fail(def.name, "forward-mode AD of {} is not implemented: an input carries a tangent (a dual tensor) and the op "
         "has no tangent rule. Compute this part outside the dual level (on unpack_dual(x).primal), or use "
         "reverse mode (backward, grad) for it.", def.name);
  check_saves(def, saved);
  if (fused && def.fused.empty())
    fail(def.name, "was recorded with a fused backward that its definition does not name; describe it in the "
         "definition's `fused`");
  if (!fused && !def.fused.empty())
    fail(def.name, "its definition names a fused backward ({}) but none was recorded; pass it to record() beside "
         "the composed backward", def.fused);
  if (fused && !def.second_order)
    fail(def.name, "was recorded with a fused backward beside a backward its definition says is not composed "
         "(second_order = false); give one backward, the raw kernel");
  std::shared_ptr<Node> node;
  if (needs_node(inputs))
    node = record_node(std::string(def.name), &def, inputs, outputs, std::move(saved), std::move(backward),
                       std::move(fused), where);
  if (!dual) return;
  detail::push_tangents(def, inputs, outputs, tangent);
  if (node)  // a saved output's alias carries the output's tangent, as a saved input's does
    for (SavedTensor& s : node->saved)
      if (s.is_output && has_tangent(outputs[s.output_nr])) detail::set_tangent(s.data, tangent_of(outputs[s.output_nr]));
}

namespace {
std::atomic<OriginSource> g_origin_source{nullptr};
}  // namespace
void set_origin_source(OriginSource source) { g_origin_source.store(source, std::memory_order_relaxed); }

std::shared_ptr<Node> record_node(std::string op, const OpDef* def, const std::vector<Tensor>& inputs,
                                  const std::vector<Tensor>& outputs, std::vector<SavedTensor> saved,
                                  BackwardFn backward, BackwardFn fused, Site where) {
  auto node = std::make_shared<Node>();
  node->op = std::move(op);
  node->seq = g_next_seq++;
  node->def = def;
  node->where = where;
  if (OriginSource source = g_origin_source.load(std::memory_order_relaxed)) node->origin = source();
  for (const Tensor& in : inputs) {
    InputSlot s;
    if (in.defined()) {
      s.id = in.id();
      s.label = in.label();
      s.ref = in.impl_ptr();
      s.shape = in.shape();
      s.dtype = in.dtype();
      s.device = in.device();
      s.needs_grad = in.requires_grad();
      if (s.needs_grad && in.impl()->node) {
        s.node = in.impl()->node;
        s.output_nr = in.impl()->output_nr;
      } else if (s.needs_grad) {
        s.leaf = in.impl_ptr();
      }
    }
    node->inputs.push_back(std::move(s));
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    TensorImpl* o = outputs[k].impl();
    o->requires_grad = true;
    o->node = node;
    o->output_nr = static_cast<uint32_t>(k);
    node->outputs.push_back(OutputSlot{o->id, outputs[k].label(), outputs[k].impl_ptr(), o->shape, o->dtype,
                                       o->storage->device});
    for (SavedTensor& s : saved)
      if (s.source == o) {  // saved from its own output: linked back to this node only when unpacked
        s.is_output = true;
        s.output_nr = static_cast<uint32_t>(k);
      }
  }
  node->saved = std::move(saved);
  node->backward = std::move(backward);
  node->fused = std::move(fused);
  if (anomaly_enabled()) check_forward(*node, inputs, outputs);
  return node;
}

// ---------------------------------------------------------------- shared with the walk

void check_backward(const Node& n, const std::vector<Tensor>& gout, const std::vector<Tensor>& gin) {
  for (const Tensor& g : gout)
    if (!all_finite(g)) return;
  for (size_t k = 0; k < gin.size(); ++k)
    if (!all_finite(gin[k]))
      fail(n.op, "anomaly: the backward of {} (called from {}, inputs of shapes ({})) returned NaN or Inf in the "
           "gradient of input {} from finite incoming gradients", n.op, n.call_site(), shapes_of(n.inputs), k);
}

std::vector<std::shared_ptr<Node>> reach(const std::vector<std::shared_ptr<Node>>& roots) {
  std::vector<std::shared_ptr<Node>> found, stack;
  std::unordered_set<const Node*> seen;
  for (const auto& r : roots)
    if (r && seen.insert(r.get()).second) stack.push_back(r);
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    for (const InputSlot& in : n->inputs)
      if (in.node && seen.insert(in.node.get()).second) stack.push_back(in.node);
    found.push_back(std::move(n));
  }
  std::sort(found.begin(), found.end(), [](const auto& x, const auto& y) { return x->seq < y->seq; });
  return found;
}

// ---------------------------------------------------------------- printing

namespace {
std::string label_now(const std::weak_ptr<TensorImpl>& ref, const std::string& fallback) {
  std::shared_ptr<TensorImpl> t = ref.lock();
  return t && !t->name.empty() ? t->name : fallback;
}
}  // namespace

std::string InputSlot::current_label() const { return label_now(ref, label); }
std::string OutputSlot::current_label() const { return label_now(ref, label); }

std::string Node::str() const {
  std::vector<std::string> ins, outs, sv;
  for (const InputSlot& s : inputs)
    ins.push_back(fmt::format("{} {}{}", s.current_label(), shape_str(s.shape), s.needs_grad ? "" : " (no grad)"));
  for (const OutputSlot& s : outputs) outs.push_back(fmt::format("{} {}", s.current_label(), shape_str(s.shape)));
  for (const SavedTensor& s : saved) sv.push_back(fmt::format("{} v{}", s.what, s.version));
  std::string line = fmt::format("{:<14} {} -> {}", op, fmt::join(ins, ", "), fmt::join(outs, ", "));
  if (!sv.empty()) line += fmt::format("   saves: {}", fmt::join(sv, ", "));
  if (freed) line += "   (freed by backward)";
  return line;
}

std::vector<std::shared_ptr<Node>> tape_of(const Tensor& root) {
  if (!root.defined() || !root.impl()->node) return {};
  return reach({root.impl()->node});
}

std::string tape_str(const Tensor& root) {
  std::vector<std::shared_ptr<Node>> t = tape_of(root);
  std::string s = fmt::format("tape, {} entries (backward walks them bottom to top)\n", t.size());
  for (size_t i = 0; i < t.size(); ++i) s += fmt::format("  #{:<3} {}\n", i, t[i]->str());
  return s;
}

}  // namespace hg
