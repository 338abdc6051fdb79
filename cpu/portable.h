// cpu/portable.h — the one place where handgrad bridges the standard libraries it is built with.
// GCC's libstdc++ has all of C++20 that handgrad uses; the libc++ of Debian's Emscripten (3.1.6,
// LLVM 14), which builds the WebAssembly library, lacks <source_location> and std::bit_cast. For
// each, the standard's when it is there, else the same thing from clang's builtins. The bottom
// layer (cpu/), so every folder above may include it.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <version>

#if defined(__cpp_lib_source_location)
#include <source_location>
#endif
#if defined(__cpp_lib_bit_cast)
#include <bit>
#endif

namespace hg {

#if defined(__cpp_lib_source_location)
using source_location = std::source_location;
#else
// std::source_location's interface, filled in by clang's builtins at the caller (a default argument).
class source_location {
 public:
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           const char* function = __builtin_FUNCTION(),
                                           std::uint_least32_t line = __builtin_LINE(),
                                           std::uint_least32_t column = __builtin_COLUMN()) noexcept {
    source_location s;
    s.file_ = file, s.function_ = function, s.line_ = line, s.column_ = column;
    return s;
  }
  constexpr source_location() noexcept = default;
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr std::uint_least32_t column() const noexcept { return column_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  std::uint_least32_t line_ = 0, column_ = 0;
};
#endif

#if defined(__cpp_lib_bit_cast)
using std::bit_cast;
#else
template <typename To, typename From>
  requires(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<To> && std::is_trivially_copyable_v<From>)
constexpr To bit_cast(const From& from) noexcept {
  return __builtin_bit_cast(To, from);
}
#endif

}  // namespace hg
