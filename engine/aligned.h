// engine/aligned.h — std::vector whose data starts on a 64-byte boundary (a cache line, one zmm),
// for the CPU kernels' scratch tiles and packed panels: a 64-byte vector load or store at an
// address that is only 16-byte aligned, as std::vector's own allocator gives, straddles two cache
// lines three times in four (5-7 % of a kernel's time where it happened: bench/RESULTS.md).
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace hg {

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p, kAlign); }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
};

template <typename T>
using aligned_vector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace hg
