// nn/checkpoint.cpp — safetensors writing and (validating) reading.
//
// The format, as the safetensors library (Rust core, used by its Python package) writes it:
//   [0, 8)          N, the header length, u64 little-endian
//   [8, 8 + N)      UTF-8 JSON, padded with spaces to a multiple of 8 bytes
//   [8 + N, size)   the data section; each tensor's bytes lie at [begin, end) relative to it
// A reader must trust nothing in the file: every length and offset is checked against the
// file's size, overflow-safely, before a byte of data is read.
#include "nn/checkpoint.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <span>

#include <nlohmann/json.hpp>

#include "engine/error.h"

namespace hg::nn {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps");

namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// The safetensors library refuses headers of 100 MB or more (MAX_HEADER_SIZE); so do we.
constexpr uint64_t kMaxHeader = 100'000'000;

const char* st_dtype(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::i64: return "I64";
    case DType::b8: return "BOOL";
  }
  return "?";
}

bool parse_st_dtype(const std::string& s, DType& out) {
  if (s == "F32") out = DType::f32;
  else if (s == "F64") out = DType::f64;
  else if (s == "I64") out = DType::i64;
  else if (s == "BOOL") out = DType::b8;
  else return false;
  return true;
}

// Dtypes the safetensors format defines that handgrad has no tensor type for.
bool known_unsupported_dtype(const std::string& s) {
  static const std::set<std::string> names = {"BF16", "F16", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2",
                                              "F4", "I8", "I16", "I32", "U8", "U16", "U32", "U64", "C64"};
  return names.count(s) > 0;
}

