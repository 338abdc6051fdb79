// engine/tape.cpp — recording and the reverse walk. Read this file to know what backward() does.
#include "engine/tape.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"

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
  const char* file = where.file_name();
  const char* base = std::strrchr(file, '/');
  return fmt::format("{}:{}", base ? base + 1 : file, where.line());
}

// ---------------------------------------------------------------- recording

bool should_record(const std::vector<Tensor>& inputs) {
  if (!t_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

SavedTensor save(const Tensor& t, std::string what) {
  SavedTensor s;
  s.what = std::move(what);
  s.data = t.detach();
  s.version = t.impl()->storage->version;
  s.source = t.impl();
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
           "called from {}. Check the values this op is given there (e.g. log or sqrt of a negative entry, a "
           "division by zero).", k, shape_str(outputs[k].shape()), shapes_of(n.inputs), n.call_site());
}

}  // namespace

void record(std::string op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            std::vector<SavedTensor> saved, BackwardFn backward, DoubleBackward double_backward,
            Site where) {
  auto node = std::make_shared<Node>();
  node->op = std::move(op);
  node->seq = g_next_seq++;
  node->where = where;
  node->double_backward = double_backward;
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
  if (anomaly_enabled()) check_forward(*node, inputs, outputs);
}

// ---------------------------------------------------------------- the walk

