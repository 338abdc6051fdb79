// bench/bench_fma_peak.cpp — the cores' float32 fused-multiply-add peak (bench/fma_peak.h), at
// the kernel level in use and at every level this CPU runs, on 1 and on N threads. The yardstick
// the CPU figures in bench/RESULTS.md are printed against as a share.
//
//   bench_fma_peak [--threads N] [--seconds S] [--json FILE]
//
// --threads N: N threads (default: the library's thread count, HANDGRAD_NUM_THREADS or
// OMP_NUM_THREADS or the cores); --seconds S: the time of one try (default 0.3; best of three).
// HANDGRAD_CPU_CAPABILITY=avx2 (or baseline) measures a lower level, as the library would run.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "bench_util.h"
#include "engine/strided.h"
#include "fma_peak.h"
#include "gpu_bench_util.h"

using namespace hg;

int main(int argc, char** argv) {
  int threads = 0;
  double seconds = 0.3;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      fmt::print("usage: bench_fma_peak [--threads N] [--seconds S] [--json FILE]\n"
                 "The float32 FMA peak of this machine's cores at the kernel level in use, on 1 and N threads.\n");
      return 0;
    }
    if (i + 1 >= argc) {
      fmt::print(stderr, "bench_fma_peak: {} needs a value (see --help)\n", k);
      return 2;
    }
    const std::string v = argv[++i];
    try {
      if (k == "--threads") threads = static_cast<int>(bench::whole_number(k, v));
      else if (k == "--seconds") {
        size_t used = 0;
        seconds = std::stod(v, &used);
        if (used != v.size() || !(seconds > 0 && seconds <= 60)) throw std::invalid_argument(v);
      } else if (k == "--json") json = v;
      else {
        fmt::print(stderr, "bench_fma_peak: unknown option {} (see --help)\n", k);
        return 2;
      }
    } catch (const std::exception&) {
      fmt::print(stderr, "bench_fma_peak: {} {}: expected {}\n", k, v,
                 k == "--seconds" ? "seconds in (0, 60]" : "a whole number");
      return 2;
    }
  }
  if (threads <= 0) threads = num_threads();
  const bench::FmaPeak one = bench::measure_fma_peak(1, seconds);
  const bench::FmaPeak all = bench::measure_fma_peak(threads, seconds);
  const std::string line = fmt::format(
      "{{{}, \"level\": \"{}\", \"lanes\": {}, \"fma_peak_gflops_1_thread\": {:.2f}, \"threads\": {}, "
      "\"fma_peak_gflops\": {:.2f}}}",
      bench::machine_json_fields(), cpu::name(all.level), all.lanes, one.gflops, threads, all.gflops);
  fmt::print("{}: float32 FMA peak at {} ({} lanes): {:.1f} GFLOP/s on 1 thread, {:.1f} GFLOP/s on {} thread{}\n",
             bench::cpu_model(), cpu::name(all.level), all.lanes, one.gflops, all.gflops, threads, threads == 1 ? "" : "s");
  fmt::print("{}\n", line);
  if (!json.empty()) {
    std::ofstream f(json);
    f << line << "\n";
    f.flush();
    if (!f) {
      fmt::print(stderr, "bench_fma_peak: could not write {}\n", json);
      return 1;
    }
    fmt::print(stderr, "wrote {}\n", json);
  }
  return 0;
}
