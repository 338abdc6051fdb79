// cpu/kernels.cpp — choosing the kernel table (cpu/kernels.h) once, from the CPU's
// features and HANDGRAD_CPU_CAPABILITY.
#include "cpu/kernels.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>


namespace hg::cpu {

namespace baseline {
extern const Kernels table;
}
#if HG_CPU_HAVE_AVX2
namespace avx2 {
extern const Kernels table;
}
#endif
#if HG_CPU_HAVE_AVX512
namespace avx512 {
extern const Kernels table;
}
#endif

namespace {

// cpu/ is the bottom layer (it includes nothing else of handgrad), so its errors are standard
// exceptions, with the message shape of engine/error.h's: "what: the problem; the fix".
template <typename... Args>
[[noreturn]] void fail(const char* what, fmt::format_string<Args...> f, Args&&... args) {
  throw std::invalid_argument(std::string(what) + ": " + fmt::format(f, std::forward<Args>(args)...));
}

// What the CPU (and the operating system, which must save the wide registers) supports.
// GCC's and clang's __builtin_cpu_supports check both.
bool cpu_runs(Capability level) {
  switch (level) {
    case Capability::baseline: return true;
#if HG_CPU_HAVE_AVX2
    case Capability::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
#if HG_CPU_HAVE_AVX512
    case Capability::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("fma");
#endif
    default: return false;
  }
}

const Kernels* built(Capability level) {
  switch (level) {
    case Capability::baseline: return &baseline::table;
#if HG_CPU_HAVE_AVX2
    case Capability::avx2: return &avx2::table;
#endif
#if HG_CPU_HAVE_AVX512
    case Capability::avx512: return &avx512::table;
#endif
    default: return nullptr;
  }
}

std::string available_list() {
  std::string s;
  for (Capability c : available()) s += std::string(s.empty() ? "" : ", ") + name(c);
  return s;
}

}  // namespace

const char* name(Capability level) {
  switch (level) {
    case Capability::baseline: return "baseline";
    case Capability::avx2: return "avx2";
    case Capability::avx512: return "avx512";
  }
  return "?";
}

const Kernels* kernels_for(Capability level) { return cpu_runs(level) ? built(level) : nullptr; }

std::vector<Capability> available() {
  std::vector<Capability> out;
  for (Capability c : {Capability::baseline, Capability::avx2, Capability::avx512})
    if (kernels_for(c)) out.push_back(c);
  return out;
}

Capability choose(const char* env_value) {
  const std::string v = env_value ? env_value : "";
  if (v.empty()) return available().back();
  for (Capability c : {Capability::baseline, Capability::avx2, Capability::avx512}) {
    if (v != name(c)) continue;
    if (!kernels_for(c))
      fail("HANDGRAD_CPU_CAPABILITY", "asks for the {} kernels, but {}; this CPU and build run: {}. Unset it, or choose "
           "one of those", v, built(c) ? "this CPU does not support those instructions" : "this build has none "
           "(they are built on x86-64 only)", available_list());
    return c;
  }
  fail("HANDGRAD_CPU_CAPABILITY", "'{}' is not a level; use baseline, avx2 or avx512 (this CPU runs: {}), or unset it "
       "for the widest", v, available_list());
}

namespace {
std::atomic<const Kernels*> forced{nullptr};  // ForceCapability's table, if one is alive
}

const Kernels& kernels() {
  if (const Kernels* f = forced.load(std::memory_order_relaxed)) return *f;
  static const Kernels* table = kernels_for(choose(std::getenv("HANDGRAD_CPU_CAPABILITY")));
  return *table;
}

ForceCapability::ForceCapability(Capability level) : previous_(forced.load()) {
  const Kernels* k = kernels_for(level);
  if (!k) fail("ForceCapability", "the {} kernels are not available here (this CPU and build run: {})", name(level),
               available_list());
  forced.store(k);
}

ForceCapability::~ForceCapability() { forced.store(previous_); }

}  // namespace hg::cpu
