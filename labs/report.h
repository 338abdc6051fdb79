// labs/report.h — how every lab reports: each measured number beside the text's number, a mark
// saying whether they agree at the printed precision, and the same numbers in JSON (--json FILE).
#pragma once
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "handgrad.h"
#include "output.h"
#include "nn/comm.h"

namespace hg::lab {

// A number a text prints from one random run, beside the range [lo, hi] that runs from other seeds
// give for it; `source` says where that range comes from (measured, or the text's own statement).
struct SeedSpread {
  double text, lo, hi;
  const char* source;
};

// The labs' exit statuses, one rule for every lab (docs/labs.md): 0 it ran and every check held;
// 1 a check was not met; 2 the command line is wrong (nothing ran); 3 it could not run here: no
// usable GPU, a file it cannot read or write, not enough memory, the live page's module not built.
enum ExitStatus : int { kExitChecksHeld = 0, kExitCheckNotMet = 1, kExitUsage = 2, kExitCannotRun = 3 };

class Report {
 public:
  explicit Report(std::string lab);
  // Off: the report is kept (json(), compared(), ...) but nothing printed; the live page builds
  // one on every edit and shows it itself.
  void set_printing(bool on) { printing_ = on; }

  void section(const std::string& title);
  void text(const std::string& line);  // free text, printed as is (also kept in JSON "notes")
  // "  name   measured   text 0.330  ✓". With a text value, agreement means equal when both are
  // rounded to `decimals`; the count of disagreements is in mismatches().
  void value(const std::string& key, double measured, std::optional<double> text_value = std::nullopt,
             int decimals = 3);
  // A number the text gives from one random run, beside the spread seeds are known to give
  // [lo, hi] (measured, or the text's own statement; `source` says which): it agrees when the
  // measured value and the text's both lie in the spread ("agrees within seed spread 0.61-0.97
  // (source)"), else "differs by more than seeds do". The text's value, printed to `decimals`
  // places, stands for any number that rounds to it (0.02: 0.015 to 0.025). Counted with the other
  // comparisons.
  void value_within_spread(const std::string& key, double measured, double text_value, double lo, double hi,
                           const std::string& source, int decimals = 2);
  // The same for a number whose spread was measured at one run (the lab's defaults, say): when the
  // run is not that one (`applicable` false), the text's number is printed beside the measured one
  // with `why` they are not compared ("not compared: the spread is of 2,000-step runs"), and neither
  // counted nor called a disagreement.
  void value_within_spread(const std::string& key, double measured, const SeedSpread& s, bool applicable,
                           const std::string& why, int decimals = 2);
  void values(const std::string& key, const std::vector<double>& measured,
              const std::vector<double>& text_values = {}, int decimals = 3);
  // A matrix (or vector) printed as rows; recorded in JSON as nested lists.
  void matrix(const std::string& key, const Tensor& t, int decimals = 3);
  // Several matrices of the same shape side by side under their names ("formula", "tape", ...);
  // recorded in JSON as {name: rows}. 0-d and 1-d tensors print as one row.
  void matrices(const std::string& key, const std::vector<std::string>& names, const std::vector<Tensor>& ts,
                int decimals = 3);
  // A non-numeric fact (a shape, a label) beside the text's; agreement means equal strings.
  void fact(const std::string& key, const std::string& measured, std::optional<std::string> text_value = std::nullopt);
  // A small error that must stay within `bound` ("max |formula - tape|  3.1e-12  <= 1e-08 ok").
  // Counted apart from the comparisons with the text: see tolerance_failures().
  void tolerance(const std::string& key, double measured, double bound);
  // An acceptance check of the lab (what reproducing the text means there): `measured op bound`,
  // op ">=", "<=" or "==" (a NaN meets none). Printed as "  what  measured  op bound  met" (or "NOT
  // MET") and kept in the JSON under "criteria" as {what: {measured, op, bound, met}}; a lab whose
  // exit status follows its checks reads criteria_unmet(). Returns whether it is met.
  bool criterion(const std::string& what, double measured, const std::string& op, double bound);
  // A check this run cannot make (say, it needs a trained model), with the reason: printed and
  // kept in the JSON under "criteria_not_applicable" {what: why}, never counted as met.
  void criterion_not_applicable(const std::string& what, const std::string& why);
  // criterion() when `applicable`, else criterion_not_applicable(what, why): a check only a long
  // enough run (or a trained model) can decide. Returns whether it was made and met.
  bool criterion_when(bool applicable, const std::string& why, const std::string& what, double measured,
                      const std::string& op, double bound);
  int criteria_unmet() const { return criteria_unmet_; }

