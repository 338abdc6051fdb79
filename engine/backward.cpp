// engine/backward.cpp — the reverse walk: backward() and grad(). Read this file to know what a
// backward pass does:
//   1. the roots' nodes and everything they reach are sorted by sequence number: the tape;
//   2. walking it from the last node to the first, each node whose outputs received a gradient
//      gets them summed (zeros for an output that got none), calls its backward, and passes each
//      input's gradient on — to the node that produced the input, or to the leaf;
//   3. the walked nodes drop what they saved (unless retain_graph); the leaves' gradients are
//      added to their .grad (backward) or handed back (grad).
// Under create_graph grad mode stays on, so every backward records itself and the gradients have
// graphs of their own.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "cpu/kernels.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/forward.h"
#include "engine/interrupt.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "engine/tape_internal.h"
#include "engine/tensor_internal.h"

namespace hg {

namespace {

// a + b for two gradients of the same shape, as a fresh tensor (neither operand is modified:
// a gradient may alias another op's gradient, e.g. an addition passes its incoming gradient on to both terms).
Tensor sum_grads(const Tensor& a, const Tensor& b) {
  if (a.device() == Device::cpu && b.device() == Device::cpu && a.dtype() == b.dtype() && is_floating(a.dtype())) {
    // One pass, out = a + b, through add_'s own loop (a clone then add_ would write out twice).
    Tensor out = empty(a.shape(), a.dtype());
    add_rows(out, a, b, 1.0);
    return out;
  }
  Tensor out = a.contiguous().clone();
  out.add_(b);
  return out;
}

// a + b recorded as a node of its own, for summing gradients under create_graph (the engine
// cannot call ops/). Its backward passes the incoming gradient to both: trivially composed.
// Its tangent is ȧ + ḃ, the two tangents added (a backward run inside a dual level adds up
// gradients that carry tangents: forward over reverse).
constexpr OpDef kAccumulateGrad{.name = "accumulate_grad", .saves_nothing = "two gradients added, under create_graph",
                                .derivation = "engine/backward.cpp", .from_backward = true,
                                .checked_by = "tests/engine/test_graph.cpp, Hessian-vector product",
                                .tangent = "ȧ + ḃ"};

Tensor add_recorded(const Tensor& a, const Tensor& b) {
  Tensor out;
  {
    NoGradGuard ng;
    out = sum_grads(a, b);
  }
  if (should_record({a, b}))
    record(kAccumulateGrad, {a, b}, {out}, {}, [](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{g[0], g[0]};
    }, [](const std::vector<Tensor>& d) {
      if (!d[0].defined() || !d[1].defined()) return std::vector<Tensor>{d[0].defined() ? d[0] : d[1]};
      return std::vector<Tensor>{add_recorded(d[0], d[1])};
    });
  return out;
}

// One gradient being summed over its contributions. `owned`: the buffer was allocated by this
// walk and nothing else holds it, so a further contribution can be added in place.
struct GradSlot {
  Tensor g;
  bool owned = false;
  void accumulate(const Tensor& more, bool create_graph) {
    if (!g.defined()) {
      g = more;
    } else if (create_graph || forward_ad_enabled()) {  // recorded: a graph, or tangents, to carry
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
// Each at its slot's place in the definition's `saves`: the backward reads saved[slot].
Saved unpack_saved(const std::shared_ptr<Node>& self, bool create_graph) {
  size_t width = self->def ? self->def->saved_labels().size() : 0;
  for (const SavedTensor& s : self->saved) width = std::max(width, s.slot + 1);
  std::vector<Tensor> out(width);
  for (const SavedTensor& s : self->saved) {
    std::shared_ptr<Node> producer = s.is_output ? self : s.node;
    if (!create_graph || (!s.leaf && !producer)) {
      out[s.slot] = s.data;
    } else if (s.leaf) {
      out[s.slot] = Tensor(s.leaf);
    } else {
      auto impl = std::make_shared<TensorImpl>(*s.data.impl());
      impl->requires_grad = true;
      impl->node = std::move(producer);
      impl->output_nr = s.output_nr;
      out[s.slot] = Tensor(std::move(impl));
    }
  }
  return Saved(std::move(out));
}

// Runs a node's backward, the engine's choice: without create_graph the fused backward where the
// op has one (else the composed); under create_graph a composed backward, which records itself.
// An op without a second order runs its raw backward unrecorded, and its gradients get a node that
// refuses to be walked.
// Inside a dual level (forward over reverse) the composed backward runs, whose ops push the
// tangents of the gradients and saved tensors on; a raw one cannot, and fails by name.
std::vector<Tensor> call_backward(const std::shared_ptr<Node>& n, const std::vector<Tensor>& gout, bool create_graph) {
  if (!n->backward) fail(n->op, "has no backward function; it cannot be differentiated");
  if (forward_ad_enabled()) {
    const Saved saved = unpack_saved(n, create_graph);
    if (!n->second_order() && (detail::any_tangent(gout) || detail::any_tangent(saved.all())))
      fail(n->op, "forward-mode AD through the backward of {} is not implemented (the node recorded at {}): its "
           "backward is a raw kernel that cannot carry tangents. Differentiate it with reverse mode twice "
           "(create_graph), or compute this gradient outside the dual level.", n->op, n->call_site());
    if (!create_graph || n->second_order()) return n->backward(gout, saved);
  }
  if (!create_graph) return (n->fused ? n->fused : n->backward)(gout, unpack_saved(n, false));
  if (n->second_order()) return n->backward(gout, unpack_saved(n, true));
  const Saved saved = unpack_saved(n, false);

  std::vector<Tensor> gin;
  {
    NoGradGuard ng;
    gin = n->backward(gout, saved);
  }
  std::vector<Tensor> depends_on;  // what the gradients are functions of, as far as a graph is concerned
  for (const Tensor& g : gout)
    if (g.requires_grad()) depends_on.push_back(g);
  const Saved on_graph = unpack_saved(n, true);  // the saved tensors as the graph's own
  for (const Tensor& s : on_graph.all())
    if (s.defined() && s.requires_grad()) depends_on.push_back(s);
  std::vector<Tensor> marked;
  for (Tensor& g : gin)
    if (g.defined()) marked.push_back(g = g.detach());
  if (!depends_on.empty() && !marked.empty()) {
    const std::string op = n->op, site = n->call_site();
    record_node(op + "_backward", nullptr, depends_on, marked, {}, [op, site](const std::vector<Tensor>&, const Saved&)
           -> std::vector<Tensor> {
             fail(op, "double backward of {} is not implemented (the node recorded at {}): its backward is a "
                  "fused kernel without a derivative of its own. Differentiate twice only through ops whose "
                  "backward is differentiable (the gradcheck program's second-order rows list them).", op, site);
           }, nullptr, Site::current());
  }
  return gin;
}

[[noreturn]] void fail_freed(const Node& n) {
  fail("backward", "trying to backward through the graph a second time: the {} node (called from {}) was already "
       "freed by an earlier backward(), which dropped the tensors it saved. Specify retain_graph=true in the "
       "first backward() (or grad()) to walk the graph again, or redo the forward pass.", n.op, n.call_site());
}

Tensor apply_hooks(const std::vector<GradHook>& hooks, Tensor g) {
  for (const GradHook& h : hooks)
    if (Tensor r = h(g); r.defined()) g = r;
  return g;
}

// One backward pass from some roots, each with its seed gradient. With `wanted` (grad()), it
// runs only the nodes that lead to a wanted tensor and hands back their gradients; without
// (backward()), it runs every node the roots reach and adds into the leaves' .grad.
class Walk {
 public:
  Walk(bool retain_graph, bool create_graph, const BackwardObserver* observer, const std::vector<Tensor>* wanted)
      : retain_(retain_graph), create_(create_graph), observer_(observer), wanted_(wanted) {}

  std::vector<Tensor> run(const std::vector<Tensor>& roots, const std::vector<Tensor>& seeds) {
    GradModeGuard mode(create_);  // backward functions record only under create_graph
    std::vector<std::shared_ptr<Node>> root_nodes;
    for (size_t i = 0; i < roots.size(); ++i) {
      const TensorImpl* r = roots[i].impl();
      if (r->node) root_nodes.push_back(r->node);
      deliver(roots[i].impl_ptr(), r->node.get(), r->output_nr, seeds[i]);
    }
    tape_ = reach(root_nodes);
    if (wanted_) plan_for_wanted();
    for (size_t i = tape_.size(); i-- > 0;) {
      check_interrupt();  // between nodes: Ctrl-C in a front end ends a long backward here
      visit(i);
    }
    if (!retain_) free_walked();
    if (wanted_) return gather_wanted();
    accumulate_leaves();
    return {};
  }

 private:
  // A gradient for output `k` of node `n`, or, when n is null, for the leaf itself.
  void deliver(const std::shared_ptr<TensorImpl>& leaf, const Node* n, uint32_t k, const Tensor& g) {
    if (n) {
      std::vector<GradSlot>& slots = pending_[n];
      if (slots.empty()) slots.resize(n->outputs.size());
      slots[k].accumulate(g, create_);
      return;
    }
    auto [it, fresh] = leaf_at_.emplace(leaf.get(), leaves_.size());
    if (fresh) leaves_.push_back({leaf, GradSlot{}});
    leaves_[it->second].second.accumulate(g, create_);
  }

  // grad(): a node is needed when one of its inputs is wanted or comes from a needed node.
  void plan_for_wanted() {
    for (const Tensor& w : *wanted_) {
      if (w.impl()->node) wanted_nodes_.insert(w.impl()->node.get());
      else wanted_leaves_.insert(w.impl());
    }
    for (const auto& n : tape_)  // in recording order, so an input's node is decided first
      for (const InputSlot& in : n->inputs)
        if ((in.leaf && wanted_leaves_.count(in.leaf.get())) ||
            (in.node && (wanted_nodes_.count(in.node.get()) || needed_.count(in.node.get()))))
          needed_.insert(n.get());
  }

  void visit(size_t i) {
    const std::shared_ptr<Node>& n = tape_[i];
    auto it = pending_.find(n.get());
    if (it == pending_.end()) return;  // reached, but every gradient into it was absent
    std::vector<Tensor> gout;
    for (GradSlot& slot : it->second) gout.push_back(std::move(slot.g));
    pending_.erase(it);
    for (const auto& [k, hook] : n->hooks)
      if (gout[k].defined()) gout[k] = apply_hooks({hook}, gout[k]);
    if (wanted_nodes_.count(n.get())) captured_[n.get()] = gout;
    if (wanted_ && !needed_.count(n.get())) return;
    if (n->freed) fail_freed(*n);
    for (size_t k = 0; k < gout.size(); ++k)
      if (!gout[k].defined()) gout[k] = zeros(n->outputs[k].shape, n->outputs[k].dtype, n->outputs[k].device);

    if (observer_ && observer_->before) observer_->before(i, *n, gout);
    check_saved_versions(*n);
    std::vector<Tensor> gin = call_backward(n, gout, create_);
    walked_.push_back(n.get());
    if (gin.size() != n->inputs.size())
      fail(n->op, "backward returned {} gradients for {} inputs (a bug in the op)", gin.size(), n->inputs.size());
    if (anomaly_enabled()) check_backward(*n, gout, gin);
    if (observer_ && observer_->after) observer_->after(i, *n, gout, gin);

    for (size_t k = 0; k < gin.size(); ++k) {
      const InputSlot& in = n->inputs[k];
      if (!in.needs_grad || !gin[k].defined()) continue;
      if (gin[k].shape() != in.shape)
        fail(n->op, "backward produced a gradient of shape {} for input {} of shape {} (a bug in the op)",
             shape_str(gin[k].shape()), in.current_label(), shape_str(in.shape));
      deliver(in.leaf, in.node.get(), in.output_nr, gin[k]);
    }
  }

  // Drop what the walked nodes saved for backward; keep the structure for printing and drawing.
  void free_walked() {
    for (Node* n : walked_) {
      for (SavedTensor& sv : n->saved) {
        sv.data = Tensor();
        sv.leaf.reset();
        sv.node.reset();
      }
      n->backward = nullptr;
      n->fused = nullptr;
      n->freed = true;
    }
  }

  std::vector<Tensor> gather_wanted() {
    std::vector<Tensor> result;
    for (const Tensor& w : *wanted_) {
      if (w.impl()->node) {
        auto c = captured_.find(w.impl()->node.get());
        result.push_back(c == captured_.end() ? Tensor() : c->second[w.impl()->output_nr]);
      } else {
        auto l = leaf_at_.find(w.impl());
        result.push_back(l == leaf_at_.end() ? Tensor() : apply_hooks(w.impl()->hooks, leaves_[l->second].second.g));
      }
    }
    return result;
  }

  void accumulate_leaves() {
    for (auto& [leaf, slot] : leaves_) {
      Tensor g = apply_hooks(leaf->hooks, slot.g);
      const bool ours = slot.owned && g.impl() == slot.g.impl();  // a buffer nothing else holds
      if (create_ || forward_ad_enabled()) leaf->grad = leaf->grad ? add_recorded(Tensor(leaf->grad), g).impl_ptr() : g.impl_ptr();
      else if (leaf->grad) leaf->grad = sum_grads(Tensor(leaf->grad), g).impl_ptr();
      else leaf->grad = ours ? g.impl_ptr() : g.contiguous().clone().impl_ptr();
    }
  }

  const bool retain_, create_;
  const BackwardObserver* observer_;
  const std::vector<Tensor>* wanted_;
  std::vector<std::shared_ptr<Node>> tape_;
  std::unordered_map<const Node*, std::vector<GradSlot>> pending_;  // gradients of nodes' outputs
  std::vector<std::pair<std::shared_ptr<TensorImpl>, GradSlot>> leaves_;  // in the order first reached
  std::unordered_map<const TensorImpl*, size_t> leaf_at_;
  std::unordered_set<const Node*> wanted_nodes_, needed_;
  std::unordered_set<const TensorImpl*> wanted_leaves_;
  std::unordered_map<const Node*, std::vector<Tensor>> captured_;
  std::vector<Node*> walked_;
};

// A seed for each root: given, or ones for a scalar.
Tensor seed_for(const char* op, const Tensor& root, const Tensor& seed) {
  if (!root.defined()) fail(op, "called on an undefined tensor");
  if (!root.requires_grad())
    fail(op, "{} does not require grad: no input of the computation had requires_grad_() set, "
         "or it was computed under NoGradGuard", root.describe());
  if (!seed.defined()) {
    if (root.numel() != 1)
      fail(op, "{} is not a scalar ({} elements); pass a seed gradient of shape {} "
           "(dL/d of this tensor), or reduce it to a scalar first (e.g. by summing it)",
           root.describe(), root.numel(), shape_str(root.shape()));
    return ones(root.shape(), root.dtype(), root.device());
  }
  if (seed.shape() != root.shape() || seed.dtype() != root.dtype() || seed.device() != root.device())
    fail(op, "the seed gradient {} must match {} in shape, dtype and device", seed.describe(), root.describe());
  return seed;
}

}  // namespace

std::span<const OpDef* const> gradient_defs() {
  static const OpDef* const defs[] = {&kAccumulateGrad};
  return defs;
}

void backward(const Tensor& root, const Tensor& seed, const BackwardOptions& opts) {
  Walk(opts.retain_graph || opts.create_graph, opts.create_graph, opts.observer, nullptr)
      .run({root}, {seed_for("backward", root, seed)});
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, const GradOptions& opts) {
  if (outputs.empty()) fail("grad", "no outputs given; pass the tensors to differentiate");
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    fail("grad", "{} grad_outputs for {} outputs; give one per output (or none, for scalar outputs)",
         grad_outputs.size(), outputs.size());
  std::vector<Tensor> seeds;
  for (size_t i = 0; i < outputs.size(); ++i)
    seeds.push_back(seed_for("grad", outputs[i], grad_outputs.empty() ? Tensor() : grad_outputs[i]));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined() || !inputs[i].requires_grad())
      fail("grad", "input {} ({}) does not require grad, so it has no gradient; call requires_grad_() on it "
           "before the forward pass", i, inputs[i].defined() ? inputs[i].describe() : "undefined");
  std::vector<Tensor> g = Walk(opts.retain_graph.value_or(opts.create_graph), opts.create_graph, nullptr, &inputs)
                              .run(outputs, seeds);
  for (size_t i = 0; i < g.size(); ++i)
    if (!g[i].defined() && !opts.allow_unused)
      fail("grad", "input {} ({}) was not used to compute the outputs, so it has no gradient; pass "
           "allow_unused=true to get an undefined Tensor for it", i, inputs[i].describe());
  return g;
}

}  // namespace hg
