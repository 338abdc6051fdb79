// engine/tape.cpp — recording and the reverse walk. Read this file to know what backward() does.
#include "engine/tape.h"

#include <fmt/format.h>

#include <atomic>
#include <unordered_map>
#include <unordered_set>

#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"

namespace hg {

// ---------------------------------------------------------------- grad mode

namespace {
thread_local bool t_grad_enabled = true;
thread_local std::weak_ptr<Tape> t_current;  // the tape new entries go to, while it is alive
std::atomic<size_t> g_live_tapes{0};
}  // namespace

bool grad_enabled() { return t_grad_enabled; }
NoGradGuard::NoGradGuard() : prev_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = prev_; }

Tape::Tape() { ++g_live_tapes; }
Tape::~Tape() { --g_live_tapes; }
size_t Tape::live_count() { return g_live_tapes.load(); }

struct TapeAccess {
  static std::vector<TapeEntry>& entries(Tape& t) { return t.entries_; }
  static void free(Tape& t) { t.entries_.clear(); t.entries_.shrink_to_fit(); t.freed_ = true; }
};

// ---------------------------------------------------------------- recording

bool should_record(const std::vector<Tensor>& inputs) {
  if (!t_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

SavedTensor save(const Tensor& t, std::string what) {
  return SavedTensor{std::move(what), t.detach(), t.impl()->storage->version};
}

void record(std::string op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            std::vector<SavedTensor> saved, BackwardFn backward) {
  std::shared_ptr<Tape> tape = t_current.lock();
  if (!tape || tape->freed()) {  // the previous tape is gone or was consumed by backward: start anew
    tape = std::make_shared<Tape>();
    t_current = tape;
  }
  TapeEntry e;
  e.op = std::move(op);
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
      if (s.needs_grad && in.is_leaf()) s.leaf = in.impl_ptr();
      if (!in.is_leaf()) s.producer = in.tape().get();
    }
    e.inputs.push_back(std::move(s));
  }
  auto& entries = TapeAccess::entries(*tape);
  for (const Tensor& out : outputs) {
    TensorImpl* o = out.impl();
    o->requires_grad = true;
    o->tape = tape;
    o->entry = entries.size();
    e.outputs.push_back(OutputSlot{o->id, out.label(), out.impl_ptr(), o->shape, o->dtype, o->storage->device});
  }
  e.saved = std::move(saved);
  e.backward = std::move(backward);
  entries.push_back(std::move(e));
}

// ---------------------------------------------------------------- backward

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

void check_saved_versions(const TapeEntry& e) {
  for (const SavedTensor& s : e.saved) {
    uint64_t now = s.data.impl()->storage->version;
    if (now != s.version)
      throw Error(fmt::format(
          "{} backward: one of the tensors needed for the gradient, the {} (shape {}), has been modified by an "
          "in-place operation since the forward pass: saved at version {}, now version {}. Don't write in place "
          "into tensors the tape saved (clone() them first), or redo the forward pass after the write.",
          e.op, s.what, shape_str(s.data.shape()), s.version, now));
  }
}

}  // namespace