namespace {

// a + b for two gradients of the same shape, as a fresh tensor (neither operand is modified:
// a gradient may alias another op's gradient, e.g. add passes its incoming gradient through).
Tensor sum_grads(const Tensor& a, const Tensor& b) {
  if (a.device() == Device::cpu && b.device() == Device::cpu && a.dtype() == b.dtype() && is_floating(a.dtype())) {
    // One pass, out = a + b (a clone then add_ would write out twice and read a twice).
    Tensor out = empty(a.shape(), a.dtype());
    dispatch_float(a.dtype(), "backward", [&]<typename T>() {
      for_each_row<T, const T, const T>(
          out.shape(), {&out.strides(), &a.strides(), &b.strides()},
          std::make_tuple(out.data_ptr<T>(), a.data_ptr<const T>(), b.data_ptr<const T>()),
          [](int64_t n, std::tuple<T*, const T*, const T*> p, const std::array<int64_t, 3>& st) {
            auto [o, x, y] = p;
            if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
              for (int64_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
            } else {
              for (int64_t i = 0; i < n; ++i) o[i * st[0]] = x[i * st[1]] + y[i * st[2]];
            }
          });
    });
    return out;
  }
  Tensor out = a.contiguous().clone();
  out.add_(b);
  return out;
}

// a + b recorded as a node of its own, for summing gradients under create_graph (the engine
// cannot call ops/add). Its backward passes the incoming gradient to both: trivially composed.
Tensor add_recorded(const Tensor& a, const Tensor& b) {
  Tensor out;
  {
    NoGradGuard ng;
    out = sum_grads(a, b);
  }
  if (should_record({a, b}))
    record("accumulate_grad", {a, b}, {out}, {}, [](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
      return std::vector<Tensor>{g[0], g[0]};
    }, DoubleBackward::composed);
  return out;
}

// One gradient being summed over its contributions. `owned`: the buffer was allocated by this
// walk and nothing else holds it, so a further contribution can be added in place.
struct GradSlot {
  Tensor g;
  bool owned = false;
  void add(const Tensor& more, bool create_graph) {
    if (!g.defined()) {
      g = more;
    } else if (create_graph) {
      g = add_recorded(g, more);
    } else if (owned) {
      g.add_(more);
    } else {
      g = sum_grads(g, more);
      owned = true;
    }
  }
};

void check_saved_versions(const Node& n) {
  for (const SavedTensor& s : n.saved) {
    uint64_t now = s.data.impl()->storage->version;
    if (now != s.version)
      throw Error(fmt::format(
          "{} backward: one of the tensors needed for the gradient, the {} (shape {}), has been modified by an "
          "in-place operation since the forward pass: saved at version {}, now version {}. Don't write in place "
          "into tensors the graph saved (clone() them first), or redo the forward pass after the write.",
          n.op, s.what, shape_str(s.data.shape()), s.version, now));
  }
}

// The saved tensors as the backward sees them: constants, or under create_graph the tensors
// themselves (their gradient flows back through what the backward computes with them).
std::vector<Tensor> unpack_saved(const std::shared_ptr<Node>& self, bool create_graph) {
  std::vector<Tensor> out;
  for (const SavedTensor& s : self->saved) {
    std::shared_ptr<Node> producer = s.is_output ? self : s.node;
    if (!create_graph || (!s.leaf && !producer)) {
      out.push_back(s.data);
    } else if (s.leaf) {
      out.push_back(Tensor(s.leaf));
    } else {
      auto impl = std::make_shared<TensorImpl>(*s.data.impl());
      impl->requires_grad = true;
      impl->node = std::move(producer);
      impl->output_nr = s.output_nr;
      out.push_back(Tensor(std::move(impl)));
    }
  }
  return out;
}

// Runs a node's backward. Under create_graph, a backward made of recorded ops records itself;
// a first-order one runs unrecorded and its gradients get a node that refuses to be walked.
std::vector<Tensor> call_backward(const std::shared_ptr<Node>& n, const std::vector<Tensor>& gout, bool create_graph) {
  if (!n->backward) fail(n->op, "has no backward function; it cannot be differentiated");
  const bool composed = n->double_backward == DoubleBackward::composed;
  std::vector<Tensor> saved = unpack_saved(n, create_graph && composed);
  if (!create_graph || composed) return n->backward(gout, saved);

  std::vector<Tensor> gin;
  {
    NoGradGuard ng;
    gin = n->backward(gout, saved);
  }
  std::vector<Tensor> depends_on;  // what the gradients are functions of, as far as a graph is concerned
  for (const Tensor& g : gout)
    if (g.requires_grad()) depends_on.push_back(g);
  for (const Tensor& s : unpack_saved(n, true))
    if (s.requires_grad()) depends_on.push_back(s);
  std::vector<Tensor> marked;
  for (Tensor& g : gin)
    if (g.defined()) marked.push_back(g = g.detach());
  if (!depends_on.empty() && !marked.empty()) {
    const std::string op = n->op, site = n->call_site();
    record(op + "_backward", depends_on, marked, {}, [op, site](const std::vector<Tensor>&, const std::vector<Tensor>&)
           -> std::vector<Tensor> {
             fail(op, "double backward of {} is not implemented (the node recorded at {}): its backward is a "
                  "fused kernel without a derivative of its own. Differentiate twice only through ops whose "
                  "backward is differentiable (the gradcheck program's second-order rows list them).", op, site);
           });
  }
  return gin;
}

// Anomaly mode, backward: finite gradients in, NaN/Inf out names the op and where it was called.
void check_backward(const Node& n, const std::vector<Tensor>& gout, const std::vector<Tensor>& gin) {
  for (const Tensor& g : gout)
    if (!all_finite(g)) return;
  for (size_t k = 0; k < gin.size(); ++k)
    if (!all_finite(gin[k]))
      fail(n.op, "anomaly: the backward of {} (called from {}, inputs of shapes ({})) returned NaN or Inf in the "
           "gradient of input {} from finite incoming gradients", n.op, n.call_site(), shapes_of(n.inputs), k);
}

[[noreturn]] void fail_freed(const Node& n) {
  fail("backward", "trying to backward through the graph a second time: the {} node (called from {}) was already "
       "freed by an earlier backward(), which dropped the tensors it saved. Specify retain_graph=true in the "
       "first backward() (or grad()) to walk the graph again, or redo the forward pass.", n.op, n.call_site());
}

// Every node the roots reach through inputs that need a gradient, in recording order: the tape.
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
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a->seq < b->seq; });
  return found;
}

Tensor apply_hooks(const std::vector<GradHook>& hooks, Tensor g) {
  for (const GradHook& h : hooks)
    if (Tensor r = h(g); r.defined()) g = r;
  return g;
}

struct Seeded {
  std::vector<Tensor> roots, seeds;
};

