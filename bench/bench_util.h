// bench/bench_util.h — what the CPU benchmarks (bench/bench_tinycharlm.cpp, bench_attention.cpp)
// share: the thread setting, CPU time, and the process's resident memory.
#pragma once
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "ops/gemm.h"
#include "ops/matmul.h"

namespace hg::bench {

// The CPU a figure came from, as benches compared across machines need it: /proc/cpuinfo's model
// name with its family and model numbers (a virtual machine may say only "AMD EPYC" for Zen 3, 4
// and 5 alike: family 25 model 1 is Zen 3, 25/17 Zen 4, 26 Zen 5).
inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string name = "unknown", family, model;
  auto value = [](const std::string& line) {
    const size_t colon = line.find(':');
    std::string v = colon == std::string::npos ? "" : line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  };
  for (std::string line; std::getline(f, line) && !line.empty();) {
    if (line.rfind("model name", 0) == 0) name = value(line);
    else if (line.rfind("cpu family", 0) == 0) family = value(line);
    else if (line.rfind("model", 0) == 0 && line.find("name") == std::string::npos) model = value(line);
  }
  return family.empty() ? name : fmt::format("{} (family {}, model {})", name, family, model);
}

// JSON members (no braces) that every bench's output carries: the CPU model, the handgrad
// kernel level in use (cpu/kernels.h), the levels this CPU runs, and OpenBLAS's kernel.
inline std::string machine_json_fields() {
  std::vector<std::string> levels;
  for (cpu::Capability c : cpu::available()) levels.push_back(fmt::format("\"{}\"", cpu::name(c)));
  std::string model;  // cpu_model() as a JSON string's contents
  for (char c : cpu_model()) {
    if (c == '"' || c == '\\') model.push_back('\\');
    if (static_cast<unsigned char>(c) >= 0x20) model.push_back(c);
  }
  return fmt::format("\"cpu_model\": \"{}\", \"cpu_kernels\": \"{}\", \"cpu_levels\": [{}], \"openblas_core\": \"{}\"", model,
                     cpu::name(cpu::kernels().level), fmt::join(levels, ", "), blas_kernel_name());
}

// --threads N: HANDGRAD_NUM_THREADS = OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = N. OpenBLAS reads
// its setting once, when it is loaded, so when they differ the program sets them and re-executes
// itself. handgrad's pool reads HANDGRAD_NUM_THREADS, else OMP_NUM_THREADS, and keeps OpenBLAS on
// one thread of its own (engine/strided.h). threads <= 0 keeps the environment's settings.
inline void apply_threads(int threads, char** argv) {
  if (threads <= 0) return;
  const std::string want = std::to_string(threads);
  bool same = true;
  for (const char* var : {"HANDGRAD_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    const char* v = std::getenv(var);
    same = same && v && want == v;
  }
  if (same) return;
  for (const char* var : {"HANDGRAD_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
    setenv(var, want.c_str(), 1);
  execv("/proc/self/exe", argv);
  throw std::runtime_error(fmt::format("could not re-execute with {} threads: {}", threads, std::strerror(errno)));
}

// CPU time of the whole process (all threads), in ms: less sensitive than wall time to other
// processes on a shared machine, so the figure to compare single-threaded changes by.
inline double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// A field of /proc/self/status in MiB ("VmRSS": resident now, "VmHWM": the peak), or -1.
inline double status_mib(const std::string& field) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(field + ":", 0) == 0) return std::strtod(line.c_str() + field.size() + 1, nullptr) / 1024.0;  // kB
  return -1.0;
}

// Sets the peak (VmHWM) back to the resident size now, so that a later VmHWM is the peak of what
// ran in between (Linux ≥ 4.0, proc(5): clear_refs "5"). False where it cannot (then VmHWM is the
// peak since the process started).
inline bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

}  // namespace hg::bench
