// engine/op_def.h — what an op is, stated once: its definition.
//
// Each op declares one OpDef beside its code (a named constant in its ops/*.cpp file); record()
// takes it, and the registry (ops/registry.h) is the list of them, from which the table of ops
// users read (docs/ops.md) is printed. The engine knows no op: it only defines this struct and
// holds what a node records to it (record() checks the saved tensors against `saves`).
//
// Written with designated initializers, in the order of the fields below:
//   constexpr OpDef kCube{.name = "cube", .saves = {{"input x", "d(x³) = 3x² dx"}},
//                         .derivation = "ops/cube.cpp", .fused = "cube_backward: 3 g x² in one pass"};
//
// Its saved tensors are named once, in `saves`; the code names a slot by its label, resolved when
// the program is compiled (a label the definition does not list fails to compile):
//   struct CubeSaved { static constexpr SavedSlot x = kCube.slot("input x"); };
//   record(kCube, {x}, {out}, {save(CubeSaved::x, x)},
//          [](const std::vector<Tensor>& g, const Saved& s) { ... s[CubeSaved::x] ... });
// The backward reads saved[slot] (engine/saved.h: by slot only, never by a number) at the slot's
// place in `saves`, whichever of the sometimes-saved tensors were saved (an undefined Tensor where
// one was not).
#pragma once
#include <cstddef>
#include <span>
#include <string_view>

namespace hg {

struct OpDef;

// One of a definition's saved tensors: the definition and the tensor's place in its `saves`. It is
// not a number: a backward reads saved[slot] with it (engine/saved.h), and a bare index does not compile.
struct SavedSlot {
  const OpDef* def = nullptr;
  size_t index = 0;
};

namespace detail {
// Not constexpr, on purpose: OpDef::slot calls it for a label its definition does not list, so the
// compiler's error names the mistake.
void the_definition_lists_no_saved_tensor_with_this_label();
}  // namespace detail

// One tensor the backward saves: the label naming its slot (OpDef::slot), why the backward
// needs it, and, for one saved only sometimes, when (empty: always).
struct SavedLabel {
  std::string_view label;
  std::string_view why;
  std::string_view when = {};
};

struct OpDef {
  static constexpr int kMaxSaved = 8;

  std::string_view name;  // the node's op on the graph ("permute"); a string literal
  // What its backward saves, in the order it saves them, each with why; {} when nothing.
  SavedLabel saves[kMaxSaved] = {};
  // When it saves nothing: what the backward uses instead ("the inverse permutation, a number list").
  std::string_view saves_nothing = {};
  std::string_view derivation;  // the file whose comment derives the backward
  // Its fused backward, where it has one: the raw kernel that computes the first-order gradient in
  // one pass (record() is then given it beside the composed backward). The engine runs it when no
  // graph is being created, and the composed one under create_graph.
  std::string_view fused = {};
  bool cuda = true;             // runs on CUDA tensors (every op runs on the CPU)
  bool f32 = true, f64 = true;  // the float dtypes it takes (gradcheck runs float64; float32 is
                                // held to float64 by the device and training tests)
  // Its backward is made of recorded ops, so it is differentiable again (create_graph). False: the
  // backward given to record() is a raw kernel, and differentiating its gradient fails with
  // "double backward of <op> is not implemented".
  bool second_order = true;
  // Recorded only by another op's backward under create_graph (slice's gradient placed in zeros,
  // for one), never by a forward a user writes.
  bool from_backward = false;
  // Empty: the gradcheck cases cover it (the registry test insists). Otherwise the test that
  // checks its backward instead, where central differences cannot (a dtype or device move).
  std::string_view checked_by = {};
  // Its tangent rule (forward mode, engine/forward.h) in the notation of its derivation, e.g.
  // "ȯ = ȧ b + a ḃ"; record() is then given the rule beside the backward. Empty: it has none, and
  // an input that carries a tangent makes the op fail by name (never a zero tangent).
  std::string_view tangent = {};

  // The slot of the saved tensor labelled `label`, found at compile time.
  consteval SavedSlot slot(std::string_view label) const {
    for (size_t i = 0; i < kMaxSaved && !saves[i].label.empty(); ++i)
      if (saves[i].label == label) return {this, i};
    detail::the_definition_lists_no_saved_tensor_with_this_label();
    return {};
  }

  // The slot of the one tensor it saves, for a helper shared by ops that each save one (record()
  // checks that the definition lists it).
  constexpr SavedSlot only_slot() const { return {this, 0}; }

  const char* c_str() const { return name.data(); }  // the name for error messages (a literal: NUL-terminated)
  std::span<const SavedLabel> saved_labels() const {  // the listed labels, `saves` without its empty tail
    size_t n = 0;
    while (n < kMaxSaved && !saves[n].label.empty()) ++n;
    return {saves, n};
  }
};

// The engine's own ops, defined beside them (engine/views.cpp, engine/backward.cpp); the registry
// lists them with every other op's.
std::span<const OpDef* const> view_defs();      // engine/views.cpp
std::span<const OpDef* const> gradient_defs();  // engine/backward.cpp: gradients added under create_graph
std::span<const OpDef* const> forward_defs();   // engine/forward.cpp: make_dual, unpack_dual

}  // namespace hg