// One backward pass from `roots` (each with its seed). With `wanted`, returns the gradient of
// each wanted tensor and touches no .grad; without, accumulates into the leaves' .grad.
std::vector<Tensor> run_backward(const Seeded& s, bool retain_graph, bool create_graph,
                                 const BackwardObserver* observer, const std::vector<Tensor>* wanted) {
  GradModeGuard mode(create_graph);  // backward functions record only under create_graph
  std::unordered_map<const Node*, std::vector<GradSlot>> pending;  // gradients of nodes' outputs
  std::vector<std::pair<std::shared_ptr<TensorImpl>, GradSlot>> leaves;  // in the order first reached
  std::unordered_map<const TensorImpl*, size_t> leaf_at;
  auto to_leaf = [&](const std::shared_ptr<TensorImpl>& leaf, const Tensor& g) {
    auto [it, fresh] = leaf_at.emplace(leaf.get(), leaves.size());
    if (fresh) leaves.push_back({leaf, GradSlot{}});
    leaves[it->second].second.add(g, create_graph);
  };
  auto to_node = [&](const Node* n, uint32_t k, const Tensor& g) {
    std::vector<GradSlot>& slots = pending[n];
    if (slots.empty()) slots.resize(n->outputs.size());
    slots[k].add(g, create_graph);
  };

  std::vector<std::shared_ptr<Node>> root_nodes;
  for (size_t i = 0; i < s.roots.size(); ++i) {
    const Tensor& r = s.roots[i];
    if (r.impl()->node) {
      to_node(r.impl()->node.get(), r.impl()->output_nr, s.seeds[i]);
      root_nodes.push_back(r.impl()->node);
    } else {
      to_leaf(r.impl_ptr(), s.seeds[i]);
    }
  }
  const std::vector<std::shared_ptr<Node>> tape = reach(root_nodes);

  // grad(): run only the nodes that lead to a wanted tensor, and capture the wanted gradients.
  std::unordered_set<const Node*> wanted_nodes, needed;
  std::unordered_set<const TensorImpl*> wanted_leaves;
  std::unordered_map<const Node*, std::vector<Tensor>> captured;
  if (wanted) {
    for (const Tensor& w : *wanted) {
      if (w.impl()->node) wanted_nodes.insert(w.impl()->node.get());
      else wanted_leaves.insert(w.impl());
    }
    for (const auto& n : tape)
      for (const InputSlot& in : n->inputs)
        if ((in.leaf && wanted_leaves.count(in.leaf.get())) ||
            (in.node && (wanted_nodes.count(in.node.get()) || needed.count(in.node.get()))))
          needed.insert(n.get());
  }

  std::vector<Node*> walked;
  for (size_t i = tape.size(); i-- > 0;) {
    const std::shared_ptr<Node>& n = tape[i];
    auto it = pending.find(n.get());
    if (it == pending.end()) continue;  // reached, but every gradient into it was absent
    std::vector<Tensor> gout;
    for (GradSlot& slot : it->second) gout.push_back(std::move(slot.g));
    pending.erase(it);
    for (const auto& [k, hook] : n->hooks)
      if (gout[k].defined()) gout[k] = apply_hooks({hook}, gout[k]);
    if (wanted_nodes.count(n.get())) captured[n.get()] = gout;
    if (wanted && !needed.count(n.get())) continue;
    if (n->freed) fail_freed(*n);
    for (size_t k = 0; k < gout.size(); ++k)
      if (!gout[k].defined()) gout[k] = zeros(n->outputs[k].shape, n->outputs[k].dtype, n->outputs[k].device);

    if (observer && observer->before) observer->before(i, *n, gout);
    check_saved_versions(*n);
    std::vector<Tensor> gin = call_backward(n, gout, create_graph);
    walked.push_back(n.get());
    if (gin.size() != n->inputs.size())
      fail(n->op, "backward returned {} gradients for {} inputs (a bug in the op)", gin.size(), n->inputs.size());
    if (anomaly_enabled()) check_backward(*n, gout, gin);
    if (observer && observer->after) observer->after(i, *n, gout, gin);

    for (size_t k = 0; k < gin.size(); ++k) {
      const InputSlot& in = n->inputs[k];
      if (!in.needs_grad || !gin[k].defined()) continue;
      if (gin[k].shape() != in.shape)
        fail(n->op, "backward produced a gradient of shape {} for input {} of shape {} (a bug in the op)",
             shape_str(gin[k].shape()), in.current_label(), shape_str(in.shape));
      if (in.leaf) to_leaf(in.leaf, gin[k]);
      else if (in.node) to_node(in.node.get(), in.output_nr, gin[k]);
    }
  }

  if (!retain_graph)
    for (Node* n : walked) {  // drop what backward needed; keep the structure for printing and drawing
      for (SavedTensor& sv : n->saved) {
        sv.data = Tensor();
        sv.leaf.reset();
        sv.node.reset();
      }
      n->backward = nullptr;
      n->freed = true;
    }

  std::vector<Tensor> result;
  if (wanted) {
    for (const Tensor& w : *wanted) {
      if (w.impl()->node) {
        auto c = captured.find(w.impl()->node.get());
        result.push_back(c == captured.end() ? Tensor() : c->second[w.impl()->output_nr]);
      } else {
        auto l = leaf_at.find(w.impl());
        result.push_back(l == leaf_at.end() ? Tensor() : apply_hooks(w.impl()->hooks, leaves[l->second].second.g));
      }
    }
    return result;
  }
  for (auto& [leaf, slot] : leaves) {
    Tensor g = apply_hooks(leaf->hooks, slot.g);
    if (create_graph) leaf->grad = leaf->grad ? add_recorded(Tensor(leaf->grad), g).impl_ptr() : g.impl_ptr();
    else if (leaf->grad) leaf->grad = sum_grads(Tensor(leaf->grad), g).impl_ptr();
    else leaf->grad = slot.owned ? g.impl_ptr() : g.contiguous().clone().impl_ptr();
  }
  return result;
}

