// ops/device.h — the one way an op runs its kernel for its tensors' device.
//
//   Tensor out = on_device("softmax", {s},
//                          [&] { return softmax_cpu(s); },           // the CPU kernel (this file's)
//                          HG_CUDA(cuda::softmax_rows(s)));          // the GPU kernel (cuda/ops.h)
//
// on_device checks that every defined operand is on one device — else the Error names the op and
// each operand's device — and runs the CPU body or the CUDA one. HG_CUDA(expr) wraps the GPU call
// as a body; in a build without CUDA it leaves the call out (nothing for the linker to find), and
// a CUDA tensor cannot exist there. A body of several statements is an immediately called lambda:
// HG_CUDA([&] { ...; return y; }()).
#pragma once
#include <functional>
#include <string>
#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <utility>

#include "engine/backend.h"
#include "engine/error.h"
#include "engine/tensor.h"

namespace hg {

struct NoCudaKernel {};  // what HG_CUDA(...) is in a build without CUDA

#ifdef HANDGRAD_WITH_CUDA
#define HG_CUDA(...) [&]() -> decltype(auto) { return __VA_ARGS__; }
#else
#define HG_CUDA(...) ::hg::NoCudaKernel{}
#endif

// The device of every defined operand, or an Error naming op and each operand's device.
Device common_device(std::string_view op, std::initializer_list<std::reference_wrapper<const Tensor>> operands);

// For a factory (no tensor operand): the body for `device`; asking for CUDA where no GPU can be
// used is an Error saying why.
template <typename Cpu, typename Cuda>
decltype(auto) on_device(std::string_view op, Device device, Cpu&& cpu, Cuda&& cuda) {
  if (device == Device::cpu) return cpu();
  require_cuda(std::string(op).c_str());  // no CUDA build, or no usable GPU: throws saying which
  if constexpr (std::is_same_v<std::decay_t<Cuda>, NoCudaKernel>) return cpu();  // not reached
  else return cuda();
}

template <typename Cpu, typename Cuda>
decltype(auto) on_device(std::string_view op, std::initializer_list<std::reference_wrapper<const Tensor>> operands,
                         Cpu&& cpu, Cuda&& cuda) {
  return on_device(op, common_device(op, operands), std::forward<Cpu>(cpu), std::forward<Cuda>(cuda));
}

}  // namespace hg
