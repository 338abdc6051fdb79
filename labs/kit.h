// labs/kit.h — what every lab shares and none owns: its command line's help and --version, the
// training labs' common flags, writing a file or failing with its name, a stopwatch, and the CSV
// and gnuplot helpers the labs that draw use. (The report itself, and the exit rule that reads
// its checks, are in report.h.)
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "handgrad.h"
#include "output.h"

namespace hg::lab {

// A live page's request field that must be a whole number from lo to hi: its value, or an
// hg::Error from `who` naming the field ("loss's row is 2; it must be from 0 to 1").
int64_t whole_number_field(const nlohmann::json& j, const char* who, const std::string& what, int64_t lo, int64_t hi);

// Every lab's command line: help that shows each option's argument and default without CLI11's
// type names ("--steps N (0 to 10000000), default 5000"), and --version (the library's version).
void setup_app(CLI::App& app);

// Parses a lab's command line. Returns -1 to go on, or the exit status to end with: 0 after --help
// or --version; 2 (kExitUsage) for a command line it cannot take, said in words on stderr: an
// unknown flag or a stray argument with the list of the flags the lab takes, a value that is not
// what its flag expects with what it expects, a missing required flag.
int parse_flags(CLI::App& app, int argc, char** argv);

// The flags the training labs share, with one help text each: --steps --seed --out --load --save
// --no-pictures --quiet. A lab adds those it takes by name; the values land in the fields given.
struct TrainingFlags {
  int64_t* steps = nullptr;
  uint64_t* seed = nullptr;
  std::string* out = nullptr;
  std::string* load = nullptr;
  std::string* save = nullptr;
  bool* no_pictures = nullptr;
  bool* quiet = nullptr;
  int64_t min_steps = 0;        // the least --steps takes
  std::string steps_help = {};  // replaces "training steps of <what_trains>" (and its default, not shown then)
  std::string load_help = {};   // replaces the --load help (a lab that loads a model for one part only)
};
void add_training_flags(CLI::App& app, const TrainingFlags& f, const std::string& what_trains);

// Where a lab writes its CSV files and pictures unless --out says otherwise: labs_out/<lab>, under
// a folder git ignores.
std::string default_out(const std::string& lab);


// Seconds since construction.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Numbers in a row, space-separated, to `decimals` places: "0.00 0.95 0.02 0.01".
std::string row_str(const std::vector<double>& v, int decimals = 2);

// "42s" or "5m22s": a duration in whole seconds, as the labs print it.
std::string duration_str(double seconds);

// The progress line of a training run on stderr: rewritten in place (\r) on a terminal at most 5
// times a second, otherwise one line per ~10% of the steps. Losses are the means of the last 25
// steps. Off: it only keeps the losses. It must outlive the Progress that callback() returns.
class ProgressLine {
 public:
  ProgressLine(std::string name, bool on);
  void operator()(int64_t done, int64_t total, double first, double later);
  // For a training loop (train_repeat): calls this line.
  std::function<void(int64_t, int64_t, double, double)> callback();

 private:
  using Clock = std::chrono::steady_clock;
  static double tail(const std::vector<double>& v);
  std::string name_;
  bool on_, tty_;
  Clock::time_point start_, shown_{};
  std::vector<double> first_, later_;
};


// A matrix (2-d, any dtype or device) as rows of comma-separated values, written checked.
void write_matrix_csv(const std::string& path, const Tensor& m);
// True when a gnuplot is on PATH.
bool gnuplot_available();
// What a lab prints when it is not: one line, the same in every lab.
std::string gnuplot_missing_note();
// gnuplot run on `script`, written to `dir`/`script_name`, inside `dir` (its messages go to
// `dir`/gnuplot.log; an hg::Error naming `lab` when it fails).
void run_gnuplot(const std::string& dir, const std::string& script_name, const std::string& script,
                 const std::string& lab);
// gnuplot lines for a heat map of a signed matrix: a diverging palette (blue, white, red) with
// white at 0 and a colour bar, symmetric about 0 (cbrange [-m, m], m the largest |entry|).
std::string diverging_palette(double max_abs);

// Bytes of `count` elements of `bytes_each`, or an hg::Error naming `flag` when the product
// overflows; and the check that an allocation of that size is possible before it is tried.
uint64_t checked_bytes(uint64_t count, uint64_t bytes_each, const std::string& flag);
uint64_t checked_product(std::initializer_list<uint64_t> factors, const std::string& flag);
// Throws an hg::Error naming `flag`, the bytes needed (in GiB) and the memory this machine has,
// when `bytes` exceed it: "--eval-batch: 1000000 sequences (`subject`) need at least 236.5 GiB
// (`what`) and this machine has 23.4 GiB of memory; give a smaller --eval-batch".
void check_memory(uint64_t bytes, const std::string& flag, const std::string& subject, const std::string& what);

}  // namespace hg::lab
