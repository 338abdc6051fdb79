// tests/gpu/emulation/memory.cpp — emulated device memory that host code cannot touch.
//
// Each cudaMalloc block gets pages of its own and ends right before a PROT_NONE guard page
// (electric-fence style; the block starts 16-byte aligned, the few bytes of rounding after its
// end are poisoned for AddressSanitizer, as is the slack before it). A fresh block is filled
// with 0xFF (NaN as float32 and float64), then every page is made PROT_NONE.
//
// Only a DeviceScope (an emulated kernel launch, cudaMemcpyAsync, cudaMemsetAsync, a cuBLAS call)
// may touch device memory. Blocks are opened lazily: the first touch of a block inside a scope
// faults, the SIGSEGV handler makes that block's pages readable and writable and notes it, and
// the scope's end makes them PROT_NONE again — so a launch costs two mprotect calls per block it
// uses, not per block alive. The same handler turns a touch outside any scope into
// "host code read (or wrote) device memory at ..." and a touch of a guard page into an overflow report,
// each with the stack, and passes every other fault on to the handler before it (AddressSanitizer's).
// The guard page catches a kernel that runs up to a page past a block's end (ASan the first
// bytes, in the rounding); an index further out may land in another block, which a kernel may touch.
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "cuda_runtime_api.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#endif

namespace emu {
namespace {

struct Block {
  uintptr_t map = 0;   // the mapping: data pages, then one guard page
  size_t data = 0;     // bytes of data pages
  uintptr_t user = 0;  // what cudaMalloc returned
  size_t n = 0;        // bytes asked for
};

size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

std::mutex mu;                    // guards `blocks` against concurrent cudaMalloc / cudaFree
std::map<uintptr_t, Block> blocks;  // live blocks by mapping start; read by the handler
struct sigaction previous;        // the SIGSEGV handler before ours

// This thread's scope depth and the blocks its current scope opened.
constexpr int kMaxOpen = 1024;
thread_local int depth = 0;
thread_local int n_open = 0;
thread_local Block open_blocks[kMaxOpen];

void poison(uintptr_t p, size_t n) {
#ifdef EMU_ASAN
  if (n) __asan_poison_memory_region(reinterpret_cast<void*>(p), n);
#else
  (void)p, (void)n;
#endif
}
void unpoison(uintptr_t p, size_t n) {
#ifdef EMU_ASAN
  if (n) __asan_unpoison_memory_region(reinterpret_cast<void*>(p), n);
#else
  (void)p, (void)n;
#endif
}

// The block whose mapping (guard page included) holds a, or nullptr. Called from the handler: no
// allocation, no lock (a cudaMalloc racing with a fault on another thread is a bug of its own).
const Block* block_at(uintptr_t a) {
  auto it = blocks.upper_bound(a);
  if (it == blocks.begin()) return nullptr;
  --it;
  const Block& b = it->second;
  return a < b.map + b.data + page_size() ? &b : nullptr;
}

// Writes the message and the stack to stderr, then stops. Only in the handler, on the way out.
[[noreturn]] void die(const char* text) {
  (void)!write(2, text, std::strlen(text));
#ifdef EMU_ASAN
  __sanitizer_print_stack_trace();
#endif
  signal(SIGABRT, SIG_DFL);
  std::abort();
}

const char* access_kind(void* ctx) {
#if defined(__x86_64__) && defined(REG_ERR)
  return (static_cast<ucontext_t*>(ctx)->uc_mcontext.gregs[REG_ERR] & 2) ? "wrote" : "read";
#else
  (void)ctx;
  return "touched";
#endif
}

void on_segv(int sig, siginfo_t* info, void* ctx) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
  const Block* b = info->si_code > 0 ? block_at(a) : nullptr;  // si_code <= 0: sent, not a fault
  if (b) {
    char text[640];
    if (a >= b->map + b->data) {  // the guard page
      std::snprintf(text, sizeof text,
                    "emulation: %s device memory at %p, %zu bytes past the end of a %zu-byte cudaMalloc block at %p "
                    "(its guard page)%s\n",
                    access_kind(ctx), info->si_addr, static_cast<size_t>(a - (b->user + b->n)), b->n,
                    reinterpret_cast<void*>(b->user),
                    depth > 0 ? ", inside a kernel, copy or cuBLAS call: an index past the end of a buffer" : "");
      die(text);
    }
    if (depth > 0) {  // the first touch of this block in the scope: open it
      if (n_open == kMaxOpen) die("emulation: one kernel, copy or cuBLAS call touched more than 1024 device blocks\n");
      if (mprotect(reinterpret_cast<void*>(b->map), b->data, PROT_READ | PROT_WRITE) != 0)
        die("emulation: mprotect failed while opening a device block\n");
      open_blocks[n_open++] = *b;
      return;  // the access runs again, now allowed
    }
    std::snprintf(text, sizeof text,
                  "emulation: host code %s device memory at %p (byte %lld of a %zu-byte cudaMalloc block at %p) "
                  "outside a kernel, a cudaMemcpyAsync/cudaMemsetAsync or a cuBLAS call. On a GPU the host cannot "
                  "dereference a device pointer: copy the data to the host first (Tensor::to(Device::cpu), "
                  "to_vector). Stack:\n",
                  access_kind(ctx), info->si_addr, static_cast<long long>(a) - static_cast<long long>(b->user), b->n,
                  reinterpret_cast<void*>(b->user));
    die(text);
  }
  // Not ours: the handler before us (AddressSanitizer's report, or the default action).
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(sig, info, ctx);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  } else {
    signal(SIGSEGV, SIG_DFL);  // returning re-runs the access, which now ends the process
  }
}