  int mismatches() const { return mismatches_; }
  int compared() const { return compared_; }
  int tolerance_failures() const { return tolerance_failures_; }
  nlohmann::json& json() { return json_; }
  void write_json(const std::string& path) const;  // throws hg::Error if the file cannot be written
  void summary();  // "N numbers compared with the text, M disagree"

 private:
  std::string lab_;
  nlohmann::json json_;
  std::string section_ = "main";
  int mismatches_ = 0, compared_ = 0;
  int tolerance_checks_ = 0, tolerance_failures_ = 0;
  int criteria_unmet_ = 0;
  bool printing_ = true;
  template <typename... Args>
  void say(fmt::format_string<Args...> format, Args&&... args) const {
    if (printing_) print_wrapped(fmt::format(format, std::forward<Args>(args)...));
  }
};

// "not applicable at 30 steps (needs ≥ 800)": why a check a short run cannot decide is not made.
std::string too_short(int64_t steps, int64_t needs);

bool stdout_is_terminal();

// A path quoted for the shell (single quotes, with embedded ones escaped), for std::system.
std::string shell_quote(const std::string& s);

// Bounds of the labs' step and batch flags: far beyond any sensible run, small enough that no
// buffer sized from them overflows.
constexpr uint64_t kMaxSteps = 10'000'000, kMaxBatch = 1'000'000;

// Flag checks, run on the flag's text before any work, with messages in words.
// A whole number from lo to hi, read exactly (no clamping of a number too large, no sign tricks).
CLI::Validator whole_number_in(uint64_t lo, uint64_t hi);
// A file the lab will write: an existing, writable file, or a new one in an existing, writable folder.
CLI::Validator writable_file();
// A folder the lab will write into: an existing, writable one, or a new one whose parent is.
CLI::Validator writable_folder();
// `--json FILE`, checked writable before the lab runs.
CLI::Option* add_json_option(CLI::App& app, std::string& path);

// Adds `--device cpu|cuda` (default cpu) to a lab's command line; any other value is refused.
CLI::Option* add_device_option(CLI::App& app, Device& device);

// The device a lab is about to run on, as its report's header says it: "cpu", or "cuda (NVIDIA
// H200, sm_90)" from the backend. Throws hg::Error saying why when `device` is cuda and it cannot
// be used: a build without CUDA, or no usable GPU (the backend's reason).
std::string device_description(Device device);

// Runs a lab's body with a fresh Report, prints the summary, writes --json when a path is given.
// The exit status is every lab's one rule (ExitStatus): 1 when an acceptance check (criterion) or an
// agreement bound (tolerance) is not met, else 0. An exception is printed as "error: ..." and gives
// exit status 3 (it could not run). Under mpirun (nn::world() of
// several ranks) only rank 0 prints the report and writes the JSON; an error on any rank is
// printed naming the rank ("error on rank 1 of 2 (mpi): ...") and ends every rank of the job.
int run_lab(const std::string& lab, const std::string& json_path, const std::function<void(Report&)>& body);
// The same for a lab that takes --device: first checks the device (an unusable one is an error,
// exit status 3, before any work), then prints it as the report's first line ("device: ...") and
// records it in the JSON ("device", "device_summary").
int run_lab(const std::string& lab, const std::string& json_path, Device device,
            const std::function<void(Report&)>& body);
// Sends this process's stdout to /dev/null (what a rank other than 0 does with its report).
void quiet_stdout();
// For a lab that trains, before any work: under mpirun (nn::world() of several ranks) refuses a
// training batch the rank count does not divide (rank 0 says so, naming both) and, on every rank
// but 0, empties the given output paths and turns the progress line off, so only rank 0 writes.
// Returns 0 to go on, or the exit status to end with (2: the batch; 3: no communicator).
int split_across_ranks(int64_t batch, const std::vector<std::string*>& rank0_outputs, bool& progress);

}  // namespace hg::lab
