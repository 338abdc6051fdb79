// cuda/allocator.h — a caching allocator for device memory.
//
// cudaMalloc and cudaFree are slow and synchronise the device, so freed blocks are kept in free
// lists bucketed by (rounded) size and handed out again: once a training step has run once,
// the same step makes no cudaMalloc. Safe because all work runs on one stream (cuda/runtime.h):
// a block freed while a kernel still reads it is handed out only to work queued after that kernel.
//
// Plain C++ (no CUDA types), so tests can read the counters.
#pragma once
#include <cstddef>
#include <cstdint>

namespace hg::cuda {

struct AllocatorStats {
  uint64_t cuda_malloc_calls = 0;  // cudaMalloc calls since the process started
  uint64_t cuda_free_calls = 0;    // cudaFree calls (only release_cached and the out-of-memory retry)
  uint64_t allocs = 0;             // device_alloc calls
  uint64_t reuses = 0;             // ... of which served from a free list
  size_t bytes_in_use = 0;         // handed out and not yet freed (rounded sizes)
  size_t bytes_cached = 0;         // held in the free lists, ready for reuse
  size_t blocks_cached = 0;
};

// The size a request is rounded up to: a multiple of 512 bytes up to 1 MiB, of 1 MiB above —
// or exactly nbytes when HANDGRAD_CUDA_EXACT_ALLOC=1 (read once, at the first allocation): blocks
// of exactly the size asked for, so that a memory checker (compute-sanitizer's memcheck, the CPU
// emulation's AddressSanitizer) sees an overrun of even one element past a tensor's end. Slower
// (fewer blocks are reused); for checking runs only.
size_t allocator_bucket(size_t nbytes);
bool allocator_exact();

// A device block of at least nbytes (nullptr for 0). On out-of-memory, releases the cache and
// retries once, then throws hg::Error naming cudaMalloc, the size and what is in use.
void* device_alloc(size_t nbytes);
// Returns a block from device_alloc to its free list. Never throws (called from destructors);
// an unknown pointer is reported on stderr and ignored.
void device_free(void* p) noexcept;

AllocatorStats allocator_stats();
// cudaFree every cached block (blocks in use are untouched).
void allocator_release_cached();
// Tests: set every byte of every cached block to `byte` (0xFF makes each float32 and float64 a
// NaN), so a kernel that leaves part of a reused output unwritten is caught. Queued on the stream.
void allocator_poison_cached(unsigned char byte = 0xFF);

}  // namespace hg::cuda