void put_u64_le(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

// ---------------------------------------------------------------- writing

std::string safetensors_bytes(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata,
                              const std::string& path) {
  const char* op = "save_safetensors";
  std::set<std::string> names;
  std::vector<Tensor> host;  // contiguous cpu copies (or the tensors themselves), in data order
  ordered_json header = ordered_json::object();
  if (!metadata.empty()) {
    ordered_json meta = ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__")
      fail(op, "{}: the tensor name '{}' is reserved or empty; rename it", path, name);
    if (!names.insert(name).second) fail(op, "{}: the tensor name '{}' is given twice", path, name);
    if (!t.defined()) fail(op, "{}: tensor '{}' is undefined", path, name);
    Tensor c = t.detach();
    if (c.device() != Device::cpu) c = c.to(Device::cpu);
    c = c.contiguous();
    const uint64_t nbytes = static_cast<uint64_t>(c.numel()) * dtype_size(c.dtype());
    header[name] = {{"dtype", st_dtype(c.dtype())}, {"shape", c.shape()}, {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    host.push_back(c);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the Python library pads to a multiple of 8
  std::string out(8, '\0');
  put_u64_le(out.data(), text.size());
  out += text;
  out.reserve(out.size() + offset);
  for (const Tensor& c : host)
    out.append(static_cast<const char*>(c.raw_data()), static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
  return out;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const char* op = "save_safetensors";
  const std::string bytes = safetensors_bytes(tensors, metadata, path);
  // Write next to the target and rename, so an interrupted save never leaves a half-written file
  // under the checkpoint's name.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail(op, "{}: cannot open '{}' for writing (does the folder exist? is it writable?)", path, tmp);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.flush();
    if (!f) {
      f.close();
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      fail(op, "{}: writing failed (disk full?)", path);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    fail(op, "{}: cannot move '{}' into place: {}", path, tmp, ec.message());
  }
}

// ---------------------------------------------------------------- reading

namespace {

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

// One header entry, checked for types and self-consistency (not yet against the file).
Entry parse_entry(const std::string& path, const std::string& name, const json& e) {
  const char* op = "load_safetensors";
  if (!e.is_object()) fail(op, "{}: entry '{}' is not a JSON object (it is {})", path, name, e.type_name());
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!e.contains(key)) fail(op, "{}: entry '{}' has no \"{}\"", path, name, key);
  const json& jd = e["dtype"];
  if (!jd.is_string()) fail(op, "{}: entry '{}': dtype must be a string, not {}", path, name, jd.type_name());
  const std::string ds = jd.get<std::string>();
  Entry out{name, DType::f32, {}, 0, 0};
  if (!parse_st_dtype(ds, out.dtype)) {
    if (known_unsupported_dtype(ds))
      fail(op, "{}: tensor '{}' has dtype {}, which handgrad does not support (supported: F32, F64, I64, BOOL); "
           "convert it before saving, e.g. tensor.float() in PyTorch", path, name, ds);
    fail(op, "{}: tensor '{}' has an unknown dtype '{}' (supported: F32, F64, I64, BOOL)", path, name, ds);
  }
  const json& js = e["shape"];
  if (!js.is_array()) fail(op, "{}: entry '{}': shape must be an array, not {}", path, name, js.type_name());
  // numel, overflow-safe: each factor and every partial product must stay below 2^63.
  uint64_t numel = 1;
  for (const json& d : js) {
    if (!d.is_number_unsigned())
      fail(op, "{}: tensor '{}': shape {} holds {}, which is not a non-negative integer", path, name, js.dump(), d.dump());
    const uint64_t s = d.get<uint64_t>();
    if (s > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) || __builtin_mul_overflow(numel, s, &numel) ||
        numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(op, "{}: tensor '{}': shape {} has more elements than can be addressed", path, name, js.dump());
    out.shape.push_back(static_cast<int64_t>(s));
  }
  const json& jo = e["data_offsets"];
  if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() || !jo[1].is_number_unsigned())
    fail(op, "{}: tensor '{}': data_offsets must be two non-negative integers [begin, end], not {}", path, name, jo.dump());
  out.begin = jo[0].get<uint64_t>();
  out.end = jo[1].get<uint64_t>();
  if (out.begin > out.end)
    fail(op, "{}: tensor '{}': data_offsets [{}, {}] end before they begin", path, name, out.begin, out.end);
  uint64_t nbytes;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(out.dtype)), &nbytes))
    fail(op, "{}: tensor '{}': shape {} is too large", path, name, js.dump());
  try {  // the sizes must make a tensor too: with a 0 in the shape the others may still overflow its strides
    check_shape(op, out.shape, out.dtype);
  } catch (const Error& err) {
    fail(op, "{}: tensor '{}': {}", path, name, err.what());
  }
  if (out.end - out.begin != nbytes)
    fail(op, "{}: tensor '{}': data_offsets [{}, {}] span {} bytes, but {} {} needs {} bytes", path, name, out.begin,
         out.end, out.end - out.begin, ds, js.dump(), nbytes);
  return out;
}

// Where the bytes come from: a file (read a piece at a time, so a large checkpoint is never held
// twice) or a buffer already in memory. `label` names it in every message.
class Source {
 public:
  Source(const std::string& path, std::ifstream& f) : label(path), file_(&f) {
    f.seekg(0, std::ios::end);
    const std::streamoff size_off = f.tellg();
    if (size_off < 0) fail("load_safetensors", "{}: cannot determine the file's size", path);
    size_ = static_cast<uint64_t>(size_off);
  }
  Source(const std::string& name, std::span<const std::byte> bytes) : label(name), bytes_(bytes), size_(bytes.size()) {}

  uint64_t size() const { return size_; }
  // Reads [at, at + n), which the caller has checked lies within size(); false when the read fails.
  bool read(uint64_t at, void* dst, uint64_t n) {
    if (!file_) {
      std::memcpy(dst, bytes_.data() + at, n);
      return true;
    }
    file_->seekg(static_cast<std::streamoff>(at));
    file_->read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    return static_cast<bool>(*file_);
  }

  const std::string label;

 private:
  std::ifstream* file_ = nullptr;
  std::span<const std::byte> bytes_;
  uint64_t size_ = 0;
};

// The file's size and its header, parsed: the 8-byte length, within the file and the limit, then
// the JSON object, refusing a tensor name that appears twice at the top level (JSON keeps the last).
struct Header {
  uint64_t file_size = 0, header_len = 0;
  json json_header;
};

Header read_header(Source& src) {
  const char* op = "load_safetensors";
  const std::string& path = src.label;
  const uint64_t file_size = src.size();
  if (file_size < 8)
    fail(op, "{}: the file has {} bytes, too few for the 8-byte header length; it is truncated or not a "
         "safetensors file", path, file_size);
  unsigned char len_bytes[8];
  if (!src.read(0, len_bytes, 8)) fail(op, "{}: reading the 8-byte header length failed", path);
  const uint64_t header_len = get_u64_le(len_bytes);
  if (header_len >= kMaxHeader)
    fail(op, "{}: the header length field says {} bytes, above the {} byte limit; the file is corrupt or not a "
         "safetensors file", path, header_len, kMaxHeader);
  if (header_len > file_size - 8)
    fail(op, "{}: the header length field says {} bytes, but only {} bytes follow it; the file is truncated", path,
         header_len, file_size - 8);
  std::string text(header_len, '\0');
  if (!src.read(8, text.data(), header_len)) fail(op, "{}: reading the {}-byte header failed", path, header_len);

  std::set<std::string> keys;
  json header;
  try {
    header = json::parse(text, [&](int depth, json::parse_event_t event, json& parsed) {
      if (depth == 1 && event == json::parse_event_t::key && !keys.insert(parsed.get<std::string>()).second)
        fail(op, "{}: the header names '{}' twice", path, parsed.get<std::string>());
      return true;
    });
  } catch (const json::exception& e) {
    fail(op, "{}: the header is not valid JSON ({}); the file is corrupt or not a safetensors file", path, e.what());
  }
  if (!header.is_object())
    fail(op, "{}: the header must be a JSON object of tensors, not {}", path, header.type_name());

  return {file_size, header_len, std::move(header)};
}

// Against the file, the format's rule exactly: sorted by offset, the tensors' byte ranges tile the
// data section of data_size bytes — each starts where the one before it ends (an empty tensor
// too), the first at 0, the last ends at data_size: no gap, no overlap, no trailing byte.
void check_spans(const std::string& path, std::vector<Entry>& entries, uint64_t data_size) {
  const char* op = "load_safetensors";
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.end > data_size)
      fail(op, "{}: tensor '{}': data_offsets [{}, {}] run past the data section's {} bytes; the file is truncated",
           path, e.name, e.begin, e.end, data_size);
    if (e.begin < pos)
      fail(op, "{}: tensors '{}' [{}, {}] and '{}' [{}, {}] overlap", path, prev->name, prev->begin, prev->end, e.name,
           e.begin, e.end);
    if (e.begin > pos)
      fail(op, "{}: tensor '{}' starts at byte {} of the data section, but the tensors before it end at {}: a gap of "
           "{} bytes (the byte ranges must cover the data section, in order)", path, e.name, e.begin, pos,
           e.begin - pos);
    pos = e.end;
    prev = &e;
  }
  if (pos != data_size)
    fail(op, "{}: the tensors end at byte {} of the data section, which has {} bytes: {} trailing bytes", path, pos,
         data_size, data_size - pos);
}

}  // namespace

