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
#include <map>

#include "labs/induction_lab.h"
#include "labs/induction_live.h"
#include "labs/induction_page.h"
#include "labs/induction_why.h"
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
      {"{}", "'sequence', 'study', 'batch', 'why' or 'circuits'"},
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
      {R"({"batch": {"seed": 1, "n": 8, "Lmin": 16, "Lmax": 32, "from": 8}})", "'from' is 8; it must be from 0 to 7"},
      {R"({"batch": {"seed": 1, "n": 8, "Lmin": 16, "Lmax": 32, "from": 4, "count": 5}})", "'count' is 5; it must be from 1 to 4"},
      {R"({"why": {"tokens": [1, 2, 3], "position": 2}})", "'position' is 2; it must be from 0 to 1"},
      {R"({"why": {"tokens": [1, 2, 3], "position": 1, "check": {"embedding": 5}}})", "'embedding' is 5"},
      {R"({"why": {"tokens": [1, 2, 3], "position": 1, "check": {"weight": [0, 0, 0, 1]}}})", "no attention weight at query 0, key 1"},
      {R"({"why": {"tokens": [1, 2, 3], "position": 1, "check": {"weight": [0, 9, 1, 0]}}})", "no head [0, 9]"},
      {R"({"why": {"tokens": [1, 2, 3], "position": 1, "check": {"weight": [0, 0.5, 1, 0]}}})", "[block, head, query, key]"},
      {R"({"why": {"tokens": [1, 2, 3], "position": 1, "check": "here"}})", "'check' must be"},
  };
  for (const auto& [request, words] : cases) {
    CAPTURE(request);
    const json a = json::parse(live.answer(request));
    CHECK(a["ok"] == false);
    CHECK(a["error"].get<std::string>().find(words) != std::string::npos);
  }
}

// A batch asked for in pieces, each mean weighed by its count, is the batch asked for whole.
TEST_CASE("induction live: a batch in pieces combines to the whole batch") {
  const std::string bytes = model_bytes();
  InductionLive live(as_bytes(bytes));
  const json whole = json::parse(live.answer(R"({"batch": {"seed": 4, "n": 12, "Lmin": 16, "Lmax": 32}, "ablate": [[1, 2]]})"));
  REQUIRE(whole["ok"] == true);
  CHECK(whole["n"] == 12);
  std::map<std::string, double> sum, count;
  std::vector<double> acc(63, 0.0);
  for (int from = 0; from < 12; from += 5) {
    const int n = std::min(5, 12 - from);
    const json piece = json::parse(live.answer(fmt::format(
        R"({{"batch": {{"seed": 4, "n": 12, "Lmin": 16, "Lmax": 32, "from": {}, "count": {}}}, "ablate": [[1, 2]]}})", from, n)));
    REQUIRE(piece["ok"] == true);
    CHECK(piece["n"] == n);
    for (const char* k : {"first", "later", "acc"}) {
      const double c = piece[k == std::string("first") ? "n_first" : "n_later"];
      sum[k] += piece[k].get<double>() * c;
      count[k] += c;
    }
    for (int b = 0; b < 2; ++b)
      for (int h = 0; h < 4; ++h) {
        const std::string p = fmt::format("prev{}{}", b, h), i = fmt::format("ind{}{}", b, h);
        sum[p] += piece["prev"][b][h].get<double>() * piece["n_prev"].get<double>();
        count[p] += piece["n_prev"].get<double>();
        sum[i] += piece["induction"][b][h].get<double>() * piece["n_induction"].get<double>();
        count[i] += piece["n_induction"].get<double>();
      }
    for (size_t t = 0; t < 63; ++t) acc[t] += piece["acc_per_position"][t].get<double>() * n;
  }
  for (const char* k : {"first", "later", "acc"}) CHECK(sum[k] / count[k] == doctest::Approx(whole[k].get<double>()).epsilon(1e-5));
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 4; ++h) {
      CHECK(sum[fmt::format("prev{}{}", b, h)] / count[fmt::format("prev{}{}", b, h)] ==
            doctest::Approx(whole["prev"][b][h].get<double>()).epsilon(1e-5));
      CHECK(sum[fmt::format("ind{}{}", b, h)] / count[fmt::format("ind{}{}", b, h)] ==
            doctest::Approx(whole["induction"][b][h].get<double>()).epsilon(1e-5));
    }
  for (size_t t = 0; t < 63; ++t) CHECK(acc[t] / 12 == doctest::Approx(whole["acc_per_position"][t].get<double>()));
}

