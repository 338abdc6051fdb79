// gradcheck — run the float64 finite-difference check over every op and print one table.
//   gradcheck [--device cpu|cuda|all] [--json FILE] [--filter OP]
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "cases/gradcheck_cases.h"

using namespace hg;

namespace {

constexpr int kSkipped = 77;  // ctest's SKIP_RETURN_CODE (tests/CMakeLists.txt)

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
  std::puts("usage: gradcheck [--device cpu|cuda|all] [--json FILE] [--filter OP] [--registry]\n"
            "Checks every differentiable op's backward against float64 central differences\n"
            "(eps 1e-6, atol 1e-5, rtol 1e-3), with contiguous and non-contiguous inputs,\n"
            "and prints one row per op and variant on each device checked; a 'fwd' row: its\n"
            "tangent (forward mode) along random directions against central differences and,\n"
            "by the transpose identity, against the backward (fwdcheck); then a second-order\n"
            "row: the backward itself differentiated (gradgradcheck), or 'first order only'\n"
            "where the op's backward is a fused kernel without a derivative of its own.\n"
            "  --device D   cpu (the default), cuda, or all (cpu and cuda: a row per device).\n"
            "               On cuda the whole check runs on the GPU; a case whose op has no CUDA\n"
            "               kernel yet gets a row that says so (not run, not a pass).\n"
            "  --json FILE  also write every row (with its device) as JSON.\n"
            "  --filter OP  only the ops whose name contains OP.\n"
            "  --registry   print the table of ops, docs/ops.md (from the ops' definitions), and exit.\n"
            "Exit status: 1 if any check fails; 77 (ctest's skip) for --device cuda where no\n"
            "usable GPU is present or handgrad was built without CUDA (--device all then checks\n"
            "the cpu only and says why).");
}

