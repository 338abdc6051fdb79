// tests/gpu/emulation/cuda_runtime.h — see cuda_runtime_api.h.
#pragma once
#include "cuda_runtime_api.h"
