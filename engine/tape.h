// engine/tape.h — the graph: one node per recorded op. Every result owns the graph that made it.
//
// A result holds the node that produced it; a node holds the nodes of its inputs and a sequence
// number taken when it was recorded. The nodes a root reaches, sorted by sequence number, are that
// graph's tape: backward() walks them in reverse and touches nothing else, so unrelated graphs
// never meet, and dropping the last result of a forward frees its graph.
//
// Ownership runs one way, from results towards inputs, so nothing cycles: a node owns its input
// nodes, the leaves that want gradients, and its saved tensors, kept as detached aliases (same
// storage and version counter) plus, for create_graph, a link to where each came from. A tensor
// a node saved from its own outputs links back to the node weakly (by the node itself at unpack).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/op_def.h"
#include "engine/saved.h"
#include "engine/tangents.h"
#include "engine/tensor.h"

namespace hg {

// ---------------------------------------------------------------- modes

// Grad mode: ops record only while it is on (the default) and an input requires grad.
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;
 private:
  bool prev_;
};

// Grad mode set to `on` for a scope, whatever it was (torch.set_grad_enabled): a function that
// differentiates inside itself can be called from code running under NoGradGuard.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool on);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;
 private:
  bool prev_;
};

// Anomaly mode (torch.autograd.detect_anomaly): while a guard lives on this thread, or when the
// environment has HANDGRAD_DETECT_ANOMALY=1, a recorded op whose forward turns finite inputs into
// NaN or Inf, or a backward that turns finite gradients into NaN or Inf, throws an hg::Error that
// names the op, its inputs' shapes and the file:line it was called from. Off, it costs one branch.
bool anomaly_enabled();
class AnomalyMode {
 public:
  explicit AnomalyMode(bool on = true);
  ~AnomalyMode();
  AnomalyMode(const AnomalyMode&) = delete;
  AnomalyMode& operator=(const AnomalyMode&) = delete;
 private:
  int prev_;
};

// ---------------------------------------------------------------- nodes

struct Node;

struct InputSlot {
  uint64_t id = 0;                    // tensor id at record time (printing and labs)
  std::string label;                  // for printing, as it was at record time
  std::weak_ptr<TensorImpl> ref;      // to print a name given after recording; never keeps it alive
  std::string current_label() const;  // the tensor's name now if it is alive and named, else label
  Shape shape;
  DType dtype = DType::f32;
  Device device = Device::cpu;
  bool needs_grad = false;            // requires_grad at record time
  // Where this input's gradient goes: the node that produced it (and which of its outputs it
  // was), or, for a leaf that requires grad, the leaf itself. Neither for a constant.
  std::shared_ptr<Node> node;
  uint32_t output_nr = 0;
  std::shared_ptr<TensorImpl> leaf;
};

struct OutputSlot {
  uint64_t id = 0;
  std::string label;
  std::weak_ptr<TensorImpl> ref;
  std::string current_label() const;
  Shape shape;
  DType dtype = DType::f32;
  Device device = Device::cpu;
};

struct SavedTensor {
  std::string what;      // "the output P", shown in errors and in the drawn graph: the slot's label
  size_t slot = 0;       // its place in the definition's `saves`, where the backward reads it
  const OpDef* def = nullptr;  // the definition whose slot it is
  Tensor data;           // detached alias; dropped when backward frees the node
  uint64_t version = 0;  // storage version when saved
  // Where the value came from, so that with create_graph the backward computes on the tensor
  // itself (its gradient flows back) rather than on a constant with its values.
  const TensorImpl* source = nullptr;  // identity at save time (matched against the outputs)
  std::shared_ptr<TensorImpl> leaf;    // a saved leaf that requires grad
  std::shared_ptr<Node> node;          // a saved non-leaf: its producer ...
  uint32_t output_nr = 0;              // ... and which output (also for is_output)
  bool is_output = false;              // one of this node's own outputs (linked at unpack)
};

// A backward function maps the gradients of a node's outputs (one per output; an output that
// received no gradient gets zeros) and its saved tensors to one gradient per input (an undefined
// Tensor where the input needs none). It runs with grad mode off, or on under create_graph.
// The saved tensors come as a Saved, read by slot (engine/saved.h).
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs, const Saved& saved)>;

struct Node {
  std::string op;             // its definition's name (or, for a gradient that refuses a second order, "<op>_backward")
  const OpDef* def = nullptr;  // what it is: the definition it was recorded with
  uint64_t seq = 0;  // recording order across the process: sorting a graph's nodes by it gives its tape
  std::vector<InputSlot> inputs;
  std::vector<OutputSlot> outputs;
  std::vector<SavedTensor> saved;
  // The backward. With a definition that has a second order it is made of recorded ops (composed),
  // and `fused`, when given, is the raw-kernel first-order one: backward() runs `fused` when no graph
  // is being created, `backward` under create_graph. Without a second order, `backward` is a raw
  // kernel, run unrecorded under create_graph with its gradients marked as not differentiable.
  BackwardFn backward;
  BackwardFn fused;
  Site where;  // the call that recorded it (the public op's caller)
  std::string origin;  // that call in a binding's language ("train.py:12"), where one says (set_origin_source)
  bool freed = false;          // backward ran without retain_graph: saved tensors and backward dropped
  // register_hook on a non-leaf output: run on its whole gradient before this node's backward.
  std::vector<std::pair<uint32_t, std::function<Tensor(const Tensor&)>>> hooks;

