// The op registry held to the ops and to the gradcheck cases, both ways: every op a case's graph
// records (forward, and the backward under create_graph) has a definition in it, every definition
// is covered by a case on every device it claims, and docs/ops.md's table is the registry's. Also
// record()'s check of the saved tensors against the definition, and the CUDA kinds' names.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cuda/kinds.h"
#include "cases/gradcheck_cases.h"

using namespace hg;

namespace {

// What one case's graphs record: the forward's nodes, and those the backward records under
// create_graph (the nodes of the gradient's own graph).
struct Recorded {
  std::set<std::string> forward, backward;
  std::map<std::string, const OpDef*> def;  // the definition each forward node was recorded with
};

Recorded recorded_by(const cases::GradcheckCase& c) {
  Recorded r;
  GradModeGuard on(true);
  Tensor out = c.fn(c.inputs);
  for (const auto& n : tape_of(out)) {
    r.forward.insert(n->op);
    r.def[n->op] = n->def;
  }
  std::vector<Tensor> xs;
  for (const Tensor& x : c.inputs)
    if (x.defined() && x.requires_grad()) xs.push_back(x);
  Generator gen(5);
  Tensor R = randn(out.shape(), gen, out.dtype()).requires_grad_();  // as gradgradcheck: the backward is a function of it
  std::vector<Tensor> g = grad({sum(mul(out, R))}, xs, {}, {.create_graph = true, .allow_unused = true});
  for (const Tensor& t : g)
    if (t.defined())
      for (const auto& n : tape_of(t)) r.backward.insert(n->op);
  return r;
}

std::string docs_table() {
  std::ifstream f(std::string(HANDGRAD_SOURCE_DIR) + "/docs/ops.md");
  REQUIRE(f.good());
  std::stringstream all;
  all << f.rdbuf();
  const std::string s = all.str(), begin = "<!-- registry-table -->\n", end = "<!-- /registry-table -->";
  const size_t a = s.find(begin), b = s.find(end);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  return s.substr(a + begin.size(), b - a - begin.size());
}

}  // namespace

TEST_CASE("registry: every op the gradcheck cases record has a row, and every row is covered") {
  std::set<std::string> in_forward, in_backward, on_cuda;
  std::map<std::string, std::set<const OpDef*>> defs;
  for (const auto& c : cases::all_cases()) {
    CAPTURE(c.op);
    CAPTURE(c.variant);
    Recorded r = recorded_by(c);
    for (const std::string& op : r.forward) {
      INFO("the case's forward records '" << op << "'; list its definition in ops/registry.cpp");
      CHECK(find_op(op) != nullptr);
      in_forward.insert(op);
      defs[op].insert(r.def[op]);
      if (c.runs_on(Device::cuda)) on_cuda.insert(op);
    }
    for (const std::string& op : r.backward) {
      INFO("the case's backward (create_graph) records '" << op << "'; list its definition in ops/registry.cpp");
      CHECK(find_op(op) != nullptr);
      in_backward.insert(op);
    }
  }
  for (const OpDef* def : op_registry()) {
    const OpDef& op = *def;
    CAPTURE(op.name);
    if (!op.checked_by.empty()) continue;  // checked by the test it names, not by central differences
    const bool covered = op.from_backward ? in_backward.count(std::string(op.name)) > 0
                                          : in_forward.count(std::string(op.name)) > 0;
    INFO("the registry claims '" << op.name << "' but no gradcheck case records it; add a case to tests/cases/cases_*.cpp");
    CHECK(covered);
    if (op.cuda && !op.from_backward) {
      INFO("the registry claims '" << op.name << "' on cuda but no gradcheck case that runs on cuda records it");
      CHECK(on_cuda.count(std::string(op.name)) > 0);
    }
    if (!op.from_backward && covered) {
      INFO("the nodes named '" << op.name << "' were recorded with another definition than the registry's");
      CHECK(defs[std::string(op.name)] == std::set<const OpDef*>{def});
    }
  }
}

TEST_CASE("registry: every composed op has a gradcheck case and no definition of its own") {
  std::set<std::string> cased;
  for (const auto& c : cases::all_cases()) cased.insert(c.op);
  for (const ComposedOp& c : composed_ops()) {
    CAPTURE(c.name);
    CHECK(cased.count(std::string(c.name)) == 1);
    CHECK(find_op(c.name) == nullptr);
  }
}

TEST_CASE("registry: names are unique and every definition says why it saves what it saves, and where it is derived") {
  std::set<std::string_view> names;
  for (const OpDef* op : op_registry()) {
    CAPTURE(op->name);
    CHECK(names.insert(op->name).second);
    for (const SavedLabel& l : op->saved_labels()) {
      CAPTURE(l.label);
      CHECK_FALSE(l.why.empty());
    }
    CHECK((op->fused.empty() || op->second_order));  // a fused backward sits beside a composed one
    std::ifstream f(std::string(HANDGRAD_SOURCE_DIR) + "/" + std::string(op->derivation));
    CHECK(f.good());
  }
}

