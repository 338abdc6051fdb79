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

namespace hg::bench {

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
