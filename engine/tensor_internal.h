// engine/tensor_internal.h — what engine/tensor.cpp shares with engine/copy.cpp. Not part of the API.
#pragma once
#include "engine/tensor.h"

namespace hg {

// Refuses an in-place write to a tensor that requires grad while grad mode is on, naming `op`.
void check_inplace(const Tensor& t, const char* op);

}  // namespace hg
