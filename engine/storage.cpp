// engine/storage.cpp — Storage: device memory plus its version counter, and the CPU block cache
// behind it.
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "engine/backend.h"
#include "engine/error.h"
#include "engine/tensor.h"

namespace hg {

namespace {
std::atomic<size_t> g_live_bytes{0};
constexpr std::align_val_t kAlign{64};

// A cache of freed CPU blocks, keyed by size. A training step allocates and frees the same
// sizes every step; served from the system allocator, each large block is a fresh mmap whose
// pages fault in (and are zeroed by the kernel) on first touch and are unmapped again on free —
// a measurable share of a step (bench/RESULTS.md). Blocks of at least kCacheMin bytes go back to
// a free list of their size instead, up to kCacheMax bytes held in all; smaller ones are left to
// malloc, which already keeps them. HANDGRAD_CPU_CACHE=0 in the environment turns the cache off
// (for memory checkers, which cannot see a use after free into a cached block).
class CpuBlockCache {
 public:
  static constexpr size_t kCacheMin = size_t{64} << 10;  // 64 KiB
  static constexpr size_t kCacheMax = size_t{1} << 30;   // 1 GiB

  void* alloc(size_t n) {
    if (enabled_ && n >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(n);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        held_ -= n;
        return p;
      }
    }
    return ::operator new(n, kAlign);
  }
  void free(void* p, size_t n) {
    if (enabled_ && n >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mu_);
      if (held_ + n <= kCacheMax) {
        free_[n].push_back(p);
        held_ += n;
        return;
      }
    }
    ::operator delete(p, kAlign);
  }
 private:
  const bool enabled_ = [] {
    const char* e = std::getenv("HANDGRAD_CPU_CACHE");
    return !(e && std::string(e) == "0");
  }();
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t held_ = 0;
};

CpuBlockCache& cpu_cache() {
  static CpuBlockCache* cache = new CpuBlockCache;  // never destroyed: storages may outlive statics
  return *cache;
}

}  // namespace

// ---------------------------------------------------------------- storage

Storage::Storage(size_t n, Device d) : nbytes(n), device(d) {
  if (d == Device::cuda) {
    data = n ? require_cuda("allocate").alloc(n) : nullptr;
  } else {
    try {
      data = n ? cpu_cache().alloc(n) : nullptr;
    } catch (const std::bad_alloc&) {  // an error that says how much, never a bare bad_alloc
      fail("allocate", "{} bytes ({:.3g} GiB) for a tensor could not be allocated on the CPU; give smaller sizes", n,
           static_cast<double>(n) / (1ull << 30));
    }
  }
  g_live_bytes += n;
}

Storage::Storage(void* d, size_t n, Device dev, std::shared_ptr<void> o)
    : data(d), nbytes(n), device(dev), owner(std::move(o)) {}

Storage::~Storage() {
  if (owner) return;  // the other library's memory: released with `owner`
  if (data) {
    if (device == Device::cuda) cuda_backend()->free(data);
    else cpu_cache().free(data, nbytes);
  }
  g_live_bytes -= nbytes;
}

size_t Storage::live_bytes() { return g_live_bytes.load(); }

}  // namespace hg
