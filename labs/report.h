// labs/report.h — how every lab reports: each measured number beside the text's number, a mark
// saying whether they agree at the printed precision, and the same numbers in JSON (--json FILE).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "handgrad.h"

namespace hg::lab {

class Report {
 public:
  explicit Report(std::string lab);

  void section(const std::string& title);
  void text(const std::string& line);  // free text, printed as is (also kept in JSON "notes")
  // "  name   measured   text 0.330  ✓". With a text value, agreement means equal when both are
  // rounded to `decimals`; the count of disagreements is in mismatches().
  void value(const std::string& key, double measured, std::optional<double> text_value = std::nullopt,
             int decimals = 3);
  void values(const std::string& key, const std::vector<double>& measured,
              const std::vector<double>& text_values = {}, int decimals = 3);
  // A matrix (or vector) printed as rows; recorded in JSON as nested lists.
  void matrix(const std::string& key, const Tensor& t, int decimals = 3);

  int mismatches() const { return mismatches_; }
  int compared() const { return compared_; }
  nlohmann::json& json() { return json_; }
  void write_json(const std::string& path) const;  // throws hg::Error if the file cannot be written
  void summary();  // "N numbers compared with the text, M disagree"

 private:
  std::string lab_;
  nlohmann::json json_;
  std::string section_ = "main";
  int mismatches_ = 0, compared_ = 0;
};

bool stdout_is_terminal();

}  // namespace hg::lab
