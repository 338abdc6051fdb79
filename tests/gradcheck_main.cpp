// gradcheck — run the float64 finite-difference check over every op and print one table.
//   gradcheck [--json FILE] [--filter OP]
#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "gradcheck_cases.h"

using namespace hg;

namespace {

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') { o += "\\n"; continue; }
    o += c;
  }
  return o;
}

void usage() {
  std::puts("usage: gradcheck [--json FILE] [--filter OP]\n"
            "Checks every differentiable op's backward against float64 central differences\n"
            "(eps 1e-6, atol 1e-5, rtol 1e-3), with contiguous and non-contiguous inputs,\n"
            "and prints one row per op and variant. Exit status 1 if any check fails.");
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path, filter;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
    else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) { usage(); return 0; }
    else { fmt::print(stderr, "gradcheck: unknown argument '{}'\n", argv[i]); usage(); return 2; }
  }
  auto cases = cases::all_cases();
  fmt::print("{:<18} {:<40} {:<8} {:<6} {:>12} {:>12}  {}\n", "op", "variant", "dtype", "device", "max abs err",
             "max rel err", "result");
  fmt::print("{}\n", std::string(108, '-'));
  int failed = 0, run = 0;
  std::string json = "{\"eps\": 1e-6, \"atol\": 1e-5, \"rtol\": 1e-3, \"rows\": [\n";
  for (const auto& c : cases) {
    if (!filter.empty() && c.op.find(filter) == std::string::npos) continue;
    GradcheckReport r;
    std::string err;
    try {
      r = gradcheck(c.fn, c.inputs);
    } catch (const std::exception& e) {
      r.passed = false;
      err = e.what();
    }
    ++run;
    if (!r.passed) ++failed;
    fmt::print("{:<18} {:<40} {:<8} {:<6} {:>12.3e} {:>12.3e}  {}\n", c.op, c.variant, "float64", "cpu", r.max_abs_err,
               r.max_rel_err, r.passed ? "pass" : "FAIL");
    if (!r.passed) fmt::print("    {}\n", err.empty() ? r.worst : err);
    json += fmt::format("{}  {{\"op\": \"{}\", \"variant\": \"{}\", \"dtype\": \"float64\", \"device\": \"cpu\", "
                        "\"max_abs_err\": {:.6e}, \"max_rel_err\": {:.6e}, \"checked\": {}, \"passed\": {}}}",
                        run > 1 ? ",\n" : "", json_escape(c.op), json_escape(c.variant), r.max_abs_err, r.max_rel_err,
                        r.checked, r.passed ? "true" : "false");
  }
  json += "\n]}\n";
  fmt::print("{}\n{} checks, {} passed, {} failed\n", std::string(108, '-'), run, run - failed, failed);
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    if (!f) { fmt::print(stderr, "gradcheck: cannot write {}\n", json_path); return 2; }
    f << json;
  }
  return failed ? 1 : 0;
}
