// tests/gpu/emulation/fibers.cpp — the emulated block that synchronises: one fiber (ucontext) per
// CUDA thread, all on the calling OS thread. The scheduler runs every live fiber until it reaches
// a barrier or ends, then checks the round: every thread must wait at the same barrier (the same
// call site and step), or every thread must have returned. Anything else is a barrier that not
// every thread of the block reaches — undefined behaviour on a GPU (a hang, or a barrier that
// lets part of the block through with corrupt shared data) — and stops the program naming the
// kernel, the block and where each group of threads stands. AddressSanitizer is told about every
// stack switch, so it keeps checking inside the fibers.
#include <ucontext.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_runtime_api.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#endif

namespace emu {

void fail(const char* fmt, ...) {
  std::va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fflush(stderr);
  std::abort();
}

namespace {

constexpr size_t kStack = 256 * 1024;

// Where a thread stands at the end of a round.
struct Stop {
  const char* what = nullptr;  // the barrier's name and step; nullptr: the thread returned
  std::source_location site;

  bool same_as(const Stop& o) const {
    if (!what || !o.what) return what == o.what;
    return site.line() == o.site.line() && site.column() == o.site.column() && std::strcmp(what, o.what) == 0 &&
           std::strcmp(site.file_name(), o.site.file_name()) == 0;
  }
  std::string describe() const {
    if (!what) return "have returned from the kernel";
    return std::string("wait at ") + what + ", " + site.file_name() + ":" + std::to_string(site.line()) + ":" +
           std::to_string(site.column()) + ", in " + site.function_name();
  }
};

struct Fiber {
  ucontext_t ctx;
  std::vector<char> stack = std::vector<char>(kStack);
  bool done = false;
  Stop stop;
};

ucontext_t scheduler;
Fiber* current = nullptr;
unsigned current_tid = 0;
void (*g_body)(void*, unsigned) = nullptr;
void* g_arg = nullptr;
#ifdef EMU_ASAN
const void* scheduler_bottom = nullptr;
size_t scheduler_size = 0;
#endif

void fiber_entry() {
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &scheduler_bottom, &scheduler_size);
#endif
  g_body(g_arg, current_tid);
  current->done = true;
  current->stop = Stop{};
#ifdef EMU_ASAN
  __sanitizer_start_switch_fiber(nullptr, scheduler_bottom, scheduler_size);  // the fiber ends
#endif
  // returning resumes uc_link, the scheduler
}

void yield_to_scheduler() {
#ifdef EMU_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, scheduler_bottom, scheduler_size);
#endif
  swapcontext(&current->ctx, &scheduler);
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, &scheduler_bottom, &scheduler_size);
#endif
}

// "0-30, 32-62, 64-127" for the threads t with pick(t).
template <typename P>
std::string thread_ranges(unsigned threads, P pick, unsigned& count) {
  std::string out;
  count = 0;
  for (unsigned t = 0; t < threads;) {
    if (!pick(t)) {
      ++t;
      continue;
    }
    unsigned end = t;
    while (end + 1 < threads && pick(end + 1)) ++end;
    if (!out.empty()) out += ", ";
    out += end == t ? std::to_string(t) : std::to_string(t) + "-" + std::to_string(end);
    count += end - t + 1;
    t = end + 1;
  }
  return out;
}

// The round ended with the threads of the block at different places: say where, then stop.
[[noreturn]] void report_divergence(const BlockRun& run, const std::vector<Fiber>& fibers) {
  const unsigned n = run.threads;
  std::string text = "emulation: threads of one block stopped at different barriers in kernel " +
                     std::string(run.launch->kernel) + " (launched at " + run.launch->file + ":" +
                     std::to_string(run.launch->line) + "), block " + std::to_string(run.block) + " of " +
                     std::to_string(run.grid) + ", " + std::to_string(n) + " threads:\n";
  std::vector<bool> told(n, false);
  for (unsigned t = 0; t < n; ++t) {
    if (told[t]) continue;
    const Stop& s = fibers[t].stop;
    unsigned count = 0;
    const std::string who = thread_ranges(n, [&](unsigned u) { return fibers[u].stop.same_as(s); }, count);
    for (unsigned u = t; u < n; ++u)
      if (fibers[u].stop.same_as(s)) told[u] = true;
    text += "  threads " + who + " (" + std::to_string(count) + " of " + std::to_string(n) + ") " + s.describe() +
            "\n";
  }
  text +=
      "Every thread of a block must reach the same __syncthreads and full-mask shuffle: on a GPU a barrier that "
      "part of the block skips hangs or lets the block through with corrupt shared data. Look for a condition "
      "around the barrier (or a `continue`, `return` or loop bound before it) that differs between the threads.\n";
  fail("%s", text.c_str());
}

std::mutex sync_mu;
std::vector<const void*> sync_kernels;  // kernels seen at a barrier

}  // namespace

bool synchronises(const void* kernel) {
  std::lock_guard<std::mutex> lock(sync_mu);
  for (const void* k : sync_kernels)
    if (k == kernel) return true;
  return false;
}

void mark_synchronises(const void* kernel) {
  std::lock_guard<std::mutex> lock(sync_mu);
  sync_kernels.push_back(kernel);
}

void wait_at_barrier(const char* what, const std::source_location& site) {
  if (!current) fail("emulation: %s at %s:%u outside a block run as fibers\n", what, site.file_name(), site.line());
  current->stop = Stop{what, site};
  yield_to_scheduler();
}

void run_block_as_fibers(const BlockRun& run, void (*body)(void*, unsigned), void* arg) {
  static std::vector<Fiber> fibers(1024);
  const unsigned threads = run.threads;
  g_body = body;
  g_arg = arg;
  for (unsigned t = 0; t < threads; ++t) {
    Fiber& f = fibers[t];
    f.done = false;
    f.stop = Stop{};
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = kStack;
    f.ctx.uc_link = &scheduler;
    makecontext(&f.ctx, fiber_entry, 0);
  }
  static const bool check = !std::getenv("HANDGRAD_EMU_NO_BARRIER_CHECK");
  for (;;) {  // one round: every fiber runs to its next barrier or its end
    bool alive = false;
    for (unsigned t = 0; t < threads; ++t) {
      Fiber& f = fibers[t];
      if (f.done) continue;  // only without the check: with it, the block ends when all are done
      current = &f;
      current_tid = t;
      threadIdx = {t, 0, 0};
#ifdef EMU_ASAN
      void* fake = nullptr;
      __sanitizer_start_switch_fiber(&fake, f.stack.data(), kStack);
#endif
      swapcontext(&scheduler, &f.ctx);
#ifdef EMU_ASAN
      __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
      alive = alive || !f.done;
    }
    current = nullptr;
    // Every thread at the first one's place — all at one barrier, or all returned — or a fault.
    if (check)
      for (unsigned t = 1; t < threads; ++t)
        if (!fibers[t].stop.same_as(fibers[0].stop)) report_divergence(run, fibers);
    if (!alive) return;
  }
}

}  // namespace emu
