// cuda/softmax.h — launchers for the softmax kernels in cuda/softmax.cu.
//
// x and y are contiguous (rows, cols) device buffers; the softmax runs along cols. Each launcher
// enqueues on `s` and returns cudaGetLastError() for the caller to check with HG_CUDA_CHECK.
// Kept free of engine headers so nvcc compiles only this kernel file.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace hg::cuda {

cudaError_t softmax_lastdim_f32(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t s);
cudaError_t softmax_lastdim_f64(const double* x, double* y, int64_t rows, int64_t cols, cudaStream_t s);

// cudaFuncGetAttributes on a kernel of this file: fails with cudaErrorNoKernelImageForDevice
// (or similar) when the build's CMAKE_CUDA_ARCHITECTURES cannot run on the current device.
cudaError_t probe_kernel_image();

}  // namespace hg::cuda
