// tests/fuzz/replay.cpp — `fuzz_replay FILE_OR_FOLDER...`: every file through the fuzz target
// (fuzz_safetensors.cpp), one after another, without libFuzzer. Exit 0 when all returned; a crash
// or an unexpected exception ends the run with the file's name on stderr.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.push_back(p);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "fuzz_replay: no input files (give files or folders)\n");
    return 2;
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz_replay: %s: unexpected exception: %s\n", f.c_str(), e.what());
      return 1;
    }
  }
  std::printf("fuzz_replay: %zu files, none crashed\n", files.size());
  return 0;
}