// A seed for each root: given, or ones for a scalar.
Tensor seed_for(const char* op, const Tensor& root, const Tensor& seed) {
  if (!root.defined()) fail(op, "called on an undefined tensor");
  if (!root.requires_grad())
    fail(op, "{} does not require grad: no input of the computation had requires_grad_() set, "
         "or it was computed under NoGradGuard", root.describe());
  if (!seed.defined()) {
    if (root.numel() != 1)
      fail(op, "{} is not a scalar ({} elements); pass a seed gradient of shape {} "
           "(dL/d of this tensor), or reduce it to a scalar first (e.g. sum)",
           root.describe(), root.numel(), shape_str(root.shape()));
    return ones(root.shape(), root.dtype(), root.device());
  }
  if (seed.shape() != root.shape() || seed.dtype() != root.dtype() || seed.device() != root.device())
    fail(op, "the seed gradient {} must match {} in shape, dtype and device", seed.describe(), root.describe());
  return seed;
}

}  // namespace

void backward(const Tensor& root, const Tensor& seed, const BackwardOptions& opts) {
  Seeded s{{root}, {seed_for("backward", root, seed)}};
  run_backward(s, opts.retain_graph || opts.create_graph, opts.create_graph, opts.observer, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, const GradOptions& opts) {
  if (outputs.empty()) fail("grad", "no outputs given; pass the tensors to differentiate");
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    fail("grad", "{} grad_outputs for {} outputs; give one per output (or none, for scalar outputs)",
         grad_outputs.size(), outputs.size());
  Seeded s;
  for (size_t i = 0; i < outputs.size(); ++i) {
    s.roots.push_back(outputs[i]);
    s.seeds.push_back(seed_for("grad", outputs[i], grad_outputs.empty() ? Tensor() : grad_outputs[i]));
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined() || !inputs[i].requires_grad())
      fail("grad", "input {} ({}) does not require grad, so it has no gradient; call requires_grad_() on it "
           "before the forward pass", i, inputs[i].defined() ? inputs[i].describe() : "undefined");
  std::vector<Tensor> g = run_backward(s, opts.retain_graph.value_or(opts.create_graph), opts.create_graph,
                                       nullptr, &inputs);
  for (size_t i = 0; i < g.size(); ++i)
    if (!g[i].defined() && !opts.allow_unused)
      fail("grad", "input {} ({}) was not used to compute the outputs, so it has no gradient; pass "
           "allow_unused=true to get an undefined Tensor for it", i, inputs[i].describe());
  return g;
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
