#include "report.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <new>

#include "output.h"

namespace hg::lab {

namespace {
bool agree(double a, double b, int decimals) {
  const double s = std::pow(10.0, decimals);
  return std::llround(a * s) == std::llround(b * s);
}
}  // namespace

Report::Report(std::string lab) : lab_(std::move(lab)) { json_["lab"] = lab_; }

void Report::section(const std::string& title) {
  section_ = title;
  say("\n== {} ==\n", title);
}

void Report::text(const std::string& line) {
  say("{}\n", line);
  json_["notes"].push_back(line);
}

void Report::value(const std::string& key, double measured, std::optional<double> text_value, int decimals) {
  nlohmann::json& j = json_["sections"][section_][key];
  j["measured"] = measured;
  if (text_value) {
    ++compared_;
    bool ok = agree(measured, *text_value, decimals);
    if (!ok) ++mismatches_;
    j["text"] = *text_value;
    j["agrees"] = ok;
    say("  {:<34} {:>10.{}f}   text {:>8.{}f}  {}\n", key, measured, decimals, *text_value, decimals,
               ok ? "ok" : "DIFFERS");
  } else {
    say("  {:<34} {:>10.{}f}\n", key, measured, decimals);
  }
}

void Report::value_within_spread(const std::string& key, double measured, double text_value, double lo, double hi,
                                 const std::string& source, int decimals) {
  nlohmann::json& j = json_["sections"][section_][key];
  ++compared_;
  // Both inside: this run and the text's are draws from the same spread (NaN: outside). The text's
  // number, printed to `decimals` places, stands for any value that rounds to it.
  const double half = 0.5 * std::pow(10.0, -decimals);
  const bool ok = measured >= lo && measured <= hi && text_value + half >= lo && text_value - half <= hi;
  if (!ok) ++mismatches_;
  j["measured"] = measured;
  j["text"] = text_value;
  j["seed_spread"] = {lo, hi};
  j["seed_spread_source"] = source;
  j["agrees"] = ok;
  // The spread one place finer than the numbers: 0.012-0.019 rather than 0.01-0.02.
  say("  {:<34} {:>10.{}f}   text {:>8.{}f}  {} {:.{}f}-{:.{}f} ({})\n", key, measured, decimals, text_value, decimals,
             ok ? "agrees within seed spread" : "differs by more than seeds do:", lo, decimals + 1, hi, decimals + 1, source);
}

void Report::value_within_spread(const std::string& key, double measured, const SeedSpread& s, bool applicable,
                                 const std::string& why, int decimals) {
  if (applicable) return value_within_spread(key, measured, s.text, s.lo, s.hi, s.source, decimals);
  nlohmann::json& j = json_["sections"][section_][key];
  j["measured"] = measured;
  j["text"] = s.text;
  j["not_compared"] = why;
  say("  {:<34} {:>10.{}f}   text {:>8.{}f}  not compared: {}\n", key, measured, decimals, s.text, decimals, why);
}

void Report::values(const std::string& key, const std::vector<double>& measured, const std::vector<double>& text_values,
                    int decimals) {
  nlohmann::json& j = json_["sections"][section_][key];
  j["measured"] = measured;
  std::vector<std::string> m;
  for (double v : measured) m.push_back(fmt::format("{:.{}f}", v, decimals));
  if (!text_values.empty()) {
    bool ok = text_values.size() == measured.size();
    for (size_t i = 0; ok && i < measured.size(); ++i) ok = agree(measured[i], text_values[i], decimals);
    ++compared_;
    if (!ok) ++mismatches_;
    std::vector<std::string> t;
    for (double v : text_values) t.push_back(fmt::format("{:.{}f}", v, decimals));
    j["text"] = text_values;
    j["agrees"] = ok;
    say("  {:<34} ({})   text ({})  {}\n", key, fmt::join(m, ", "), fmt::join(t, ", "), ok ? "ok" : "DIFFERS");
  } else {
    say("  {:<34} ({})\n", key, fmt::join(m, ", "));
  }
}

void Report::matrix(const std::string& key, const Tensor& t, int decimals) {
  Tensor m = t.detach().to(DType::f64);
  if (m.dim() == 1) m = m.unsqueeze(0);
  if (m.dim() != 2) m = m.reshape({-1, m.size(-1)});
  nlohmann::json rows = nlohmann::json::array();
  say("  {}\n", key);
  for (int64_t i = 0; i < m.size(0); ++i) {
    std::vector<double> row;
    std::vector<std::string> cells;
    for (int64_t j = 0; j < m.size(1); ++j) {
      double v = m.at({i, j});
      row.push_back(v);
      cells.push_back(std::isinf(v) ? fmt::format("{:>{}}", v < 0 ? "-inf" : "inf", decimals + 4)
                                    : fmt::format("{:>{}.{}f}", v, decimals + 4, decimals));
    }
    rows.push_back(row);
    say("    [{}]\n", fmt::join(cells, " "));
  }
  json_["sections"][section_][key] = rows;
}

namespace {
// Any tensor as a list of rows of doubles (0-d and 1-d: one row; more: rows of the last dim).
std::vector<std::vector<double>> rows_of(const Tensor& t) {
  Tensor m = t.detach().to(DType::f64);
  const int64_t cols = m.dim() == 0 ? 1 : m.size(-1);
  std::vector<double> flat = m.to_vector();
  std::vector<std::vector<double>> rows;
  for (size_t i = 0; i < flat.size(); i += static_cast<size_t>(cols))
    rows.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(i), flat.begin() + static_cast<std::ptrdiff_t>(i + cols));
  return rows;
}

std::string cell(double v, int decimals) {
  if (std::isinf(v)) return fmt::format("{:>{}}", v < 0 ? "-inf" : "inf", decimals + 4);
  return fmt::format("{:>{}.{}f}", v, decimals + 4, decimals);
}
}  // namespace