namespace {

// The loader proper, over either source: the header, each entry, the spans, then the data.
SafetensorsFile load_from(Source& src) {
  const char* op = "load_safetensors";
  const std::string& path = src.label;
  const Header h = read_header(src);
  const json& header = h.json_header;

  SafetensorsFile out;
  std::vector<Entry> entries;
  for (const auto& [name, e] : header.items()) {
    if (name == "__metadata__") {
      if (e.is_null()) continue;
      if (!e.is_object()) fail(op, "{}: \"__metadata__\" must be an object of strings, not {}", path, e.type_name());
      for (const auto& [k, v] : e.items()) {
        if (!v.is_string())
          fail(op, "{}: \"__metadata__\" value for '{}' must be a string, not {}", path, k, v.type_name());
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    if (name.empty()) fail(op, "{}: a tensor has an empty name", path);
    entries.push_back(parse_entry(path, name, e));
  }

  const uint64_t data_start = 8 + h.header_len;
  check_spans(path, entries, h.file_size - data_start);

  for (const Entry& e : entries) {
    Tensor t = empty(e.shape, e.dtype);
    const uint64_t nbytes = e.end - e.begin;
    if (nbytes > 0) {
      if (!src.read(data_start + e.begin, t.raw_data(), nbytes))
        fail(op, "{}: reading tensor '{}' ({} bytes at offset {}) failed; did the file change?", path, e.name,
             nbytes, data_start + e.begin);
    }
    if (e.dtype == DType::b8) {
      const uint8_t* b = t.data_ptr<const uint8_t>();
      for (int64_t k = 0; k < t.numel(); ++k)
        if (b[k] > 1) fail(op, "{}: BOOL tensor '{}' holds the byte {} at element {}; booleans must be 0 or 1", path,
                           e.name, static_cast<int>(b[k]), k);
    }
    out.tensors.emplace_back(e.name, t);
  }
  return out;
}

}  // namespace

SafetensorsFile load_safetensors(const std::string& path) {
  const char* op = "load_safetensors";
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(op, "{}: is a folder; give the path of a .safetensors file", path);
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(op, "{}: cannot open the file (does it exist? is it readable?)", path);
  Source src(path, f);
  return load_from(src);
}

SafetensorsFile load_safetensors(std::span<const std::byte> bytes, const std::string& name) {
  Source src(name, bytes);
  return load_from(src);
}

// ---------------------------------------------------------------- modules

void save_checkpoint(const std::string& path, const Module& m, const std::map<std::string, std::string>& metadata) {
  save_safetensors(path, m.named_parameters(), metadata);
}

void load_checkpoint(const std::string& path, Module& m) {
  SafetensorsFile file = load_safetensors(path);
  try {
    m.load_parameters(file.tensors);
  } catch (const Error& e) {
    fail("load_checkpoint", "{}: {}", path, e.what());
  }
}

std::optional<int64_t> metadata_count(const SafetensorsFile& file, const std::string& key) {
  const auto it = file.metadata.find(key);
  if (it == file.metadata.end()) return std::nullopt;
  int64_t n = 0;
  const char* end = it->second.data() + it->second.size();
  const auto [ptr, ec] = std::from_chars(it->second.data(), end, n);
  if (ec != std::errc() || ptr != end || n < 0) return std::nullopt;
  return n;
}

}  // namespace hg::nn
