#include "report.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

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
  fmt::print("\n== {} ==\n", title);
}

void Report::text(const std::string& line) {
  fmt::print("{}\n", line);
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
    fmt::print("  {:<34} {:>10.{}f}   text {:>8.{}f}  {}\n", key, measured, decimals, *text_value, decimals,
               ok ? "ok" : "DIFFERS");
  } else {
    fmt::print("  {:<34} {:>10.{}f}\n", key, measured, decimals);
  }
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
    fmt::print("  {:<34} ({})   text ({})  {}\n", key, fmt::join(m, ", "), fmt::join(t, ", "), ok ? "ok" : "DIFFERS");
  } else {
    fmt::print("  {:<34} ({})\n", key, fmt::join(m, ", "));
  }
}

void Report::matrix(const std::string& key, const Tensor& t, int decimals) {
  Tensor m = t.detach().to(DType::f64);
  if (m.dim() == 1) m = m.unsqueeze(0);
  if (m.dim() != 2) m = m.reshape({-1, m.size(-1)});
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("  {}\n", key);
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
    fmt::print("    [{}]\n", fmt::join(cells, " "));
  }
  json_["sections"][section_][key] = rows;
}

void Report::write_json(const std::string& path) const {
  std::ofstream f(path);
  if (!f) throw Error(fmt::format("{}: cannot write --json file '{}'", lab_, path));
  f << json_.dump(2) << "\n";
}

void Report::summary() {
  json_["compared"] = compared_;
  json_["mismatches"] = mismatches_;
  fmt::print("\n{} numbers compared with the text: {} agree, {} differ.\n", compared_, compared_ - mismatches_, mismatches_);
}

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) != 0; }

}  // namespace hg::lab