// The written-out float64 forward is the model's: its losses and weights equal the model's own
// (float32) to float32 rounding, with a head zeroed too; its gradients agree with central differences.
TEST_CASE("induction live: why this prediction") {
  const std::string bytes = model_bytes();
  InductionLive live(as_bytes(bytes));
  const json seq = json::parse(live.answer(R"({"sequence": {"seed": 5, "Lmin": 16, "Lmax": 32}})"));
  for (const json& ablate : {json::array(), json{{1, 0}, {0, 3}}}) {
    CAPTURE(ablate.dump());
    json study = {{"study", {{"tokens", seq["tokens"]}, {"L", seq["L"]}}}, {"ablate", ablate}};
    const json s = json::parse(live.answer(study.dump()));
    REQUIRE(s["ok"] == true);
    for (int t : {0, 20, 40, 62}) {
      CAPTURE(t);
      json why = {{"why", {{"tokens", seq["tokens"]}, {"L", seq["L"]}, {"position", t}, {"check", {{"embedding", t / 2}}}}},
                  {"ablate", ablate}};
      const json w = json::parse(live.answer(why.dump()));
      REQUIRE(w["ok"] == true);
      CHECK(w["loss"].get<double>() == doctest::Approx(s["loss"][t].get<double>()).epsilon(1e-5));
      CHECK(w["target"] == seq["tokens"][t + 1]);
      CHECK(w["embedding"].size() == 63);
      for (int j = t + 1; j < 63; ++j) CHECK(w["embedding"][j].get<double>() == 0.0);  // later inputs play no part
      const json& c = w["check"];
      CHECK(c["analytic"].get<double>() == w["embedding"][t / 2].get<double>());
      CHECK(std::abs(c["analytic"].get<double>() - c["numeric"].get<double>()) <= 1e-7 + 1e-5 * std::abs(c["numeric"].get<double>()));
      why["why"]["check"] = {{"weight", {0, 1, t, t / 3}}};
      const json a = json::parse(live.answer(why.dump()));
      REQUIRE(a["ok"] == true);
      const double g = a["weights"][0][1][t][t / 3], n = a["check"]["numeric"];
      CHECK(a["check"]["analytic"].get<double>() == g);
      CHECK(std::abs(g - n) <= 1e-7 + 1e-5 * std::abs(n));
      if (ablate.size() == 2) CHECK(a["weights"][1][0][t][0].get<double>() == 0.0);  // a zeroed head's weights do nothing
    }
  }
}