bool unprotected() {  // run --unprotected: blocks stay readable and writable, only the guard pages are not
  static const bool u = std::getenv("HANDGRAD_EMU_UNPROTECTED") != nullptr;
  return u;
}

void install_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &previous) != 0) fail("emulation: cannot install the SIGSEGV handler\n");
  });
}

}  // namespace

void* device_alloc(size_t n) {
  install_handler();
  const size_t pg = page_size();
  const size_t rounded = (n == 0 ? 16 : (n + 15) / 16 * 16);
  const size_t data = (rounded + pg - 1) / pg * pg;
  void* m = mmap(nullptr, data + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  Block b;
  b.map = reinterpret_cast<uintptr_t>(m);
  b.data = data;
  b.user = b.map + data - rounded;
  b.n = n;
  std::memset(reinterpret_cast<void*>(b.user), 0xFF, n);
  poison(b.map, b.user - b.map);              // the slack before the block
  poison(b.user + n, rounded - n);            // the rounding after it, up to the guard page
  if (mprotect(unprotected() ? reinterpret_cast<char*>(m) + data : m, unprotected() ? pg : data + pg, PROT_NONE) != 0)
    fail("emulation: mprotect failed on a new device block\n");
  std::lock_guard<std::mutex> lock(mu);
  blocks.emplace(b.map, b);
  return reinterpret_cast<void*>(b.user);
}

bool device_free(void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  Block b;
  {
    std::lock_guard<std::mutex> lock(mu);
    const Block* found = block_at(u);
    if (!found || found->user != u) {
      std::fprintf(stderr, "emulation: cudaFree(%p): not a live cudaMalloc block\n", p);
      return false;
    }
    b = *found;
    blocks.erase(b.map);
  }
  unpoison(b.map, b.data);  // the addresses may be mapped again for something else
  munmap(reinterpret_cast<void*>(b.map), b.data + page_size());
  return true;
}

DeviceScope::DeviceScope() {
  if (depth++ > 0 || unprotected()) return;
  install_handler();
  // A harness that installs its own SIGSEGV handler after ours (doctest does, per test case,
  // unless built with DOCTEST_CONFIG_NO_POSIX_SIGNALS) would take the faults that open blocks.
  struct sigaction now {};
  sigaction(SIGSEGV, nullptr, &now);
  if (!(now.sa_flags & SA_SIGINFO) || now.sa_sigaction != on_segv)
    fail("emulation: the SIGSEGV handler of the emulated device memory (tests/gpu/emulation/memory.cpp) was "
         "replaced; build the test main with -DDOCTEST_CONFIG_NO_POSIX_SIGNALS (tests/gpu/emulation/run does), or "
         "run with --unprotected\n");
}

DeviceScope::~DeviceScope() {
  if (--depth > 0) return;
  for (int i = 0; i < n_open; ++i)
    if (mprotect(reinterpret_cast<void*>(open_blocks[i].map), open_blocks[i].data, PROT_NONE) != 0)
      fail("emulation: mprotect failed while closing a device block\n");
  n_open = 0;
}

}  // namespace emu
