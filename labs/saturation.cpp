// saturation — Section 2, Lab 1: at d_k = 128 unscaled scores saturate the softmax (nearly one-hot,
// where its Jacobian nearly vanishes); dividing by √d_k keeps it spread out.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>

#include "kit.h"
#include "report.h"
#include "saturation_case.h"

using namespace hg;
using namespace hg::lab;

int main(int argc, char** argv) {
  CLI::App app{"'Module 6: The transformer', Section 2, 'Why the scores are scaled', Lab 1: the largest softmax "
               "weight and the entropy of random rows, unscaled and scaled (docs/texts.md)."};
  int64_t draws = 5000, dk = 128, keys = 16;
  uint64_t seed = 0;
  Device device = Device::cpu;
  std::string json;
  app.add_option("--draws", draws, "number of (query, keys) draws")->capture_default_str()->check(whole_number_in(1, 10'000'000));
  app.add_option("--seed", seed, "seed of the generator")->capture_default_str()->check(whole_number_in(0, UINT64_MAX));
  app.add_option("--dk", dk, "width d_k of queries and keys")->capture_default_str()->check(whole_number_in(1, 65'536));
  app.add_option("--keys", keys, "keys per query")->capture_default_str()->check(whole_number_in(1, 65'536));
  add_device_option(app, device);
  add_json_option(app, json);
  setup_app(app);
  if (const int status = parse_flags(app, argc, argv); status >= 0) return status;

  return run_lab("saturation", json, device, [&](Report& rep) {
    const Saturation r = saturation(draws, seed, dk, keys, device);
    // The text's figures are for d_k = 128, 16 keys, 5,000 draws; other settings have none.
    const bool texts = dk == 128 && keys == 16;
    auto text = [texts](double v) { return texts ? std::optional<double>(v) : std::nullopt; };

    rep.section(fmt::format("{} draws of q and {} keys, iid N(0, 1), d_k = {}, seed {}", draws, keys, dk, seed));
    rep.text("The last digit depends on the random draw (the text's are numpy's): compared to 2 decimals.");
    rep.value("score std, unscaled (√d_k)", r.unscaled.score_std, text(11.3), 1);
    rep.value("score std, scaled", r.scaled.score_std, text(1.0), 1);

    rep.section("unscaled: q · k");
    rep.value("median largest weight", r.unscaled.median_max_weight, text(0.978), 2);
    rep.value("mean entropy (nats)", r.unscaled.mean_entropy, text(0.28), 2);
    rep.text(fmt::format("  to 3 decimals: median largest weight {:.3f}, mean entropy {:.3f}", r.unscaled.median_max_weight,
                         r.unscaled.mean_entropy));

    rep.section("scaled: q · k / √d_k");
    rep.value("median largest weight", r.scaled.median_max_weight, text(0.224), 2);
    rep.value("mean entropy (nats)", r.scaled.mean_entropy, text(2.36), 2);
    rep.text(fmt::format("  to 3 decimals: median largest weight {:.3f}, mean entropy {:.3f}", r.scaled.median_max_weight,
                         r.scaled.mean_entropy));
    rep.value("uniform row: ln(keys)", std::log(static_cast<double>(keys)), keys == 16 ? std::optional<double>(2.77) : std::nullopt, 2);

    rep.section("the largest weight of each draw");
    const auto hs = histogram(r.scaled.max_weights, 10, 0.0, 1.0);
    const auto hu = histogram(r.unscaled.max_weights, 10, 0.0, 1.0);
    for (const std::string& line : histogram_lines(hs, hu, "scaled", "unscaled", 0.0, 1.0)) rep.text(line);
    rep.json()["sections"]["the largest weight of each draw"]["bins"] = {{"lo", 0.0}, {"hi", 1.0}, {"count", 10}};
    rep.json()["sections"]["the largest weight of each draw"]["scaled"] = hs;
    rep.json()["sections"]["the largest weight of each draw"]["unscaled"] = hu;
    rep.text("Unscaled rows pile up near 1 (one-hot: the softmax Jacobian is nearly zero, so W_Q and W_K barely learn);");
    rep.text(fmt::format("scaled rows stay spread out, their largest weight near a few times 1/{} = {:.3f}.", keys,
                         1.0 / static_cast<double>(keys)));

  });
}
