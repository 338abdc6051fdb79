// tests/fuzz/fuzz_safetensors.cpp — the safetensors loader under a fuzzer: any bytes, written as a
// file and loaded. An hg::Error is the answer to a malformed file; anything else — a crash, a
// sanitizer's report, another exception, a hang — is a finding.
//
// Built two ways: with libFuzzer (scripts/fuzz-safetensors: clang, -fsanitize=fuzzer,address,
// undefined), and as `fuzz_replay` with the project's compiler, which runs every file of the
// corpus (tests/fuzz/corpus/safetensors) through it on every ctest.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include <unistd.h>

#include "engine/error.h"
#include "nn/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/handgrad-fuzz-" + std::to_string(getpid()) + ".safetensors";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    (void)hg::nn::load_safetensors(path);
  } catch (const hg::Error&) {
  }
  return 0;
}
