// to_dot: the graph drawn. One box per tape entry, numbered as tape_str numbers them, an edge per
// input, leaves by name with their gradients' shapes after a backward, and DOT that Graphviz reads.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "handgrad.h"
#ifdef HANDGRAD_WITH_LABKIT
#include "labs/three_token_case.h"
#endif

using namespace hg;

namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Op boxes are the statements `  n<i> [...]`; edges are the statements with `->`.
size_t count_boxes(const std::string& dot) {
  size_t n = 0;
  for (const std::string& l : lines_of(dot))
    n += l.size() > 3 && l.starts_with("  n") && std::isdigit(static_cast<unsigned char>(l[3])) && !contains(l, "->");
  return n;
}
size_t count_edges(const std::string& dot) {
  size_t n = 0;
  for (const std::string& l : lines_of(dot)) n += contains(l, " -> ");
  return n;
}

// Runs Graphviz on the DOT when it is installed; says so visibly when it is not.
void check_graphviz_reads(const std::string& dot, const std::string& name) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0) {
    MESSAGE("Graphviz's dot is not installed: not checking that it renders " << name);
    return;
  }
  const std::filesystem::path path = std::filesystem::temp_directory_path() / (name + ".dot");
  std::ofstream(path) << dot;
  const std::string cmd = "dot -Tsvg '" + path.string() + "' -o /dev/null";
  CHECK_MESSAGE(std::system(cmd.c_str()) == 0, "dot -Tsvg refused " << path.string());
  std::filesystem::remove(path);
}

// y = a w; z = y ∘ c (c a constant, with a name DOT must escape); L = sum(exp(z) + exp(z)).
struct Small {
  Tensor a, w, c, L;
};
Small small_graph() {
  Small g;
  g.a = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64).requires_grad_().set_name("a");
  g.w = tensor({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f64).requires_grad_().set_name("w");
  g.c = tensor({0.1, 0.2, 0.3, 0.4}, {2, 2}, DType::f64).set_name("c\"quoted\\");
  Tensor e = exp(mul(matmul(g.a, g.w), g.c));
  g.L = sum(add(e, e));  // e read twice: two edges from exp's box to add's
  return g;
}

}  // namespace

TEST_CASE("to_dot: a box per tape entry in tape order, its op and saved tensors, an edge per input") {
  Small g = small_graph();
  const std::string dot = to_dot(g.L);
  const auto tape = tape_of(g.L);
  REQUIRE(tape.size() == 5);  // matmul, mul, exp, add, sum

  CHECK(dot.starts_with("digraph"));
  CHECK(count_boxes(dot) == tape.size());
  size_t inputs = 0;
  for (size_t i = 0; i < tape.size(); ++i) {
    CHECK(contains(dot, fmt::format("#{} {}", i, tape[i]->op)));  // numbered as tape_str numbers them
    for (const SavedTensor& s : tape[i]->saved) CHECK(contains(dot, s.what));  // "saves w (right operand b)"
    inputs += tape[i]->inputs.size();
  }
  CHECK(count_edges(dot) == inputs);
  CHECK(contains(dot, "#0 matmul"));
  CHECK(contains(dot, "#4 sum"));
  CHECK(contains(dot, "n2 -> n3;\n  n2 -> n3;"));  // add(e, e): one edge per input, not per producer

  // Leaves by name, each drawn once though read once; the constant dashed, its name escaped.
  CHECK(contains(dot, "label=\"a (2, 3) float64\"]"));
  CHECK(contains(dot, "label=\"w (3, 2) float64\"]"));
  CHECK(contains(dot, "c\\\"quoted\\\\ (2, 2) float64\\nconstant"));
  CHECK(contains(dot, "style=\"rounded,dashed\""));
  CHECK(contains(dot, "saves w (right operand b)\\nsaves a (left operand a)"));  // saved tensors by their names
  CHECK(!contains(dot, "grad ("));  // no backward yet
  CHECK(!contains(dot, "freed"));

  // The root alone is drawn bold: the sum's box.
  for (const std::string& l : lines_of(dot))
    if (contains(l, "penwidth=2")) CHECK(l.starts_with("  n4 "));
  check_graphviz_reads(dot, "handgrad_test_dot_small");
}

TEST_CASE("to_dot after backward: the leaves' gradient shapes, and the freed nodes say so") {
  Small g = small_graph();
  g.L.backward();
  const std::string dot = to_dot(g.L);
  CHECK(contains(dot, "a (2, 3) float64\\ngrad (2, 3)"));
  CHECK(contains(dot, "w (3, 2) float64\\ngrad (3, 2)"));
  CHECK(contains(dot, "saves exp output\\nfreed by backward"));  // what it saved stays, marked freed
  check_graphviz_reads(dot, "handgrad_test_dot_after_backward");
}

TEST_CASE("to_dot of a leaf draws it alone; of an undefined tensor, an empty graph") {
  Tensor x = tensor({1, 2}, {2}, DType::f64).requires_grad_().set_name("x");
  const std::string leaf = to_dot(x);
  CHECK(contains(leaf, "x (2,) float64"));
  CHECK(contains(leaf, "penwidth=2"));
  CHECK(count_edges(leaf) == 0);
  const std::string none = to_dot(Tensor());
  CHECK(none.starts_with("digraph"));
  CHECK(none.ends_with("}\n"));
  CHECK(count_boxes(none) + count_edges(none) == 0);
  CHECK(!contains(none, "label="));
}

#ifdef HANDGRAD_WITH_LABKIT
TEST_CASE("to_dot of the three-token lab's primitive graph: every tape entry, every tensor by name") {
  const std::string dot = lab::three_token_graph_dot({.causal = true, .scaled = true});
  const std::vector<std::string> ops = {"permute", "matmul", "mul_scalar", "masked_fill",
                                        "softmax", "matmul", "select",     "select"};
  CHECK(count_boxes(dot) == ops.size());
  for (size_t i = 0; i < ops.size(); ++i) CHECK(contains(dot, fmt::format("#{} {}\\n", i, ops[i])));
  for (const char* leaf : {"Q", "K", "V"})
    CHECK(contains(dot, fmt::format("label=\"{} (3, 2) float64\\ngrad (3, 2)\"", leaf)));
  CHECK(contains(dot, "\\nKᵀ (2, 3) float64"));
  CHECK(contains(dot, "\\nP (3, 3) float64"));
  CHECK(contains(dot, "\\nL () float64"));
  CHECK(contains(dot, "future (3, 3) bool\\nconstant"));
  // What a node saved, by the text's names where they exist (O = P V keeps P and V).
  CHECK(contains(dot, "saves V (right operand b)\\nsaves P (left operand a)"));
  CHECK(!contains(dot, "freed"));  // drawn after a backward with retain_graph
  check_graphviz_reads(dot, "handgrad_test_dot_three_token");
}
#endif