// The written-out forward's attention weights are the model's own (float32 there, float64 here),
// and a model whose positions it does not write out is refused in words.
TEST_CASE("induction why: its weights are the model's; other positions refused") {
  Generator gen(3);
  nn::TinyCharLM model(model_config(2), gen);
  std::vector<int64_t> tokens;
  for (int64_t i = 0; i < 40; ++i) tokens.push_back((i * 7 + 3) % 64);
  model.ablate_head(0, 2);
  const Why why = why_prediction(model, tokens, 30, {});
  const std::vector<Tensor> maps =
      model.attention_weights(index_tensor(std::vector<int64_t>(tokens.begin(), tokens.end() - 1), {1, 39}));
  REQUIRE(why.patterns.size() == 2);
  for (size_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 4; ++h) {
      const std::vector<double> mine = why.patterns[b][static_cast<size_t>(h)].to_vector();
      const std::vector<double> theirs = maps[b].select(0, 0).select(0, h).to(DType::f64).contiguous().to_vector();
      REQUIRE(mine.size() == theirs.size());
      double worst = 0;
      for (size_t i = 0; i < mine.size(); ++i) worst = std::max(worst, std::abs(mine[i] - theirs[i]));
      CHECK(worst <= 1e-5);
    }
  Generator gen2(3);
  nn::TinyCharLM alibi(model_config(2, false, "alibi"), gen2);
  CHECK_THROWS_WITH_AS(why_prediction(alibi, tokens, 3, {}), doctest::Contains("positions are 'alibi'"), Error);
}

TEST_CASE("induction live: the circuits") {
  const std::string bytes = model_bytes();
  InductionLive live(as_bytes(bytes));
  const json c = json::parse(live.answer(R"({"circuits": {}})"));
  REQUIRE(c["ok"] == true);
  REQUIRE(c["qk"].size() == 2);
  REQUIRE(c["qk"][1].size() == 4);
  CHECK(c["qk"][1][3].size() == 64);
  CHECK(c["qk"][1][3][0].size() == 64);
  Generator gen(3);
  nn::TinyCharLM model(model_config(2), gen);  // the same weights model_bytes() saved
  for (int64_t b = 0; b < 2; ++b) {
    const Tensor C = ov_copy_matrix(model, b);
    CHECK(c["ov_diagonal"][b].get<double>() == diagonal_fraction(C));
    CHECK(c["ov"][b][5][7].get<double>() == doctest::Approx(C.select(0, 5).select(0, 7).item()).epsilon(1e-9));
  }
  // QK of block 1 head 2 at tokens (9, 4): e_9ᵀ W_qᵀ W_k e_4 / √32, from the weights directly.
  const std::vector<double> E = model.token_emb->weight.to(DType::f64).contiguous().to_vector();
  const std::vector<double> W = model.blks[0]->qkv->weight.to(DType::f64).contiguous().to_vector();
  double s = 0;
  for (int r = 0; r < 32; ++r) {
    double q = 0, k = 0;
    for (int i = 0; i < 128; ++i) {
      q += W[static_cast<size_t>((2 * 32 + r) * 128 + i)] * E[static_cast<size_t>(9 * 128 + i)];
      k += W[static_cast<size_t>((128 + 2 * 32 + r) * 128 + i)] * E[static_cast<size_t>(4 * 128 + i)];
    }
    s += q * k;
  }
  CHECK(c["qk"][0][2][9][4].get<double>() == doctest::Approx(s / std::sqrt(32.0)).epsilon(1e-9));
}

TEST_CASE("induction live: bytes that are not the model's parameters are an hg::Error") {
  const std::string junk = "not a safetensors file";
  CHECK_THROWS_AS(InductionLive(as_bytes(junk)), Error);
  const std::string one_block = model_bytes(1);
  CHECK_THROWS_AS(InductionLive(as_bytes(one_block)), Error);
}

// RFC 4648's test vectors, and bytes of every value.
TEST_CASE("induction page: base64 and the lab's figures inside a script element") {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},          {"f", "Zg=="},         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},   {"foob", "Zm9vYg=="},  {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [in, out] : vectors) CHECK(base64(in) == out);
  CHECK(base64(std::string("\xff\x00\xfe", 3)) == "/wD+");
  const std::string page = induction_page_html("var handgradInduction = 1;", "abc", {{"model", "</script><b>"}});
  CHECK(page.find("</script><b>") == std::string::npos);
  CHECK(page.find(R"(<\/script><b>)") != std::string::npos);
  CHECK(page.find(">YWJj</script>") != std::string::npos);
}

#endif  // HANDGRAD_WITH_LABKIT
