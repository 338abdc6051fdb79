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

std::atomic<unsigned> hidden_levels{0};  // HideCapabilities' mask: bit c hides Capability c
unsigned bit(Capability level) { return 1u << static_cast<unsigned>(level); }
bool hidden(Capability level) { return (hidden_levels.load(std::memory_order_relaxed) & bit(level)) != 0; }

// What the CPU (and the operating system, which must save the wide registers) supports.
// GCC's and clang's __builtin_cpu_supports check both.
bool cpu_supports(Capability level) {
#if HG_CPU_HAVE_AVX2 || HG_CPU_HAVE_AVX512
  __builtin_cpu_init();  // harmless when done; needed when called from a static constructor
#endif
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

bool cpu_runs(Capability level) { return cpu_supports(level) && !hidden(level); }

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
           "one of those", v, unavailable_reason(c), available_list());
    return c;
  }
  fail("HANDGRAD_CPU_CAPABILITY", "'{}' is not a level; use baseline, avx2 or avx512 (this CPU runs: {}), or unset it "
       "for the widest", v, available_list());
}

std::string unavailable_reason(Capability level) {
  if (kernels_for(level)) return "";
  if (!built(level)) return "this build has none (they are built on x86-64 only)";
  if (hidden(level)) return fmt::format("this CPU does not support those instructions (the {} level is hidden by a test)", name(level));
  switch (level) {
    case Capability::avx2: return "this CPU does not support those instructions (it lacks AVX2 or FMA)";
    case Capability::avx512: return "this CPU does not support those instructions (it lacks AVX-512 F, BW, DQ or VL, or FMA)";
    default: return "this CPU does not support those instructions";
  }
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
  if (!k) fail("ForceCapability", "the {} kernels are not available here: {} (this CPU and build run: {})",
               name(level), unavailable_reason(level), available_list());
  forced.store(k);
}

ForceCapability::~ForceCapability() { forced.store(previous_); }

}  // namespace hg::cpu

namespace hg::cpu {

HideCapabilities::HideCapabilities(std::initializer_list<Capability> hide) : previous_(hidden_levels.load()) {
  try {
    (void)kernels();  // the process's own choice is made unmasked, before the mask
  } catch (const std::exception&) {
    // a bad HANDGRAD_CPU_CAPABILITY: kernels() says so to whoever calls it
  }
  unsigned mask = previous_;
  for (Capability c : hide)
    if (c != Capability::baseline) mask |= bit(c);
  hidden_levels.store(mask);
}

HideCapabilities::~HideCapabilities() { hidden_levels.store(previous_); }

}  // namespace hg::cpu