  bool second_order() const { return def && def->second_order; }
  std::string str() const;  // one line: op, inputs -> outputs, saved
  std::string call_site() const;  // origin when there is one, else "file.cpp:42"
  Node();
  ~Node();  // releases its input nodes iteratively: a chain of a million nodes frees without recursion
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  static size_t live_count();  // nodes alive in this process (leak tests)
};

// A binding (Python) says where, in its own language, the op being recorded was called from:
// `source` returns that place ("train.py:12"), or "" where it cannot tell. Each node recorded
// afterwards keeps it as its origin, which call_site() names instead of the C++ caller.
// nullptr (the default) asks nothing.
using OriginSource = std::string (*)();
void set_origin_source(OriginSource source);

// The tape of the graph that produced `root`: every node it reaches, in recording order.
std::vector<std::shared_ptr<Node>> tape_of(const Tensor& root);
// That tape printed, one numbered line per node (backward walks it bottom to top).
std::string tape_str(const Tensor& root);

// ---------------------------------------------------------------- recording

// True when an op over `inputs` must be recorded: grad mode on and some input requires grad (a
// node for the backward), or some input carries a tangent (engine/forward.h: its tangent rule runs).
bool should_record(const std::vector<Tensor>& inputs);

// Save a tensor for backward under one of its op's slots (engine/op_def.h): a detached alias plus
// its current version and its origin; inside a dual level the alias keeps the tensor's tangent, so
// a backward run there pushes tangents too.
SavedTensor save(SavedSlot slot, const Tensor& t);

// Record one node of the op `def` defines, with its composed backward (and, where the definition
// names one, its fused backward). Marks each output as requiring grad and produced by this node.
// Checks the saved tensors against the definition before anything runs backward: a slot of another
// op's definition, slots out of the definition's order (or one twice), or a slot it lists as always
// saved left out, is an hg::Error naming the op and the label. The backward is given the saved
// tensors at their slots' places (an undefined Tensor for a sometimes-saved one not saved).
// Under anomaly mode, checks the outputs for NaN/Inf made from finite inputs.
void record(const OpDef& def, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            std::vector<SavedTensor> saved, BackwardFn backward, Site where = Site::current());
void record(const OpDef& def, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            std::vector<SavedTensor> saved, BackwardFn backward, BackwardFn fused, Site where = Site::current());
// The same with the op's tangent rule (its definition's `tangent` describes it). The node is made
// when the backward needs one; the rule runs, after it, when an input carries a tangent. Recording
// an op whose inputs carry tangents without a rule is an hg::Error naming the op, as is a rule its
// definition does not describe, or a described rule not passed.
void record(const OpDef& def, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            std::vector<SavedTensor> saved, BackwardFn backward, TangentFn tangent, Site where = Site::current());
void record(const OpDef& def, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            std::vector<SavedTensor> saved, BackwardFn backward, BackwardFn fused, TangentFn tangent,
            Site where = Site::current());

// ---------------------------------------------------------------- backward

// Sees each node as backward visits it. `index` is the node's place in the walked graph's tape
// (0 = recorded first). `before` runs with the incoming gradients (one per output); `after` adds
// the outgoing ones (one per input, undefined where none is needed).
struct BackwardObserver {
  std::function<void(size_t index, const Node&, const std::vector<Tensor>& grad_outputs)> before;
  std::function<void(size_t index, const Node&, const std::vector<Tensor>& grad_outputs,
                     const std::vector<Tensor>& grad_inputs)> after;
};

struct BackwardOptions {
  bool retain_graph = false;  // keep the walked nodes' saved tensors (create_graph implies it)
  bool create_graph = false;  // record the backward itself, so the gradients can be differentiated
  const BackwardObserver* observer = nullptr;
};

// Walk the graph of `root` in reverse recording order, accumulating into the leaves' grad.
void backward(const Tensor& root, const Tensor& seed = Tensor(), const BackwardOptions& opts = {});

struct GradOptions {
  std::optional<bool> retain_graph = std::nullopt;  // default: create_graph
  bool create_graph = false;
  bool allow_unused = false;  // an input the outputs do not depend on gets an undefined Tensor instead of an error
};

// d(sum_k <outputs[k], grad_outputs[k]>) / d inputs[i], returned without touching any .grad
// (torch.autograd.grad). grad_outputs may be empty when every output is a scalar (ones).
// inputs may be leaves or intermediate results.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, const GradOptions& opts = {});

}  // namespace hg