void Report::matrices(const std::string& key, const std::vector<std::string>& names, const std::vector<Tensor>& ts,
                      int decimals) {
  if (names.size() != ts.size()) throw Error(fmt::format("{}: matrices '{}' has {} names for {} tensors", lab_, key, names.size(), ts.size()));
  std::vector<std::vector<std::vector<double>>> all;
  nlohmann::json& j = json_["sections"][section_][key];
  size_t nrows = 0, width = 0;
  for (size_t k = 0; k < ts.size(); ++k) {
    all.push_back(rows_of(ts[k]));
    j[names[k]] = all.back();
    nrows = std::max(nrows, all.back().size());
    if (!all.back().empty()) width = std::max(width, all.back()[0].size());
  }
  const size_t colw = std::max<size_t>(width * static_cast<size_t>(decimals + 5) + 2, 12);
  std::string head = fmt::format("  {:<10}", key);
  for (const std::string& n : names) head += fmt::format("  {:<{}}", n, colw);
  head.erase(head.find_last_not_of(' ') + 1);
  say("{}\n", head);
  for (size_t r = 0; r < nrows; ++r) {
    std::string line = fmt::format("  {:<10}", "");
    for (const auto& m : all) {
      std::string c;
      if (r < m.size()) {
        std::vector<std::string> cells;
        for (double v : m[r]) cells.push_back(cell(v, decimals));
        c = fmt::format("[{}]", fmt::join(cells, " "));
      }
      line += fmt::format("  {:<{}}", c, colw);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    say("{}\n", line);
  }
}

void Report::fact(const std::string& key, const std::string& measured, std::optional<std::string> text_value) {
  nlohmann::json& j = json_["sections"][section_][key];
  j["measured"] = measured;
  if (text_value) {
    ++compared_;
    bool ok = measured == *text_value;
    if (!ok) ++mismatches_;
    j["text"] = *text_value;
    j["agrees"] = ok;
    say("  {:<34} {:<18} text {:<18} {}\n", key, measured, *text_value, ok ? "ok" : "DIFFERS");
  } else {
    say("  {:<34} {}\n", key, measured);
  }
}

void Report::tolerance(const std::string& key, double measured, double bound) {
  ++tolerance_checks_;
  bool ok = measured <= bound;  // NaN fails
  if (!ok) ++tolerance_failures_;
  nlohmann::json& j = json_["sections"][section_][key];
  j["measured"] = measured;
  j["bound"] = bound;
  j["within"] = ok;
  say("  {:<34} {:>10.2e}   <= {:.0e}  {}\n", key, measured, bound, ok ? "ok" : "EXCEEDS");
}

bool Report::criterion(const std::string& what, double measured, const std::string& op, double bound) {
  if (op != ">=" && op != "<=" && op != "==")
    fail(lab_, "criterion '{}' has the comparison '{}'; use \">=\", \"<=\" or \"==\"", what, op);
  const bool met = op == ">=" ? measured >= bound : op == "<=" ? measured <= bound : measured == bound;
  if (!met) ++criteria_unmet_;
  // Fixed decimals for ordinary sizes, exponent notation for the tiny differences some labs bound.
  const double a = std::abs(measured);
  const std::string m = a == 0.0 || (a >= 1e-3 && a < 1e6) ? fmt::format("{:.3f}", measured) : fmt::format("{:.2e}", measured);
  say("  {:<56} {:>8}  {} {:<6} {}\n", what, m, op, bound, met ? "met" : "NOT MET");
  json_["criteria"][what] = {{"measured", measured}, {"op", op}, {"bound", bound}, {"met", met}};
  return met;
}

void Report::criterion_not_applicable(const std::string& what, const std::string& why) {
  say("  {:<56} {}{}\n", what, why.starts_with("not applicable") ? "" : "not checked: ", why);
  json_["criteria_not_applicable"][what] = why;
}

bool Report::criterion_when(bool applicable, const std::string& why, const std::string& what, double measured,
                            const std::string& op, double bound) {
  if (applicable) return criterion(what, measured, op, bound);
  criterion_not_applicable(what, why);
  return false;
}

std::string too_short(int64_t steps, int64_t needs) {
  return fmt::format("not applicable at {} steps (needs ≥ {})", steps, needs);
}

void Report::write_json(const std::string& path) const {
  write_file(path, json_.dump(2) + "\n", lab_ + ": --json");
  say("wrote {} (every number above, as JSON)\n", path);
}

void Report::summary() {
  json_["compared"] = compared_;
  json_["mismatches"] = mismatches_;
  say("\n{} numbers compared with the text: {} agree, {} differ.\n", compared_, compared_ - mismatches_, mismatches_);
  if (tolerance_checks_ > 0) {
    json_["tolerance_checks"] = tolerance_checks_;
    json_["tolerance_failures"] = tolerance_failures_;
    say("{} agreement checks between methods: {} within their bound, {} not.\n", tolerance_checks_,
               tolerance_checks_ - tolerance_failures_, tolerance_failures_);
  }
}

CLI::Validator whole_number_in(uint64_t lo, uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        const std::string why = fmt::format("must be a whole number from {} to {}", lo, hi);
        uint64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || ec != std::errc() || ptr != end || v < lo || v > hi) return why + ", not '" + text + "'";
        return "";
      },
      hi == UINT64_MAX ? std::string("N") : fmt::format("N ({} to {})", lo, hi));
}