// Why CUDA cannot be checked here, or nullptr when it can.
const char* cuda_unavailable() {
  const CudaBackend* cu = cuda_backend();
  if (!cu) return "handgrad was built without CUDA";
  if (!cu->device_available()) return cu->device_summary();
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path, filter, device = "cpu";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
    else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
    else if (!std::strcmp(argv[i], "--registry")) { fmt::print("{}", registry_markdown()); return 0; }
    else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) { usage(); return 0; }
    else { fmt::print(stderr, "gradcheck: unknown argument '{}'\n", argv[i]); usage(); return 2; }
  }
  if (device != "cpu" && device != "cuda" && device != "all") {
    fmt::print(stderr, "gradcheck: --device must be cpu, cuda or all, not '{}'\n", device);
    return 2;
  }

  if (!json_path.empty()) {  // refused before any check runs, as the file will be written
    const bool existed = std::filesystem::exists(json_path);
    if (std::filesystem::is_directory(json_path) || !std::ofstream(json_path, std::ios::app)) {
      fmt::print(stderr, "gradcheck: --json: cannot write '{}' (does its folder exist? is it writable?)\n", json_path);
      return 2;
    }
    if (!existed) std::filesystem::remove(json_path);
  }

  std::vector<Device> devices;
  if (device != "cuda") devices.push_back(Device::cpu);
  if (device != "cpu") {
    if (const char* why = cuda_unavailable()) {
      if (device == "cuda") {
        fmt::print("SKIPPED: gradcheck --device cuda needs a usable NVIDIA GPU: {}\n", why);
        return kSkipped;
      }
      fmt::print("cuda: not checked: {} (the table has the cpu rows only)\n", why);
    } else {
      fmt::print("GPU: {}\n", cuda_backend()->device_summary());
      devices.push_back(Device::cuda);
    }
  }

  // The rows in the registry's order (ops/registry.cpp); cases of modules built from the ops
  // (Linear, Embedding) come last.
  auto cases = cases::all_cases();
  auto rank = [](const std::string& op) {
    const std::vector<const OpDef*>& reg = op_registry();
    for (size_t i = 0; i < reg.size(); ++i)
      if (reg[i]->name == op) return i;
    return reg.size();
  };
  std::stable_sort(cases.begin(), cases.end(), [&](const auto& a, const auto& b) { return rank(a.op) < rank(b.op); });
  if (!filter.empty()) {  // a filter that matches nothing is a mistake, not "0 checks, 0 failed"
    const bool any_case = std::any_of(cases.begin(), cases.end(), [&](const auto& c) { return c.op.find(filter) != std::string::npos; });
    const bool any_op = std::any_of(op_registry().begin(), op_registry().end(),
                                    [&](const OpDef* op) { return std::string(op->name).find(filter) != std::string::npos; });
    if (!any_case && !any_op) {
      std::vector<std::string> names;
      for (const auto& c : cases)
        if (names.empty() || names.back() != c.op) names.push_back(c.op);
      fmt::print(stderr, "gradcheck: --filter '{}' matches no op; the ops are: {}\n", filter, fmt::join(names, ", "));
      return 2;
    }
  }
  const std::string rule(118, '-');
  fmt::print("{:<18} {:<40} {:<5} {:<8} {:<6} {:>12} {:>12}  {}\n", "op", "variant", "order", "dtype", "device",
             "max abs err", "max rel err", "result");
  fmt::print("{}\n", rule);
  int failed = 0, run = 0, not_run = 0, rows = 0, first_only = 0;
  std::string json = "{\"eps\": 1e-6, \"atol\": 1e-5, \"rtol\": 1e-3, \"rows\": [\n";
  // One row of the table and of the JSON. `status` is pass, fail, not run or first order only.
  auto row = [&](const cases::GradcheckCase& c, const char* order, const char* dev, const GradcheckReport* r,
                 const std::string& status, const std::string& note) {
    const std::string sep = rows++ > 0 ? ",\n" : "";
    if (r) fmt::print("{:<18} {:<40} {:<5} {:<8} {:<6} {:>12.3e} {:>12.3e}  {}\n", c.op, c.variant, order, "float64", dev,
                      r->max_abs_err, r->max_rel_err, status == "fail" ? "FAIL" : status);
    else fmt::print("{:<18} {:<40} {:<5} {:<8} {:<6} {:>12} {:>12}  {}\n", c.op, c.variant, order, "float64", dev, "-", "-", status);
    if (!note.empty()) fmt::print("    {}\n", note);
    json += fmt::format("{}  {{\"op\": \"{}\", \"variant\": \"{}\", \"order\": {}, \"dtype\": \"float64\", \"device\": \"{}\", "
                        "\"max_abs_err\": {}, \"max_rel_err\": {}, \"checked\": {}, \"passed\": {}, \"status\": \"{}\"{}}}",
                        sep, json_escape(c.op), json_escape(c.variant), order[0] == 'f' ? "\"fwd\"" : (order[0] == '1' ? "1" : "2"), dev,
                        r ? fmt::format("{:.6e}", r->max_abs_err) : "null", r ? fmt::format("{:.6e}", r->max_rel_err) : "null",
                        r ? r->checked : 0, status == "pass" ? "true" : "false", status,
                        note.empty() ? "" : fmt::format(", \"reason\": \"{}\"", json_escape(note)));
  };
  // Runs one check and prints its row; an exception is a failure whose message is the note.
  auto check = [&](const cases::GradcheckCase& c, const char* order, const char* dev, auto&& fn) {
    GradcheckReport r;
    std::string err;
    try {
      r = fn();
    } catch (const std::exception& e) {
      r.passed = false;
      err = e.what();
    }
    ++run;
    if (!r.passed) ++failed;
    row(c, order, dev, &r, r.passed ? "pass" : "fail", r.passed ? "" : (err.empty() ? r.worst : err));
  };
  for (const auto& c : cases) {
    if (!filter.empty() && c.op.find(filter) == std::string::npos) continue;
    const bool second = cases::claims_second_order(c);
    for (Device d : devices) {
      const char* dev = device_name(d);
      if (!c.runs_on(d)) {  // listed, so the table shows what is missing, but neither run nor passed
        ++not_run;
        row(c, "1st", dev, nullptr, "not run", c.not_on_cuda);
        continue;
      }
      check(c, "1st", dev, [&] { return gradcheck(c.fn, c.inputs, {.device = d}); });
      check(c, "fwd", dev, [&] { return GradcheckReport(fwdcheck(c.fn, c.inputs, {.device = d})); });
      if (!second) {  // the graph holds an op whose backward is a fused kernel without a derivative
        ++first_only;
        row(c, "2nd", dev, nullptr, "first order only", "");
        continue;
      }
      check(c, "2nd", dev, [&] { return gradgradcheck(c.fn, c.inputs, {.device = d}); });
    }
  }
  for (const OpDef* op : op_registry())  // the ops central differences cannot check, and what does
    if (!op->checked_by.empty() && (filter.empty() || std::string(op->name).find(filter) != std::string::npos))
      fmt::print("{:<18} checked by {}\n", op->name, op->checked_by);
  json += "\n]}\n";
  fmt::print("{}\n{} checks, {} passed, {} failed", rule, run, run - failed, failed);
  if (first_only) fmt::print(", {} first order only (no second-order backward)", first_only);
  if (not_run) fmt::print(", {} not run (no CUDA kernel yet)", not_run);
  fmt::print("\n");
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << json;
    f.close();
    if (!f) { fmt::print(stderr, "gradcheck: --json: writing '{}' failed (is the disk full?)\n", json_path); return 2; }
    fmt::print("wrote {}\n", json_path);
  }
  return failed ? 1 : 0;
}
