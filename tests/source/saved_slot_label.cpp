// ctest saved_slot_label: a saved tensor's slot is named by its label and found when the program
// is compiled (engine/op_def.h). This file compiles as it is (saved_slot_label_ok), and fails to
// compile with HANDGRAD_MISSPELLED_LABEL defined (saved_slot_label), the compiler's error naming
// the_definition_lists_no_saved_tensor_with_this_label.
#include "engine/op_def.h"

namespace {

constexpr hg::OpDef kCube{.name = "cube", .saves = {{"input x", "d(x³) = 3x² dx"}}, .derivation = "tests/source/saved_slot_label.cpp"};
constexpr hg::SavedSlot kInput = kCube.slot("input x");
static_assert(kInput.def == &kCube && kInput.index == 0);

#ifdef HANDGRAD_MISSPELLED_LABEL
constexpr hg::SavedSlot kMisspelled = kCube.slot("input");  // the definition lists "input x"
#endif

}  // namespace

int main() { return static_cast<int>(kInput.index); }
