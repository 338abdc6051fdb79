// nn/checkpoint.h: safetensors files byte for byte as the format defines them, a file written by
// the safetensors library itself, bit-identical round trips, and a malformed file of every kind
// giving an hg::Error that names the file and the problem (never a crash or an out-of-bounds read).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>

#include "handgrad.h"
#include "nn/checkpoint.h"
#include "nn/module.h"

using namespace hg;
using namespace hg::nn;
namespace fs = std::filesystem;

namespace {

using Bytes = std::string;

// A folder of its own under the system temp dir, removed at the end of the test.
struct TempDir {
  fs::path dir;
  TempDir() {
    static int counter = 0;
    dir = fs::temp_directory_path() / fmt::format("handgrad_ckpt_{}_{}", ::getpid(), counter++);
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};

Bytes read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}
void write_file(const std::string& p, const Bytes& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(b.data(), static_cast<std::streamsize>(b.size()));
}
Bytes u64le(uint64_t v) {
  Bytes b(8, '\0');
  for (int i = 0; i < 8; ++i) b[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return b;
}
// A file with this header text (unpadded, as another writer might leave it) and data section.
Bytes st_file(const std::string& header, const Bytes& data) { return u64le(header.size()) + header + data; }
Bytes hex_bytes(const std::string& hex) {
  Bytes out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}
Bytes raw_bytes(const Tensor& t) {
  Tensor c = t.detach().contiguous();
  return Bytes(static_cast<const char*>(c.raw_data()), static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
}

struct Small : Module {
  Small(Generator& gen, DType dtype = DType::f32) {
    token_emb = register_module("token_emb", std::make_shared<Embedding>(11, 6, gen, dtype));
    qkv = register_module("qkv", std::make_shared<Linear>(6, 18, true, gen, dtype));
    proj = register_module("proj", std::make_shared<Linear>(6, 6, false, gen, dtype));
  }
  std::shared_ptr<Embedding> token_emb;
  std::shared_ptr<Linear> qkv, proj;
};

}  // namespace

TEST_CASE("safetensors: a one-tensor file is exactly the bytes the format specifies") {
  TempDir tmp;
  const std::string p = tmp.path("a.safetensors");
  save_safetensors(p, {{"a", tensor({1.0, -2.0}, {2})}}, {{"format", "pt"}});
  // 8-byte little-endian length, the JSON padded with spaces to a multiple of 8, then 1.0f and -2.0f
  // (0x3f800000, 0xc0000000) little-endian.
  std::string header = R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  REQUIRE(header.size() == 85);
  header += std::string(3, ' ');  // 85 -> 88
  const Bytes expect = u64le(88) + header + hex_bytes("0000803f000000c0");
  CHECK(read_file(p) == expect);
  CHECK_FALSE(fs::exists(p + ".tmp"));
}

TEST_CASE("safetensors: reads a file written by the safetensors library (0.8.0, safetensors.numpy.save)") {
  // PYTHONPATH=/tmp/st python3 -c 'import numpy as np; from safetensors.numpy import save;
  //   print(save({"w": np.array([[1.5, -2.0, 0.25], [3.0, 0.0, -0.125]], dtype=np.float32),
  //               "ids": np.array([7, -1], dtype=np.int64), "mask": np.array([True, False, True]),
  //               "d": np.array(0.5, dtype=np.float64)}, metadata={"format": "np"}).hex())'
  // Its header lists the tensors in data order (by dtype size, then name), not by name.
  const Bytes file = hex_bytes(
      "08010000000000007b225f5f6d657461646174615f5f223a7b22666f726d6174223a226e70227d2c22696473223a7b2264747970"
      "65223a22493634222c227368617065223a5b325d2c22646174615f6f666673657473223a5b302c31365d7d2c2264223a7b226474"
      "797065223a22463634222c227368617065223a5b5d2c22646174615f6f666673657473223a5b31362c32345d7d2c2277223a7b22"
      "6474797065223a22463332222c227368617065223a5b322c335d2c22646174615f6f666673657473223a5b32342c34385d7d2c22"
      "6d61736b223a7b226474797065223a22424f4f4c222c227368617065223a5b335d2c22646174615f6f666673657473223a5b3438"
      "2c35315d7d7d2020202020200700000000000000ffffffffffffffff000000000000e03f0000c03f000000c00000803e00004040"
      "00000000000000be010001");
  REQUIRE(file.size() == 323);
  TempDir tmp;
  const std::string p = tmp.path("from_python.safetensors");
  write_file(p, file);
  SafetensorsFile f = load_safetensors(p);
  CHECK(f.metadata == std::map<std::string, std::string>{{"format", "np"}});
  REQUIRE(f.tensors.size() == 4);
  CHECK(f.tensors[0].first == "ids");  // data order
  CHECK(f.tensors[0].second.dtype() == DType::i64);
  CHECK(f.tensors[0].second.to_int_vector() == std::vector<int64_t>{7, -1});
  CHECK(f.tensors[1].first == "d");
  CHECK(f.tensors[1].second.dtype() == DType::f64);
  CHECK(f.tensors[1].second.dim() == 0);
  CHECK(f.tensors[1].second.item() == 0.5);
  CHECK(f.tensors[2].first == "w");
  CHECK(f.tensors[2].second.shape() == Shape{2, 3});
  CHECK(f.tensors[2].second.to_vector() == std::vector<double>{1.5, -2.0, 0.25, 3.0, 0.0, -0.125});
  CHECK(f.tensors[3].first == "mask");
  CHECK(f.tensors[3].second.dtype() == DType::b8);
  CHECK(f.tensors[3].second.to_vector() == std::vector<double>{1, 0, 1});
  // Written back by handgrad in the same order, it is the same file (same JSON, same padding).
  const std::string q = tmp.path("again.safetensors");
  save_safetensors(q, f.tensors, f.metadata);
  CHECK(read_file(q) == file);
}

TEST_CASE("safetensors: a module's parameters round-trip bit-identically, in every dtype") {
  TempDir tmp;
  for (DType dt : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dt));
    Generator g1(5), g2(6);
    Small a(g1, dt), b(g2, dt);
    const std::string p = tmp.path("small.safetensors");
    save_checkpoint(p, a, {{"step", "800"}});
    SafetensorsFile f = load_safetensors(p);
    CHECK(f.metadata.at("step") == "800");
    NamedTensors params = a.named_parameters();
    REQUIRE(f.tensors.size() == params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      CHECK(f.tensors[i].first == params[i].first);
      CHECK(f.tensors[i].second.shape() == params[i].second.shape());
      CHECK(raw_bytes(f.tensors[i].second) == raw_bytes(params[i].second));
    }
    load_checkpoint(p, b);  // b had other weights
    NamedTensors bp = b.named_parameters();
    for (size_t i = 0; i < params.size(); ++i) CHECK(raw_bytes(bp[i].second) == raw_bytes(params[i].second));
  }
  // I64, BOOL, 0-d, empty and non-contiguous tensors.
  Generator gen(8);
  Tensor wide = randn({3, 4}, gen, DType::f64);
  NamedTensors mixed = {{"ids", index_tensor({3, -9, 1LL << 40}, {3})},
                        {"mask", bool_tensor({true, false, false, true}, {2, 2})},
                        {"scalar", scalar(-0.0, DType::f64)},
                        {"empty", zeros({0, 3})},
                        {"transposed", wide.transpose(0, 1)}};
  const std::string p = tmp.path("mixed.safetensors");
  save_safetensors(p, mixed);
  SafetensorsFile f = load_safetensors(p);
  CHECK(f.metadata.empty());
  REQUIRE(f.tensors.size() == mixed.size());
  for (size_t i = 0; i < mixed.size(); ++i) {
    CAPTURE(mixed[i].first);
    CHECK(f.tensors[i].first == mixed[i].first);
    CHECK(f.tensors[i].second.dtype() == mixed[i].second.dtype());
    CHECK(f.tensors[i].second.shape() == mixed[i].second.shape());
    CHECK(raw_bytes(f.tensors[i].second) == raw_bytes(mixed[i].second));
  }
  CHECK(std::signbit(f.tensors[2].second.item()));  // -0.0 kept
  const Bytes bytes = read_file(p);
  const uint64_t header_len = static_cast<unsigned char>(bytes[0]) | static_cast<unsigned char>(bytes[1]) << 8;
  CHECK(header_len % 8 == 0);                            // padded, so the data section starts aligned
  CHECK(bytes.size() == 8 + header_len + 24 + 4 + 8 + 0 + 96);  // i64 (3), b8 (2, 2), f64 0-d, (0, 3), f64 (4, 3)
}

