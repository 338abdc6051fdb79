// lookup — Section 1's soft dictionary lookup: one query, three keys, three values, and the two
// limits that bracket attention: c → ∞ (the hard lookup) and c → 0 (the plain average).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "lookup_case.h"
#include "kit.h"
#include "report.h"

using namespace hg;
using namespace hg::lab;

namespace {

void show(Report& rep, const SoftLookup& r, const std::vector<double>& text_weights, const std::vector<double>& text_output) {
  rep.values("weights (pump, valve, tank)", r.weights.to_vector(), text_weights);
  rep.values("output", r.output.to_vector(), text_output);
  rep.tolerance("|output − attention op|", r.fused_diff, 1e-12);
}

// The limit of softmax(c · s) as c → +∞ (`best`) or −∞: equal weights on the keys whose score is
// the largest (or the smallest), zero elsewhere.
std::vector<double> limit_weights(const std::vector<double>& s, bool best) {
  const double target = best ? *std::max_element(s.begin(), s.end()) : *std::min_element(s.begin(), s.end());
  const double ties = static_cast<double>(std::count(s.begin(), s.end(), target));
  std::vector<double> w;
  for (double v : s) w.push_back(v == target ? 1.0 / ties : 0.0);
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"'Module 6: The transformer', Section 1, 'Attention as a soft dictionary lookup': the soft lookup "
               "and its limits c -> infinity and c -> 0 (docs/texts.md)."};
  std::optional<double> c_user;
  Device device = Device::cpu;
  std::string json;
  app.add_option("--c", c_user, "also multiply the scaled scores by this factor and show the lookup (inf and -inf: "
                                "the limits)");
  add_device_option(app, device);
  add_json_option(app, json);
  setup_app(app);
  if (const int status = parse_flags(app, argc, argv); status >= 0) return status;

  return run_lab("lookup", json, device, [&](Report& rep) {
    const LookupTable t = lookup_table(device);

    rep.section("the hard lookup (a dictionary)");
    rep.values("table[\"tank\"]", hard_lookup("tank"), {3, 3}, 0);
    rep.text("  any other query finds nothing: a small change to it changes nothing or jumps to another key");

    rep.section("the soft lookup: q = (1, 1), s = K q / √2");
    rep.matrix("K (rows: pump, valve, tank)", t.K, 0);
    rep.matrix("V", t.V, 0);
    const SoftLookup soft = soft_lookup(1.0, device);
    rep.values("scaled scores", soft.scores.to_vector(), {0.707, 0.707, 1.414});
    show(rep, soft, {0.248, 0.248, 0.503}, {1.759, 2.007});

    rep.section("scores times c = 10: nearly the hard lookup");
    show(rep, soft_lookup(10.0, device), {0.001, 0.001, 0.998}, {2.996, 2.997});

    rep.section("c → ∞: the softmax becomes an argmax");
    rep.values("value of the best-scoring key", argmax_lookup(device), {3, 3}, 0);
    rep.text("  at c = 1000 the weights are one-hot on the best key and the output is its value:");
    show(rep, soft_lookup(1000.0, device), {0.0, 0.0, 1.0}, {3.0, 3.0});

    rep.section("c → 0 (or equal scores): the plain average");
    show(rep, soft_lookup(0.0, device), {1.0 / 3, 1.0 / 3, 1.0 / 3}, {1.333, 1.667});

    rep.section("between the two limits");
    rep.text(fmt::format("  {:>8}  {:>7} {:>7} {:>7}   {}", "c", "w_pump", "w_valve", "w_tank", "output"));
    for (double c : {0.0, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0}) {
      SoftLookup r = soft_lookup(c, device);
      std::vector<double> w = r.weights.to_vector(), o = r.output.to_vector();
      rep.text(fmt::format("  {:>8g}  {:>7.3f} {:>7.3f} {:>7.3f}   ({:.3f}, {:.3f})", c, w[0], w[1], w[2], o[0], o[1]));
      rep.json()["sections"]["between the two limits"]["sweep"].push_back({{"c", c}, {"weights", w}, {"output", o}});
    }

    if (c_user && std::isinf(*c_user)) {
      // softmax(c · s) itself is inf − inf = NaN at c = ±∞; its limits are what the text describes.
      rep.section(fmt::format("your factor: c = {:g}, the limit", *c_user));
      const std::vector<double> w = limit_weights(soft_lookup(1.0, device).scores.to(Device::cpu).to_vector(), *c_user > 0);
      rep.values("weights (pump, valve, tank)", w);
      rep.values("output", matmul(tensor(w, {1, 3}, DType::f64), t.V.to(Device::cpu)).reshape({2}).to_vector());
      rep.text(*c_user > 0 ? "  c → +∞: all the weight on the best-scoring key (shared equally on a tie): the hard lookup"
                           : "  c → −∞: all the weight on the worst-scoring keys (pump and valve tie, so they share it): "
                             "the opposite of a lookup, the keys least like the query");
    } else if (c_user) {
      rep.section(fmt::format("your factor: c = {:g}", *c_user));
      SoftLookup r = soft_lookup(*c_user, device);
      rep.values("weights (pump, valve, tank)", r.weights.to_vector());
      rep.values("output", r.output.to_vector());
    }

  });
}
