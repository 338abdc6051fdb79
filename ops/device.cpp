// ops/device.cpp — on_device's device check (ops/device.h).
#include "ops/device.h"

#include <string>

namespace hg {

Device common_device(std::string_view op, std::initializer_list<std::reference_wrapper<const Tensor>> operands) {
  const Tensor* first = nullptr;
  for (const Tensor& t : operands) {
    if (!t.defined()) continue;
    if (!first) first = &t;
    else if (t.device() != first->device()) {
      std::string all;
      for (const Tensor& u : operands)
        if (u.defined()) all += fmt::format("{}{} on {}", all.empty() ? "" : ", ", u.describe(), device_name(u.device()));
      fail(op, "device mismatch: {}; move them to one device with .to(Device::...)", all);
    }
  }
  return first ? first->device() : Device::cpu;
}

}  // namespace hg