CLI::Validator writable_file() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::filesystem::path p(text);
        std::error_code ec;
        if (std::filesystem::is_directory(p, ec)) return "'" + text + "' is a folder; give a file name";
        // Opened for appending, as the lab will write it (permissions alone say nothing to root);
        // a file made only for this test is removed again.
        const bool existed = std::filesystem::exists(p, ec);
        const bool ok = static_cast<bool>(std::ofstream(p, std::ios::app));
        if (ok && !existed) std::filesystem::remove(p, ec);
        return ok ? "" : "cannot write '" + text + "' (does its folder exist? is it writable?)";
      },
      "FILE (writable)");
}

CLI::Validator writable_folder() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::filesystem::path p(text);
        std::error_code ec;
        if (std::filesystem::exists(p, ec) && !std::filesystem::is_directory(p, ec))
          return "'" + text + "' exists and is not a folder";
        std::filesystem::create_directories(p, ec);  // the lab writes there: made now, or refused now
        if (ec) return "cannot make the folder '" + text + "': " + ec.message();
        const std::filesystem::path probe = p / ".handgrad-write-test";
        const bool ok = static_cast<bool>(std::ofstream(probe));
        std::filesystem::remove(probe, ec);
        return ok ? "" : "cannot write into the folder '" + text + "'";
      },
      "DIR (writable)");
}