TEST_CASE("registry: docs/ops.md's table of ops is the registry's (regenerate with build/tests/gradcheck --registry)") {
  CHECK(docs_table() == registry_markdown());
}

// The engine knows no op: its files (engine/) name none of the ops that live in ops/ — not in
// code, not in comments — so an op is added without touching the core. Two kinds of word are
// not counted: the C library's math functions (std::log, std::max, ...), and `where`, the
// call-site parameter every public function takes.
TEST_CASE("registry: no file under engine/ names an op of ops/") {
  std::set<std::string> names = {"adam", "adamw", "layernorm"};  // and the ops still to come
  for (const OpDef* op : op_registry())
    if (op->derivation.starts_with("ops/")) names.insert(std::string(op->name));
  names.erase("where");
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(HANDGRAD_SOURCE_DIR) + "/engine")) {
    std::ifstream f(entry.path());
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    ++files;
    for (const std::string& name : names)
      for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
        const size_t end = at + name.size();
        if ((at > 0 && word(text[at - 1])) || (end < text.size() && word(text[end]))) continue;  // part of a longer word
        if (at >= 5 && text.compare(at - 5, 5, "std::") == 0) continue;                        // the C library's
        const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
        FAIL_CHECK("engine/" << entry.path().filename().string() << ":" << line << " names the op '" << name << "'");
      }
  }
  CHECK(files > 10);  // the folder was read
}

// A saved tensor's slot is named by its label, resolved when the program is compiled
// (tests/source/saved_slot_label.cpp: an unlisted label fails to compile); record() then holds the
// slots to the definition before any backward runs: a slot of another op's definition, slots out
// of order or twice, and a slot listed as always saved but not saved each fail at the forward.
TEST_CASE("registry: record() refuses saved tensors that differ from the definition, naming the op and the label") {
  static constexpr OpDef kTwoSaves{.name = "two_saves", .saves = {{"input x", "the derivative"}, {"output y", "the same"}},
                                   .derivation = "tests/ops/test_registry.cpp"};
  static constexpr OpDef kMaybeSaves{.name = "maybe_saves", .saves = {{"input x", "the derivative", "when asked"}},
                                     .derivation = "tests/ops/test_registry.cpp"};
  static constexpr SavedSlot x_slot = kTwoSaves.slot("input x"), y_slot = kTwoSaves.slot("output y");
  static_assert(x_slot.index == 0 && y_slot.index == 1 && x_slot.def == &kTwoSaves);
  const BackwardFn pass = [](const std::vector<Tensor>& g, const Saved&) { return std::vector<Tensor>{g[0]}; };
  Tensor x = full({3}, 2.0, DType::f64).requires_grad_();
  auto fresh = [&] { return mul(x.detach(), 1.0); };
  CHECK_NOTHROW(record(kTwoSaves, {x}, {fresh()}, {save(x_slot, x), save(y_slot, x)}, pass));
  // saves under another op's slot, whose label this definition also lists
  CHECK_THROWS_WITH_AS(record(kTwoSaves, {x}, {fresh()}, {save(x_slot, x), save(y_slot, x), save(kMaybeSaves.slot("input x"), x)}, pass),
                       doctest::Contains("two_saves: its forward saves a tensor under maybe_saves's slot \"input x\", not a slot of this op's definition"),
                       Error);
  CHECK_THROWS_WITH_AS(record(kMaybeSaves, {x}, {fresh()}, {save(SavedSlot{}, x)}, pass),
                       doctest::Contains("maybe_saves: its forward saves a tensor under no slot it lists"), Error);
  // lists one it does not save (the first, or the last)
  CHECK_THROWS_WITH_AS(record(kTwoSaves, {x}, {fresh()}, {save(y_slot, x)}, pass),
                       doctest::Contains("two_saves: its definition lists \"input x\" as saved (always), but the forward did not save it"),
                       Error);
  CHECK_THROWS_WITH_AS(record(kTwoSaves, {x}, {fresh()}, {save(x_slot, x)}, pass),
                       doctest::Contains("two_saves: its definition lists \"output y\" as saved (always)"), Error);
  CHECK_THROWS_WITH_AS(record(kTwoSaves, {x}, {fresh()}, {save(y_slot, x), save(x_slot, x)}, pass),
                       doctest::Contains("out of order"), Error);
  CHECK_THROWS_WITH_AS(record(kTwoSaves, {x}, {fresh()}, {save(x_slot, x), save(x_slot, x), save(y_slot, x)}, pass),
                       doctest::Contains("out of order (or twice)"), Error);
  // a label saved only sometimes may be absent
  CHECK_NOTHROW(record(kMaybeSaves, {x}, {fresh()}, {}, pass));
  CHECK_NOTHROW(record(kMaybeSaves, {x}, {fresh()}, {save(kMaybeSaves.slot("input x"), x)}, pass));
  // a fused backward the definition does not name, and one it names but is not given
  CHECK_THROWS_WITH_AS(record(kMaybeSaves, {x}, {fresh()}, {}, pass, pass),
                       doctest::Contains("maybe_saves: was recorded with a fused backward that its definition does not name"), Error);
  static constexpr OpDef kFused{.name = "with_fused", .saves_nothing = "-", .derivation = "tests/ops/test_registry.cpp",
                                .fused = "a pass-through"};
  CHECK_THROWS_WITH_AS(record(kFused, {x}, {fresh()}, {}, pass),
                       doctest::Contains("with_fused: its definition names a fused backward (a pass-through) but none was recorded"),
                       Error);
}

