// tests/fuzz/fuzz_safetensors.cpp — the safetensors loader under a fuzzer: any bytes, loaded as a
// safetensors file from memory (load_safetensors over a span runs the very rules the file loader
// runs; only where the bytes come from differs, and test_checkpoint.cpp holds the two to the same
// answers). An hg::Error is the answer to a malformed file; anything else — a crash, a sanitizer's
// report, another exception, a hang — is a finding.
//
// Built two ways: with libFuzzer (scripts/fuzz-safetensors: clang, -fsanitize=fuzzer,address,
// undefined), and as `fuzz_replay` with the project's compiler, which runs every file of the
// corpus (tests/fuzz/corpus/safetensors) through it on every ctest.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/error.h"
#include "nn/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)hg::nn::load_safetensors(std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size), "fuzz");
  } catch (const hg::Error&) {
  }
  return 0;
}
