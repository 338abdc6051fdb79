// tests/gpu/emulation/fibers.cpp — the emulated block that synchronises: one fiber (ucontext) per
// CUDA thread, all on the calling OS thread. The scheduler runs every live fiber until it reaches
// a barrier or ends, then starts the next round: one round per __syncthreads. AddressSanitizer is
// told about every stack switch, so it keeps checking inside the fibers.
#include <ucontext.h>

#include <vector>

#include "cuda_runtime_api.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#endif

namespace emu {
namespace {

constexpr size_t kStack = 256 * 1024;

struct Fiber {
  ucontext_t ctx;
  std::vector<char> stack = std::vector<char>(kStack);
  bool done = false;
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
#ifdef EMU_ASAN
  __sanitizer_start_switch_fiber(nullptr, scheduler_bottom, scheduler_size);  // the fiber ends
#endif
  // returning resumes uc_link, the scheduler
}

}  // namespace

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

void run_block_as_fibers(unsigned threads, void (*body)(void*, unsigned), void* arg) {
  static std::vector<Fiber> fibers(1024);
  g_body = body;
  g_arg = arg;
  for (unsigned t = 0; t < threads; ++t) {
    Fiber& f = fibers[t];
    f.done = false;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = kStack;
    f.ctx.uc_link = &scheduler;
    makecontext(&f.ctx, fiber_entry, 0);
  }
  for (bool alive = true; alive;) {  // one round: every live fiber runs to its next barrier or its end
    alive = false;
    for (unsigned t = 0; t < threads; ++t) {
      Fiber& f = fibers[t];
      if (f.done) continue;
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
      if (!f.done) alive = true;
    }
  }
  current = nullptr;
}

}  // namespace emu
