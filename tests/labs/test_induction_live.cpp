// The induction model's answers to a page (labs/induction_live.h), natively: a model saved as
// `induction --save` writes it loads from bytes; every bad request is an answer in words, never a
// throw; ablations hold for their own request only; bytes that are not the model are an hg::Error.
// (tests/wasm/run-induction-check holds the WebAssembly build to this one and to the lab's --json.)
#ifdef HANDGRAD_WITH_LABKIT
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "labs/induction_lab.h"
#include "labs/induction_live.h"
#include "nn/checkpoint.h"

using namespace hg;
using namespace hg::lab::induction;
using nlohmann::json;

namespace {

// An untrained model of `blocks` blocks as `induction --save` would write it, read back as bytes.
std::string model_bytes(int64_t blocks = 2) {
  Generator gen(3);
  nn::TinyCharLM model(model_config(blocks), gen);
  const auto path = std::filesystem::temp_directory_path() / fmt::format("handgrad_induction_live_{}.safetensors", ::getpid());
  nn::save_checkpoint(path.string(), model);
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  return bytes;
}

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("induction live: a sequence, its study and a batch; ablations last one request") {
  const std::string bytes = model_bytes();
  InductionLive live(as_bytes(bytes));
  const json seq = json::parse(live.answer(R"({"sequence": {"seed": 7, "Lmin": 16, "Lmax": 32}})"));
  REQUIRE(seq["ok"] == true);
  CHECK(seq["tokens"].size() == 64);
  const int64_t L = seq["L"];
  CHECK((L >= 16 && L <= 32));
  const json study = {{"study", {{"tokens", seq["tokens"]}, {"L", L}}}};
  const json plain = json::parse(live.answer(study.dump()));
  REQUIRE(plain["ok"] == true);
  CHECK(plain["loss"].size() == 63);
  CHECK(plain["patterns"].size() == 2);
  CHECK(plain["patterns"][0].size() == 4);
  CHECK(plain["patterns"][0][0].size() == 63);
  json ablated_request = study;
  ablated_request["ablate"] = {{0, 1}};
  const json ablated = json::parse(live.answer(ablated_request.dump()));
  REQUIRE(ablated["ok"] == true);
  CHECK(ablated["loss"] != plain["loss"]);  // block 1's head 2 zeroed changes what block 2 sees
  CHECK(json::parse(live.answer(study.dump()))["loss"] == plain["loss"]);  // and is undone after
  const json batch = json::parse(live.answer(R"({"batch": {"seed": 4, "n": 8, "Lmin": 16, "Lmax": 32}})"));
  REQUIRE(batch["ok"] == true);
  CHECK(batch["acc_per_position"].size() == 63);
  CHECK(batch["prev"][1].size() == 4);
}

TEST_CASE("induction live: every bad request is an answer naming the field") {
  const std::string bytes = model_bytes();
  InductionLive live(as_bytes(bytes));
  const std::pair<const char*, const char*> cases[] = {
      {"[1, 2]", "must be a JSON object"},
      {"{}", "'sequence', 'study' or 'batch'"},
      {"not json", "parse"},
      {R"({"sequence": 5})", "'sequence' must be an object"},
      {R"({"sequence": {"seed": 7, "Lmin": 16}})", "'Lmax' must be a whole number"},
      {R"({"sequence": {"seed": 7, "Lmin": 40, "Lmax": 32}})", "'Lmin' is 40; it must be from 1 to 32"},
      {R"({"sequence": {"seed": -1, "Lmin": 16, "Lmax": 32}})", "'seed' is -1"},
      {R"({"study": {"tokens": [1, 2, 99], "L": 2}})", "from 0 to 63, got 99"},
      {R"({"study": {"tokens": [1], "L": 1}})", "2 to 257 tokens"},
      {R"({"study": {"tokens": [1, 2, 3], "L": 4}})", "'L' is 4; it must be from 1 to 3"},
      {R"({"study": {"tokens": [1, 2, 3], "L": 1.5}})", "'L' must be a whole number"},
      {R"({"study": {"tokens": [1, 2, 3], "L": 1}, "ablate": [[2, 0]]})", "no head [2, 0]"},
      {R"({"study": {"tokens": [1, 2, 3], "L": 1}, "ablate": [[0]]})", "must be [block, head]"},
      {R"({"study": {"tokens": [1, 2, 3], "L": 1}, "ablate": 3})", "a list of [block, head] pairs"},
      {R"({"batch": {"seed": 1, "n": 0, "Lmin": 16, "Lmax": 32}})", "'n' is 0"},
  };
  for (const auto& [request, words] : cases) {
    CAPTURE(request);
    const json a = json::parse(live.answer(request));
    CHECK(a["ok"] == false);
    CHECK(a["error"].get<std::string>().find(words) != std::string::npos);
  }
}

TEST_CASE("induction live: bytes that are not the model's parameters are an hg::Error") {
  const std::string junk = "not a safetensors file";
  CHECK_THROWS_AS(InductionLive(as_bytes(junk)), Error);
  const std::string one_block = model_bytes(1);
  CHECK_THROWS_AS(InductionLive(as_bytes(one_block)), Error);
}

#endif  // HANDGRAD_WITH_LABKIT
