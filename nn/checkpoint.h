// nn/checkpoint.h — checkpoints in the safetensors format, so PyTorch users load handgrad
// weights with the safetensors library and handgrad loads theirs:
//   8 bytes: N, the header length, little-endian u64
//   N bytes: JSON {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//             "__metadata__": {"key": "value"}}  (offsets relative to the end of the header)
//   the raw little-endian, row-major data
// Reading validates everything against the file's size before touching the data: a truncated,
// oversized or malformed file is an hg::Error, never a read out of bounds.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "nn/module.h"

namespace hg::nn {

// F32, F64, I64 and BOOL are supported; tensors on a GPU are downloaded. Loaded tensors are on the cpu.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// The bytes save_safetensors writes (to put a model inside a page or an archive); `path` names
// them in messages.
std::string safetensors_bytes(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata = {},
                              const std::string& path = "<memory>");
struct SafetensorsFile {
  NamedTensors tensors;  // in data order
  std::map<std::string, std::string> metadata;
};
SafetensorsFile load_safetensors(const std::string& path);
// The same rules, over bytes already in memory (a download, an archive member, a fuzzer's input);
// `name` stands for the path in messages.
SafetensorsFile load_safetensors(std::span<const std::byte> bytes, const std::string& name = "<memory>");

// A module's parameters, by name. Saving reads them from whatever device they are on (a GPU's
// are downloaded); loading copies each value into its parameter on the parameter's own device,
// so a checkpoint saved from a GPU run loads into a CPU model and the other way round.
void save_checkpoint(const std::string& path, const Module& m, const std::map<std::string, std::string>& metadata = {});
void load_checkpoint(const std::string& path, Module& m);

// A whole number ≥ 0 that a checkpoint's metadata records under `key` (the labs write "steps":
// how long the model trained), or nullopt when the file records none or something else there.
std::optional<int64_t> metadata_count(const SafetensorsFile& file, const std::string& key);

}  // namespace hg::nn