CLI::Option* add_json_option(CLI::App& app, std::string& path) {
  return app.add_option("--json", path, "write every printed number to this file")->check(writable_file());
}

CLI::Option* add_device_option(CLI::App& app, Device& device) {
  return app
      .add_option_function<std::string>(
          "--device", [&device](const std::string& name) { device = name == "cuda" ? Device::cuda : Device::cpu; },
          "where the lab's tensors live and its ops run")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->default_str("cpu");
}

std::string device_description(Device device) {
  if (device == Device::cpu) return "cpu";
  const CudaBackend* cu = cuda_backend();
  if (!cu)
    throw Error("--device cuda: handgrad was built without CUDA (configure with the CUDA toolkit installed, nvcc on "
                "PATH); run with --device cpu");
  if (!cu->device_available())
    throw Error(fmt::format("--device cuda: no usable GPU: {}; run with --device cpu", cu->device_summary()));
  return fmt::format("cuda ({})", cu->device_summary());
}

int run_lab(const std::string& lab, const std::string& json_path, const std::function<void(Report&)>& body) {
  try {
    const bool first_rank = nn::world().rank() == 0;
    if (!first_rank) quiet_stdout();  // under mpirun only rank 0 reports
    Report rep(lab);
    body(rep);
    rep.summary();
    if (!json_path.empty() && first_rank) rep.write_json(json_path);
    // The exit rule of every lab: 1 when any acceptance check or agreement bound is not met.
    if (rep.criteria_unmet() > 0 || rep.tolerance_failures() > 0) return kExitCheckNotMet;
  } catch (const std::bad_alloc&) {
    const std::string who = nn::rank_label();
    fmt::print(stderr, "error{}: {}: out of memory (std::bad_alloc); give smaller sizes (--batch, --eval-batch)\n",
               who.empty() ? "" : " on " + who, lab);
    nn::abort_job_if_parallel(kExitCannotRun);
    return kExitCannotRun;
  } catch (const std::exception& e) {
    const std::string who = nn::rank_label();
    fmt::print(stderr, "error{}: {}\n", who.empty() ? "" : " on " + who, e.what());
    nn::abort_job_if_parallel(kExitCannotRun);
    return kExitCannotRun;
  }
  return kExitChecksHeld;
}

int split_across_ranks(int64_t batch, const std::vector<std::string*>& rank0_outputs, bool& progress) {
  try {
    const nn::Communicator& w = nn::world();
    if (batch % w.size() != 0) {
      if (w.rank() == 0)
        fmt::print(stderr, "--batch: {} does not split across the {} ranks mpirun started; give a batch that {} divides\n",
                   batch, w.size(), w.size());
      return kExitUsage;
    }
    if (w.rank() != 0) {
      for (std::string* path : rank0_outputs) path->clear();
      progress = false;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitCannotRun;
  }
  return 0;
}

void quiet_stdout() {
  std::fflush(stdout);
  if (!std::freopen("/dev/null", "w", stdout)) fail("quiet_stdout", "cannot open /dev/null to silence this rank's report");
}

int run_lab(const std::string& lab, const std::string& json_path, Device device,
            const std::function<void(Report&)>& body) {
  std::string described;
  try {
    described = device_description(device);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitCannotRun;
  }
  return run_lab(lab, json_path, [&](Report& rep) {
    print_wrapped(fmt::format("device: {}\n", described));
    rep.json()["device"] = device_name(device);
    rep.json()["device_summary"] = described;
    body(rep);
  });
}

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) != 0; }

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace hg::lab