TEST_CASE("safetensors: load_checkpoint into a module of another shape lists the names and keeps the module") {
  TempDir tmp;
  Generator gen(1);
  Small a(gen);
  const std::string p = tmp.path("small.safetensors");
  NamedTensors renamed = a.named_parameters();
  renamed[0].first = "tok_emb.weight";
  save_safetensors(p, renamed);
  Small b(gen);
  const Bytes before = raw_bytes(b.qkv->weight);
  try {
    load_checkpoint(p, b);
    FAIL("expected an error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find(p) != std::string::npos);
    CHECK(m.find("missing (the module has them, the values do not): token_emb.weight") != std::string::npos);
    CHECK(m.find("unexpected (not parameters of this module): tok_emb.weight") != std::string::npos);
  }
  CHECK(raw_bytes(b.qkv->weight) == before);
}

TEST_CASE("safetensors: save refuses reserved, empty and repeated names and unwritable paths") {
  TempDir tmp;
  Tensor t = zeros({2});
  CHECK_THROWS_WITH_AS(save_safetensors(tmp.path("x"), {{"__metadata__", t}}), doctest::Contains("reserved"), Error);
  CHECK_THROWS_WITH_AS(save_safetensors(tmp.path("x"), {{"", t}}), doctest::Contains("reserved or empty"), Error);
  CHECK_THROWS_WITH_AS(save_safetensors(tmp.path("x"), {{"a", t}, {"a", t}}), doctest::Contains("given twice"), Error);
  CHECK_THROWS_WITH_AS(save_safetensors(tmp.path("no/such/dir/x"), {{"a", t}}), doctest::Contains("cannot open"), Error);
  fs::create_directories(tmp.path("folder"));
  CHECK_THROWS_WITH_AS(save_safetensors(tmp.path("folder"), {{"a", t}}), doctest::Contains("cannot move"), Error);
  CHECK_FALSE(fs::exists(tmp.path("folder") + ".tmp"));  // the partial file is cleaned up
}

TEST_CASE("safetensors: every kind of malformed file is an hg::Error naming the file and the problem") {
  TempDir tmp;
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const Bytes eight(8, '\x11');
  struct Bad {
    const char* what;
    Bytes file;
    const char* message;
  };
  const std::vector<Bad> cases = {
      {"empty file", "", "too few for the 8-byte header length"},
      {"5 bytes", Bytes(5, '\0'), "the file has 5 bytes"},
      {"header length beyond the file", u64le(1000) + "{}", "says 1000 bytes, but only 2 bytes follow it"},
      {"huge header length", u64le(1ULL << 62) + "{}", "above the 100000000 byte limit"},
      {"header length 2^64 - 1", u64le(~0ULL) + "{}", "above the 100000000 byte limit"},
      {"empty header", u64le(0), "not valid JSON"},
      {"invalid JSON", st_file(R"({"a":{"dtype":"F32",)", ""), "not valid JSON"},
      {"binary garbage", st_file(Bytes("\xff\xfe\x00\x01", 4), ""), "not valid JSON"},
      {"not an object", st_file("[1, 2]", ""), "must be a JSON object"},
      {"entry not an object", st_file(R"({"a": 3})", ""), "entry 'a' is not a JSON object"},
      {"no data_offsets", st_file(R"({"a":{"dtype":"F32","shape":[2]}})", eight), "entry 'a' has no \"data_offsets\""},
      {"dtype not a string", st_file(R"({"a":{"dtype":5,"shape":[2],"data_offsets":[0,8]}})", eight), "dtype must be a string"},
      {"unknown dtype", st_file(R"({"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", eight), "unknown dtype 'F33'"},
      {"BF16", st_file(R"({"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})", eight), "dtype BF16, which handgrad does not support"},
      {"negative shape", st_file(R"({"a":{"dtype":"F32","shape":[-2,-1],"data_offsets":[0,8]}})", eight), "holds -2, which is not a non-negative integer"},
      {"fractional shape", st_file(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", eight), "not a non-negative integer"},
      {"shape not an array", st_file(R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", eight), "shape must be an array"},
      {"numel overflows", st_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight), "more elements than can be addressed"},
      {"strides overflow behind a 0", st_file(R"({"a":{"dtype":"F32","shape":[0,4611686018427387904,4],"data_offsets":[0,0]}})", ""), "too large"},
      {"bytes overflow", st_file(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", eight), "too large"},
      {"wrong byte count", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}})", Bytes(12, '\0')), "span 12 bytes, but F32 [2] needs 8 bytes"},
      {"offsets past the data", st_file("{" + ok_entry + "}", Bytes(6, '\0')), "run past the data section's 6 bytes"},
      {"huge offsets", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[18446744073709551608,18446744073709551615]}})", eight), "span 7 bytes"},
      {"huge offsets, right span", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[18446744073709551600,18446744073709551608]}})", eight), "run past the data section"},
      {"begin after end", st_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", eight), "end before they begin"},
      {"three offsets", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}})", eight), "must be two non-negative integers"},
      {"negative offset", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", eight), "must be two non-negative integers"},
      {"overlap", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", Bytes(12, '\0')), "tensors 'a' [0, 8] and 'b' [4, 12] overlap"},
      {"overlap behind an empty tensor", st_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", Bytes(16, '\0')), "overlap"},
      {"a gap between tensors", st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", Bytes(12, '\0')), "a gap of 4 bytes"},
      {"a gap before the first", st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight), "starts at byte 4"},
      {"trailing bytes", st_file("{" + ok_entry + "}", Bytes(12, '\0')), "4 trailing bytes"},
      {"an empty tensor inside another", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})", eight), "overlap"},
      {"an empty name", st_file(R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", eight), "a tensor has an empty name"},
      {"same name twice", st_file("{" + ok_entry + "," + ok_entry + "}", eight), "names 'a' twice"},
      {"metadata not strings", st_file(R"({"__metadata__":{"step":800}})", ""), "value for 'step' must be a string"},
      {"metadata not an object", st_file(R"({"__metadata__":"x"})", ""), "\"__metadata__\" must be an object"},
      {"BOOL byte 2", st_file(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", Bytes("\x01\x02", 2)), "holds the byte 2 at element 1"},
  };
  // Each case is also a file of the fuzz corpus (tests/fuzz/corpus/safetensors/malformed-*), which
  // fuzz_replay and the fuzzer start from. HANDGRAD_WRITE_CORPUS=1 rewrites those files from the
  // cases above; otherwise they must match them byte for byte.
  const fs::path corpus = fs::path(HANDGRAD_SOURCE_DIR) / "tests/fuzz/corpus/safetensors";
  const bool write_corpus = std::getenv("HANDGRAD_WRITE_CORPUS") != nullptr;
  for (const Bad& c : cases) {
    CAPTURE(c.what);
    const std::string p = tmp.path("bad.safetensors");
    write_file(p, c.file);
    for (const bool from_memory : {false, true}) {
      CAPTURE(from_memory);
      const std::string label = from_memory ? "<memory>" : p;
      try {
        if (from_memory)
          (void)load_safetensors(std::span<const std::byte>(reinterpret_cast<const std::byte*>(c.file.data()), c.file.size()));
        else
          (void)load_safetensors(p);
        FAIL("loaded without an error");
      } catch (const Error& e) {
        std::string m = e.what();
        INFO(m);
        CHECK(m.rfind("load_safetensors: " + label + ": ", 0) == 0);
        CHECK(m.find(c.message) != std::string::npos);
      }
    }
    std::string slug = "malformed-";
    for (const char ch : std::string(c.what)) slug += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    if (write_corpus)
      write_file((corpus / slug).string(), c.file);
    else
      CHECK_MESSAGE(read_file((corpus / slug).string()) == c.file,
                    "the corpus file " << slug << " is missing or stale; rerun with HANDGRAD_WRITE_CORPUS=1");
  }
  CHECK_THROWS_WITH_AS(load_safetensors(tmp.path("missing.safetensors")), doctest::Contains("cannot open"), Error);
  CHECK_THROWS_WITH_AS(load_safetensors(tmp.dir.string()), doctest::Contains("is a folder"), Error);
}

TEST_CASE("safetensors: a checkpoint cut at every length fails cleanly; corrupt header bytes never crash") {
  TempDir tmp;
  Generator gen(2);
  Linear lin(3, 2, true, gen);
  const std::string good = tmp.path("good.safetensors");
  save_checkpoint(good, lin);
  const Bytes file = read_file(good);
  const std::string p = tmp.path("cut.safetensors");
  for (size_t n = 0; n < file.size(); ++n) {
    CAPTURE(n);
    write_file(p, file.substr(0, n));
    CHECK_THROWS_AS(load_safetensors(p), Error);
  }
  write_file(p, file);
  CHECK(load_safetensors(p).tensors.size() == 2);

  // Overwrite each header byte with values that break lengths, numbers and structure: each file
  // either loads or throws hg::Error (any other exception, or a crash, fails).
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | static_cast<unsigned char>(file[static_cast<size_t>(i)]);
  REQUIRE(header_len < file.size());
  const size_t header_end = 8 + static_cast<size_t>(header_len);
  int loaded = 0, refused = 0;
  for (size_t i = 0; i < header_end; ++i) {
    for (char v : {'\0', '\xff', '"', '9', '-', '[', '}'}) {
      Bytes bad = file;
      bad[i] = v;
      write_file(p, bad);
      try {
        (void)load_safetensors(p);
        ++loaded;
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  CHECK(refused > 0);
  CHECK(loaded + refused == static_cast<int>(header_end * 7));
}

// The fixture tests/nn/safetensors_check.py reads (an independent, stdlib-only parser). With
// HANDGRAD_ST_FIXTURE=FILE the file is kept there:
//   HANDGRAD_ST_FIXTURE=/tmp/fx.safetensors build/tests/handgrad_tests -tc='*fixture*'
//   python3 tests/nn/safetensors_check.py /tmp/fx.safetensors
TEST_CASE("safetensors: the fixture for tests/nn/safetensors_check.py") {
  TempDir tmp;
  const char* keep = std::getenv("HANDGRAD_ST_FIXTURE");
  const std::string p = keep ? std::string(keep) : tmp.path("fixture.safetensors");
  // Values the script recomputes: element k of each tensor is a simple function of k.
  std::vector<double> f32, f64;
  std::vector<int64_t> i64;
  std::vector<bool> b8;
  for (int k = 0; k < 12; ++k) f32.push_back(0.5 * k - 2.25);
  for (int k = 0; k < 5; ++k) f64.push_back(1.0 / (k + 3));
  for (int k = 0; k < 4; ++k) i64.push_back(k * k * 1000003 - 7);
  for (int k = 0; k < 6; ++k) b8.push_back(k % 3 == 0);
  save_safetensors(p,
                   {{"blks.0.qkv.weight", tensor(f32, {3, 4}, DType::f32)},
                    {"f64", tensor(f64, {5}, DType::f64)},
                    {"ids", index_tensor(i64, {2, 2})},
                    {"mask", bool_tensor(b8, {2, 1, 3})},
                    {"scalar", scalar(3.5, DType::f32)}},
                   {{"producer", "handgrad"}, {"step", "0"}});
  SafetensorsFile f = load_safetensors(p);
  CHECK(f.tensors.size() == 5);
}
