// ctest saved_by_slot: a backward reads its saved tensors by slot, never by number (engine/saved.h).
// This file compiles as it is, reading s[CubeSaved::x] (saved_by_slot_ok), and fails to compile
// with HANDGRAD_SAVED_BY_NUMBER defined, which reads s[0] instead (saved_by_slot), the compiler's
// error quoting Saved's "never by a number".
#include <vector>

#include "engine/saved.h"

namespace {

constexpr hg::OpDef kCube{.name = "cube", .saves = {{"input x", "d(x³) = 3x² dx"}}, .derivation = "tests/source/saved_by_slot.cpp"};
struct CubeSaved {
  static constexpr hg::SavedSlot x = kCube.slot("input x");
};

// A backward's read of its one saved tensor.
hg::Tensor saved_input(const hg::Saved& s) {
#ifdef HANDGRAD_SAVED_BY_NUMBER
  return s[0];
#else
  return s[CubeSaved::x];
#endif
}

}  // namespace

int main() { return saved_input(hg::Saved(std::vector<hg::Tensor>(1))).defined() ? 1 : 0; }
