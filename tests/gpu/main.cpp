// tests/gpu/main.cpp — the GPU suite's main: runs the tests when a usable GPU is present;
// otherwise prints one visible line saying why and exits 77, which ctest reports as skipped
// (SKIP_RETURN_CODE 77 in tests/CMakeLists.txt).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "engine/backend.h"

int main(int argc, char** argv) {
  const hg::CudaBackend* cu = hg::cuda_backend();
  const char* reason = nullptr;
  if (!cu) reason = "handgrad was built without CUDA";
  else if (!cu->device_available()) reason = cu->device_summary();
  if (reason) {
    std::printf("SKIPPED: %s — GPU tests need an NVIDIA GPU\n", reason);
    return 77;
  }
  std::printf("GPU: %s\n", cu->device_summary());
  doctest::Context context(argc, argv);
  return context.run();
}
