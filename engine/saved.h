// engine/saved.h — the tensors a node saved, as its backward reads them: by slot, never by number.
//
// A backward is given its node's saved tensors as a Saved and reads each by the slot its label
// names in the op's definition (engine/op_def.h):
//   [](const std::vector<Tensor>& g, const Saved& s) { ... s[CubeSaved::x] ... }
// s[0] does not compile: a number says nothing of which tensor it means, and goes on compiling
// when the definition's list changes (ctest saved_by_slot holds this).
#pragma once
#include <concepts>
#include <utility>
#include <vector>

#include "engine/op_def.h"
#include "engine/tensor.h"

namespace hg {

class Saved {
 public:
  Saved() = default;
  // Each tensor at its slot's place in the definition's `saves` (undefined where a sometimes-saved
  // one was not saved): the engine unpacks them so (engine/backward.cpp).
  explicit Saved(std::vector<Tensor> by_slot) : tensors_(std::move(by_slot)) {}

  const Tensor& operator[](SavedSlot slot) const { return tensors_[slot.index]; }
  template <std::integral Number>
  const Tensor& operator[](Number) const {
    static_assert(sizeof(Number) == 0, "a saved tensor is read by its slot, saved[Slot] (OpDef::slot names it by "
                                       "its label), never by a number");
    return tensors_.front();
  }

  // All of them in slot order, for the engine's own walks over a node's saved tensors.
  const std::vector<Tensor>& all() const { return tensors_; }

 private:
  std::vector<Tensor> tensors_;
};

}  // namespace hg
