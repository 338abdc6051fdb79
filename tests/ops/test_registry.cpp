// The op registry held to the ops and to the gradcheck cases, both ways: every op a case's graph
// records (forward, and the backward under create_graph) has a row, every row is covered by a
// case on every device it claims, its second-order claim is what the node says, and README's
// table is the registry's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cases/gradcheck_cases.h"

using namespace hg;

namespace {

// What one case's graphs record: the forward's nodes, and those the backward records under
// create_graph (the nodes of the gradient's own graph).
struct Recorded {
  std::set<std::string> forward, backward;
  std::map<std::string, DoubleBackward> flag;  // each forward node's own claim
};

Recorded recorded_by(const cases::GradcheckCase& c) {
  Recorded r;
  GradModeGuard on(true);
  Tensor out = c.fn(c.inputs);
  for (const auto& n : tape_of(out)) {
    r.forward.insert(n->op);
    r.flag[n->op] = n->double_backward;
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

std::string readme_table() {
  std::ifstream f(std::string(HANDGRAD_SOURCE_DIR) + "/README.md");
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
  std::map<std::string, std::set<DoubleBackward>> flags;
  for (const auto& c : cases::all_cases()) {
    CAPTURE(c.op);
    CAPTURE(c.variant);
    Recorded r = recorded_by(c);
    for (const std::string& op : r.forward) {
      INFO("the case's forward records '" << op << "'; add a row for it to ops/registry.cpp");
      CHECK(find_op(op) != nullptr);
      in_forward.insert(op);
      flags[op].insert(r.flag[op]);
      if (c.runs_on(Device::cuda)) on_cuda.insert(op);
    }
    for (const std::string& op : r.backward) {
      INFO("the case's backward (create_graph) records '" << op << "'; add a row for it to ops/registry.cpp");
      CHECK(find_op(op) != nullptr);
      in_backward.insert(op);
    }
  }
  for (const OpInfo& op : op_registry()) {
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
      const auto want = op.second_order ? DoubleBackward::composed : DoubleBackward::first_order;
      INFO("the registry's second-order claim for '" << op.name << "' differs from what its node records");
      CHECK(flags[std::string(op.name)] == std::set<DoubleBackward>{want});
    }
  }
}

TEST_CASE("registry: names are unique and every row says what it saves and where it is derived") {
  std::set<std::string_view> names;
  for (const OpInfo& op : op_registry()) {
    CAPTURE(op.name);
    CHECK(names.insert(op.name).second);
    CHECK_FALSE(op.saves.empty());
    std::ifstream f(std::string(HANDGRAD_SOURCE_DIR) + "/" + std::string(op.derivation));
    CHECK(f.good());
  }
}

TEST_CASE("registry: README's table of ops is the registry's (regenerate with build/tests/gradcheck --registry)") {
  CHECK(readme_table() == registry_markdown());
}

// The engine knows no op: its files (engine/) name none of the ops that live in ops/ — not in
// code, not in comments — so an op is added without touching the core. Two kinds of word are
// not counted: the C library's math functions (std::log, std::max, ...), and `where`, the
// call-site parameter every public function takes.
TEST_CASE("registry: no file under engine/ names an op of ops/") {
  std::set<std::string> names = {"adam", "adamw", "layernorm"};  // and the ops still to come
  for (const OpInfo& op : op_registry())
    if (op.derivation.starts_with("ops/")) names.insert(std::string(op.name));
  names.erase("where");
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(HANDGRAD_SOURCE_DIR) + "/engine")) {
    // to_html's page: CSS and JavaScript for the browser ("div", "classList.add"), not C++ naming ops.
    if (entry.path().filename() == "html_page.cpp") continue;
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
