// tests/wasm/induction_live_numbers.cpp — the induction model's answers (labs/induction_live.h) for
// one model file and a fixed set of requests, every number printed to 17 digits, one line a field, and each
// request's time on stderr. Built natively and as WebAssembly (node, the file read from disk);
// tests/wasm/run-induction-check holds the two builds' numbers to each other and the batch's head
// scores to the lab's own --json: what a page about the trained model needs, the library in the
// browser computing what the lab computes.
//   induction_live_numbers MODEL.safetensors SEED BATCH
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "induction_live.h"

using nlohmann::json;

namespace {

// Every number under `prefix`, one line per list of numbers: "prefix v1 v2 ...".
void print(const std::string& prefix, const json& v) {
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) print(prefix + "." + k, x);
  } else if (v.is_array() && !v.empty() && (v[0].is_array() || v[0].is_object())) {
    for (size_t i = 0; i < v.size(); ++i) print(prefix + "." + std::to_string(i), v[i]);
  } else if (v.is_array()) {
    std::printf("%s", prefix.c_str());
    for (const json& x : v) std::printf(" %.17g", x.get<double>());
    std::printf("\n");
  } else if (v.is_number()) {
    std::printf("%s %.17g\n", prefix.c_str(), v.get<double>());
  } else if (v.is_boolean()) {
    std::printf("%s %d\n", prefix.c_str(), v.get<bool>() ? 1 : 0);
  } else {
    std::printf("%s %s\n", prefix.c_str(), v.dump().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: induction_live_numbers MODEL.safetensors SEED BATCH\n");
    return 2;
  }
  std::ifstream f(argv[1], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.good() && !f.eof()) {
    std::fprintf(stderr, "induction_live_numbers: cannot read %s\n", argv[1]);
    return 3;
  }
  try {
    hg::lab::induction::InductionLive live(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
    auto ask = [&](const std::string& name, const json& request) {
      const auto t0 = std::chrono::steady_clock::now();
      const json a = json::parse(live.answer(request.dump()));
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "%s: %.1f ms\n", name.c_str(), ms);
      print(name, a);
      return a;
    };
    const json seq = ask("sequence", {{"sequence", {{"seed", 7}, {"Lmin", 16}, {"Lmax", 32}}}});
    const json study = {{"tokens", seq["tokens"]}, {"L", seq["L"]}};
    ask("study", {{"study", study}});
    ask("study_ablated", {{"study", study}, {"ablate", {{1, 0}, {1, 1}, {1, 2}, {1, 3}}}});
    const json batch = {{"seed", std::stoll(argv[2])}, {"n", std::stoll(argv[3])}, {"Lmin", 16}, {"Lmax", 32}};
    ask("batch", {{"batch", batch}});
    ask("batch_ablated", {{"batch", batch}, {"ablate", {{1, 0}, {1, 1}, {1, 2}, {1, 3}}}});
    ask("bad", {{"study", {{"tokens", {1, 2, 99}}, {"L", 2}}}});
  } catch (const std::exception& e) {
    std::printf("error %s\n", e.what());
    return 1;
  }
  return 0;
}