// The engine, not the op, chooses: the fused backward without create_graph, the composed one under it.
// The backward reads saved[slot] at the slot's place in the definition, whichever of the
// sometimes-saved tensors were saved: the second slot stays the second when the first is absent.
TEST_CASE("registry: the backward reads each saved tensor at its slot, an absent one undefined") {
  static constexpr OpDef kScaleBy{.name = "scale_by", .saves = {{"unused u", "nothing", "when asked"}, {"factor w", "d(w x) = w dx"}},
                                  .derivation = "tests/ops/test_registry.cpp"};
  static constexpr SavedSlot u_slot = kScaleBy.slot("unused u"), w_slot = kScaleBy.slot("factor w");
  Tensor x = full({2}, 1.0, DType::f64).requires_grad_(), w = full({2}, 3.0, DType::f64);
  Tensor out = mul(x.detach(), w);
  bool u_absent = false;
  record(kScaleBy, {x}, {out}, {save(w_slot, w)}, [&](const std::vector<Tensor>& g, const Saved& s) {
    u_absent = !s[u_slot].defined();
    return std::vector<Tensor>{mul(g[0], s[w_slot])};
  });
  sum(out).backward();
  CHECK(u_absent);
  CHECK(x.grad().to_vector() == std::vector<double>{3.0, 3.0});
}

TEST_CASE("registry: backward runs the fused backward, and the composed one under create_graph") {
  static constexpr OpDef kTwice{.name = "twice", .saves_nothing = "2 is a number", .derivation = "tests/ops/test_registry.cpp",
                                .fused = "a counted pass"};
  int fused_runs = 0, composed_runs = 0;
  auto twice = [&](const Tensor& x) {
    Tensor out;
    {
      NoGradGuard ng;
      out = mul(x, 2.0);
    }
    record(kTwice, {x}, {out}, {}, [&](const std::vector<Tensor>& g, const Saved&) {
      ++composed_runs;
      return std::vector<Tensor>{mul(g[0], 2.0)};
    }, [&](const std::vector<Tensor>& g, const Saved&) {
      ++fused_runs;
      NoGradGuard ng;
      return std::vector<Tensor>{mul(g[0], 2.0)};
    });
    return out;
  };
  Tensor x = full({2}, 1.5, DType::f64).requires_grad_();
  Tensor g = grad({sum(twice(x))}, {x})[0];
  CHECK(g.to_vector() == std::vector<double>{2.0, 2.0});
  CHECK(fused_runs == 1);
  CHECK(composed_runs == 0);
  Tensor gg = grad({sum(mul(twice(x), x))}, {x}, {}, {.create_graph = true})[0];  // d/dx (2x · x) = 4x
  CHECK(gg.to_vector() == std::vector<double>{6.0, 6.0});
  CHECK(gg.requires_grad());
  CHECK(fused_runs == 1);
  CHECK(composed_runs == 1);
}

// The CUDA elementwise kinds keep their own names (cuda/kinds.h, for error messages): each is an
// op's name, or "<op>_backward" for an op whose definition has a fused backward.
TEST_CASE("registry: every CUDA elementwise kind is named for an op's definition") {
  std::vector<std::string> kinds(std::begin(cuda::kUnaryNames), std::end(cuda::kUnaryNames));
  kinds.insert(kinds.end(), std::begin(cuda::kBinaryNames), std::end(cuda::kBinaryNames));
  CHECK(kinds.size() == static_cast<size_t>(cuda::kUnaryCount) + static_cast<size_t>(cuda::kBinaryCount));
  for (const std::string& kind : kinds) {
    CAPTURE(kind);
    const OpDef* op = find_op(kind);
    if (!op && kind.ends_with("_backward")) {
      op = find_op(std::string_view(kind).substr(0, kind.size() - std::string_view("_backward").size()));
      REQUIRE(op != nullptr);
      CHECK_FALSE(op->fused.empty());
      CHECK(op->fused.starts_with(kind));  // the definition names the kernel
    } else {
      CHECK(op != nullptr);
    }
  }
}
