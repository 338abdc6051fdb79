// engine/error.h — every error a user can hit is an hg::Error whose message names the op,
// the shapes involved and what to do about it.
#pragma once
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace hg {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A dim or an index out of range (engine/dims.h). In Python it is hg.IndexError, both an hg.Error
// and Python's IndexError, which is what PyTorch raises there.
struct IndexError : Error {
  using Error::Error;
};

// fail("my_op", "inner dimensions differ: {} vs {}", a, b) throws "my_op: inner dimensions differ: ..."
template <typename... Args>
[[noreturn]] void fail(std::string_view op, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format("{}: {}", op, fmt::format(f, std::forward<Args>(args)...)));
}

}  // namespace hg
