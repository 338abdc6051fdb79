// cuda/allocator.cpp — the caching device allocator (see cuda/allocator.h).
#include "cuda/allocator.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cuda/runtime.h"
#include "engine/error.h"

namespace hg::cuda {

namespace {

constexpr size_t kSmallQuantum = 512;       // cudaMalloc aligns to 256; keep buckets aligned too
constexpr size_t kSmallLimit = 1u << 20;    // requests up to 1 MiB round to 512 bytes ...
constexpr size_t kLargeQuantum = 1u << 20;  // ... larger ones to 1 MiB (at most 50% waste, just above 1 MiB)

size_t round_up(size_t n, size_t q) { return (n + q - 1) / q * q; }

class CachingAllocator {
 public:
  void* alloc(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    if (nbytes > (size_t{1} << 60))  // also keeps the rounding below from overflowing
      fail("cudaMalloc", "a block of {} bytes is more than any device holds; check the shape", nbytes);
    const size_t bucket = allocator_bucket(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.allocs;
    void* p = nullptr;
    auto it = free_.find(bucket);
    if (it != free_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      ++stats_.reuses;
      stats_.bytes_cached -= bucket;
      --stats_.blocks_cached;
    } else {
      p = malloc_or_throw(nbytes, bucket);
    }
    live_.emplace(p, bucket);
    stats_.bytes_in_use += bucket;
    return p;
  }

  void free(void* p) noexcept {
    if (!p) return;
    try {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = live_.find(p);
      if (it == live_.end()) {
        std::fprintf(stderr, "handgrad: cuda device_free(%p): not a block of this allocator; ignored\n", p);
        return;
      }
      const size_t bucket = it->second;
      live_.erase(it);
      free_[bucket].push_back(p);
      stats_.bytes_in_use -= bucket;
      stats_.bytes_cached += bucket;
      ++stats_.blocks_cached;
    } catch (...) {  // only std::bad_alloc from the free list's growth: the block is lost, not the process
      std::fprintf(stderr, "handgrad: cuda device_free(%p): out of host memory; block leaked\n", p);
    }
  }

  AllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  void release_cached() {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached_locked();
  }

  void poison_cached(unsigned char byte) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [bucket, blocks] : free_)
      for (void* p : blocks) HG_CUDA_CHECK(cudaMemsetAsync(p, byte, bucket, stream()));
  }

 private:
  // Called with mu_ held.
  void* malloc_or_throw(size_t nbytes, size_t bucket) {
    void* p = nullptr;
    ++stats_.cuda_malloc_calls;
    cudaError_t e = cudaMalloc(&p, bucket);
    if (e == cudaErrorMemoryAllocation && stats_.blocks_cached > 0) {
      (void)cudaGetLastError();  // out-of-memory is not sticky: clear it and retry without the cache
      release_cached_locked();
      ++stats_.cuda_malloc_calls;
      e = cudaMalloc(&p, bucket);
    }
    if (e != cudaSuccess)
      cuda_fail(e, fmt::format("cudaMalloc({} bytes, for a request of {})", bucket, nbytes), __FILE__, __LINE__,
                fmt::format("{} bytes are in use by live tensors, {} cached; free tensors or use smaller "
                            "shapes",
                            stats_.bytes_in_use, stats_.bytes_cached));
    return p;
  }

  void release_cached_locked() {
    for (auto& [bucket, blocks] : free_) {
      for (void* p : blocks) {
        ++stats_.cuda_free_calls;
        HG_CUDA_CHECK(cudaFree(p));
        stats_.bytes_cached -= bucket;
        --stats_.blocks_cached;
      }
      blocks.clear();
    }
  }

  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // bucket size -> cached blocks
  std::unordered_map<void*, size_t> live_;                // block -> its bucket size
  AllocatorStats stats_;
};

// Never destroyed: tensors held in statics are freed after other statics are gone, and the
// driver reclaims device memory at process exit anyway.
CachingAllocator& allocator() {
  static CachingAllocator* a = new CachingAllocator;
  return *a;
}

}  // namespace

bool allocator_exact() {
  static const bool exact = [] {
    const char* v = std::getenv("HANDGRAD_CUDA_EXACT_ALLOC");
    return v && std::string(v) == "1";
  }();
  return exact;
}

size_t allocator_bucket(size_t nbytes) {
  if (allocator_exact()) return nbytes;
  return nbytes <= kSmallLimit ? round_up(nbytes, kSmallQuantum) : round_up(nbytes, kLargeQuantum);
}

void* device_alloc(size_t nbytes) { return allocator().alloc(nbytes); }
void device_free(void* p) noexcept { allocator().free(p); }
AllocatorStats allocator_stats() { return allocator().stats(); }
void allocator_release_cached() { allocator().release_cached(); }
void allocator_poison_cached(unsigned char byte) { allocator().poison_cached(byte); }

}  // namespace hg::cuda