void backward(const Tensor& root, const Tensor& seed, const BackwardOptions& opts) {
  if (!root.defined()) throw Error("backward: called on an undefined tensor");
  if (!root.requires_grad())
    fail("backward", "{} does not require grad: no input of the computation had requires_grad_() set, "
         "or it was computed under NoGradGuard", root.describe());
  Tensor g0 = seed;
  if (!g0.defined()) {
    if (root.numel() != 1)
      fail("backward", "{} is not a scalar ({} elements); pass a seed gradient of shape {} "
           "(dL/d of this tensor), or reduce it to a scalar first (e.g. sum)",
           root.describe(), root.numel(), shape_str(root.shape()));
    g0 = ones(root.shape(), root.dtype(), root.device());
  } else if (g0.shape() != root.shape() || g0.dtype() != root.dtype() || g0.device() != root.device()) {
    fail("backward", "the seed gradient {} must match {} in shape, dtype and device", g0.describe(), root.describe());
  }
  NoGradGuard no_grad;  // backward functions run without recording

  if (root.is_leaf()) {  // nothing to walk: the gradient of a leaf with respect to itself
    TensorImpl* r = root.impl();
    r->grad = r->grad ? sum_grads(Tensor(r->grad), g0).impl_ptr() : g0.contiguous().clone().impl_ptr();
    return;
  }
  std::shared_ptr<Tape> tape = root.tape();
  if (tape->freed())
    fail("backward", "{} belongs to a tape that an earlier backward() already freed. Pass retain_graph=true to "
         "the first backward() to walk the same graph twice, or redo the forward pass.", root.describe());

  std::vector<TapeEntry>& entries = TapeAccess::entries(*tape);
  std::unordered_map<uint64_t, Tensor> grads;  // gradient of every non-leaf reached so far, by tensor id
  // Ids whose entry in `grads` is a buffer this walk allocated (a sum of two gradients) and that
  // nothing else holds: a third gradient can be added into it in place.
  std::unordered_set<uint64_t> owned;
  grads[root.id()] = g0;

  for (size_t i = root.tape_entry() + 1; i-- > 0;) {
    const TapeEntry& e = entries[i];
    std::vector<Tensor> gout;
    bool any = false;
    for (const OutputSlot& o : e.outputs) {
      auto it = grads.find(o.id);
      if (it != grads.end()) {
        gout.push_back(it->second);
        grads.erase(it);
        any = true;
      } else {
        gout.push_back(Tensor());
      }
    }
    if (!any) continue;  // this entry does not lead to the root
    for (size_t k = 0; k < gout.size(); ++k)
      if (!gout[k].defined()) gout[k] = zeros(e.outputs[k].shape, e.outputs[k].dtype, e.outputs[k].device);

    if (opts.observer && opts.observer->before) opts.observer->before(i, e, gout);
    check_saved_versions(e);
    if (!e.backward) fail(e.op, "has no backward function; it cannot be differentiated");
    std::vector<Tensor> gin = e.backward(gout, [&] {
      std::vector<Tensor> s;
      for (const SavedTensor& st : e.saved) s.push_back(st.data);
      return s;
    }());
    if (gin.size() != e.inputs.size())
      fail(e.op, "backward returned {} gradients for {} inputs (a bug in the op)", gin.size(), e.inputs.size());
    if (opts.observer && opts.observer->after) opts.observer->after(i, e, gout, gin);

    for (size_t k = 0; k < gin.size(); ++k) {
      const InputSlot& in = e.inputs[k];
      if (!in.needs_grad || !gin[k].defined()) continue;
      if (gin[k].shape() != in.shape)
        fail(e.op, "backward produced a gradient of shape {} for input {} of shape {} (a bug in the op)",
             shape_str(gin[k].shape()), in.current_label(), shape_str(in.shape));
      if (in.leaf) {
        TensorImpl* leaf = in.leaf.get();
        leaf->grad = leaf->grad ? sum_grads(Tensor(leaf->grad), gin[k]).impl_ptr()
                                : gin[k].contiguous().clone().impl_ptr();
      } else if (in.producer != tape.get()) {
        fail("backward", "the gradient reached {} (input {} of {}), which was computed on a tape that an earlier "
             "backward() freed. Redo its forward pass, pass retain_graph=true to that backward, or detach() it.",
             in.current_label(), k, e.op);
      } else {
        auto it = grads.find(in.id);
        if (it == grads.end()) {
          grads.emplace(in.id, gin[k]);
        } else if (owned.count(in.id)) {
          it->second.add_(gin[k]);
        } else {
          it->second = sum_grads(it->second, gin[k]);
          owned.insert(in.id);
        }
      }
    }
  }
  if (!opts.retain_graph) TapeAccess::free(*tape);
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

std::string TapeEntry::str() const {
  std::vector<std::string> ins, outs, sv;
  for (const InputSlot& s : inputs)
    ins.push_back(fmt::format("{} {}{}", s.current_label(), shape_str(s.shape), s.needs_grad ? "" : " (no grad)"));
  for (const OutputSlot& s : outputs) outs.push_back(fmt::format("{} {}", s.current_label(), shape_str(s.shape)));
  for (const SavedTensor& s : saved) sv.push_back(fmt::format("{} v{}", s.what, s.version));
  std::string line = fmt::format("{:<14} {} -> {}", op, fmt::join(ins, ", "), fmt::join(outs, ", "));
  if (!sv.empty()) line += fmt::format("   saves: {}", fmt::join(sv, ", "));
  return line;
}

std::string Tape::str() const {
  if (freed_) return "tape (freed by backward)\n";
  std::string s = fmt::format("tape, {} entries (backward walks them bottom to top)\n", entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) s += fmt::format("  #{:<3} {}\n", i, entries_[i].str());
  return s;
}

}  // namespace hg
