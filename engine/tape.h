// engine/tape.h — the tape: one entry per recorded op, walked once in reverse by backward().
//
// Ownership is one-way so nothing leaks: a result tensor owns its tape (shared_ptr); the tape's
// entries own only what backward needs — leaf inputs that want gradients, and *saved* tensors
// kept as detached aliases (same storage and version counter, no tape link). Drop every result
// of a forward and its tape, saved tensors included, is freed. backward() frees the entries
// it walked through unless retain_graph is asked.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace hg {

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

struct InputSlot {
  uint64_t id = 0;                    // tensor id: key of its gradient during backward
  std::string label;                  // for printing, as it was at record time
  std::weak_ptr<TensorImpl> ref;      // to print a name given after recording; never keeps it alive
  std::string current_label() const;  // the tensor's name now if it is alive and named, else label
  Shape shape;
  DType dtype = DType::f32;
  Device device = Device::cpu;
  bool needs_grad = false;            // requires_grad at record time
  std::shared_ptr<TensorImpl> leaf;   // set for leaves that need a gradient
  const Tape* producer = nullptr;     // tape of a non-leaf input (nullptr for leaves)
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
  std::string what;   // "softmax output P", shown in errors
  Tensor data;        // detached alias
  uint64_t version = 0;  // storage version when saved
};

// A backward function maps the gradients of an entry's outputs (one per output; an output
// that received no gradient gets zeros) and its saved tensors to one gradient per input
// (an undefined Tensor where the input needs none). It runs with grad mode off.
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs,
                                                     const std::vector<Tensor>& saved)>;

struct TapeEntry {
  std::string op;
  std::vector<InputSlot> inputs;
  std::vector<OutputSlot> outputs;
  std::vector<SavedTensor> saved;
  BackwardFn backward;
  std::string str() const;  // one line: op, inputs -> outputs, saved
};

class Tape {
 public:
  const std::vector<TapeEntry>& entries() const { return entries_; }
  bool freed() const { return freed_; }
  std::string str() const;  // every entry, numbered in recording order
  static size_t live_count();  // tapes alive in this process (leak tests)

  Tape();
  ~Tape();
 private:
  friend struct TapeAccess;
  std::vector<TapeEntry> entries_;
  bool freed_ = false;
};

// True when an op over `inputs` must be recorded (grad mode on, some input requires grad).
bool should_record(const std::vector<Tensor>& inputs);

// Save a tensor for backward (a detached alias plus its current version).
SavedTensor save(const Tensor& t, std::string what);

// Append one entry for op `op`. Marks each output as requiring grad and produced by this entry.
void record(std::string op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            std::vector<SavedTensor> saved, BackwardFn backward);

// Sees each entry as backward visits it. `before` runs with the incoming gradients (one per
// output); `after` adds the outgoing ones (one per input, undefined where none is needed).
struct BackwardObserver {
  std::function<void(size_t index, const TapeEntry&, const std::vector<Tensor>& grad_outputs)> before;
  std::function<void(size_t index, const TapeEntry&, const std::vector<Tensor>& grad_outputs,
                     const std::vector<Tensor>& grad_inputs)> after;
};

struct BackwardOptions {
  bool retain_graph = false;
  const BackwardObserver* observer = nullptr;
};

// Walk the tape of `root` from root's entry back to the first, accumulating into leaves' grad.
void backward(const Tensor& root, const Tensor& seed = Tensor(), const BackwardOptions& opts = {});

}  // namespace hg
