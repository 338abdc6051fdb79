#include "kit.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "report.h"

namespace hg::lab {

namespace fs = std::filesystem;

namespace {

// Help as a learner reads it: "--steps N (0 to 10000000), default 5000". CLI11's own puts the
// option's C++ type before the check's description ("INT:INT in [1, 10000000]=5000").
class LabFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override {
    std::string excludes;
    for (const CLI::Option* other : opt->get_excludes()) excludes += (excludes.empty() ? " (not with " : ", ") + other->get_name();
    if (!excludes.empty()) excludes += ")";
    if (opt->get_type_size() == 0 || opt->get_type_name().empty()) return excludes;  // a flag
    std::string label;
    // The last description of a check says what the argument is (whole_number_in, writable_file,
    // IsMember); the bare type name only when there is none.
    const std::string full = opt->get_type_name();
    const size_t colon = full.rfind(':');
    label = colon == std::string::npos ? full : full.substr(colon + 1);
    if (label == "INT" || label == "UINT") label = "N";
    if (label == "FLOAT") label = "X";
    if (opt->get_expected_min() == 0)  // an optional argument: the default is what the flag alone means
      return fmt::format(" [{}]{}{}", label, opt->get_default_str().empty() ? "" : ", alone: " + opt->get_default_str(), excludes);
    std::string out = label.empty() ? "" : " " + label;
    if (!opt->get_default_str().empty()) out += ", default " + opt->get_default_str();
    if (opt->get_required()) out += " (required)";
    return out + excludes;
  }
};

// What a flag's argument is, in words, from its type name (as LabFormatter shows it).
std::string expected_argument(const CLI::Option& opt) {
  const std::string full = opt.get_type_name();
  const std::string type = full.substr(full.rfind(':') == std::string::npos ? 0 : full.rfind(':') + 1);
  if (type == "INT" || type == "UINT" || type == "N") return "a whole number";
  if (type == "FLOAT" || type == "X") return "a number (such as 2.5, inf or -inf)";
  return type.empty() ? "an argument" : type;
}

// The lab's flags, as --help lists them: "--help, --version, --steps N, ...".
std::string flag_list(const CLI::App& app) {
  std::string out;
  for (const CLI::Option* o : app.get_options()) {
    if (!out.empty()) out += ", ";
    out += o->get_name();
  }
  return out;
}

}  // namespace

int parse_flags(CLI::App& app, int argc, char** argv) {
  const std::string lab = std::filesystem::path(argc > 0 ? argv[0] : "lab").filename().string();
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    const std::string what = e.what();  // "The following arguments were not expected: 1,1 --q"
    fmt::print(stderr, "{}: no flag takes {}\n", lab, what.substr(std::min(what.find(": ") + 2, what.size())));
  } catch (const CLI::ConversionError& e) {
    // CLI11 says "Could not convert: --c = abc": name the flag, the value and what it expects.
    const std::string what = e.what();
    const size_t colon = what.find(": "), eq = what.find(" = ");
    const CLI::Option* opt = colon == std::string::npos || eq == std::string::npos
                                 ? nullptr
                                 : app.get_option_no_throw(what.substr(colon + 2, eq - colon - 2));
    if (opt)
      fmt::print(stderr, "{}: {} takes {}, not '{}'\n", lab, opt->get_name(), expected_argument(*opt), what.substr(eq + 3));
    else
      fmt::print(stderr, "{}: {}\n", lab, what);
  } catch (const CLI::ParseError& e) {  // a failed check (its message says what it wants), a missing flag
    fmt::print(stderr, "{}: {}\n", lab, e.what());
  }
  fmt::print(stderr, "{} takes: {}\n(--help says what each flag does)\n", lab, flag_list(app));
  return kExitUsage;
}

void setup_app(CLI::App& app) {
  app.formatter(std::make_shared<LabFormatter>());
  app.set_version_flag("--version", fmt::format("handgrad {}", hg::version()), "print the library's version and exit");
}

void add_training_flags(CLI::App& app, const TrainingFlags& f, const std::string& what_trains) {
  if (f.steps) {
    CLI::Option* o = app.add_option("--steps", *f.steps, f.steps_help.empty() ? "training steps of " + what_trains : f.steps_help)
                         ->check(whole_number_in(static_cast<uint64_t>(f.min_steps), kMaxSteps));
    if (f.steps_help.empty()) o->capture_default_str();
  }
  if (f.seed)
    app.add_option("--seed", *f.seed, "seed of the generator (initialisation, batches, evaluation)")
        ->capture_default_str()->check(whole_number_in(0, UINT64_MAX));
  // force_callback: the default folder is checked (and made) too, not only one given on the command line.
  if (f.out)
    app.add_option("--out", *f.out, "folder for the CSV files and PNG pictures")
        ->capture_default_str()
        ->check(writable_folder())
        ->force_callback();
  if (f.save) app.add_option("--save", *f.save, "write the trained 2-block model to this safetensors file")->check(writable_file());
  if (f.load)
    app.add_option("--load", *f.load,
                   f.load_help.empty() ? "load the 2-block model from this safetensors file (induction writes one) instead of training it"
                                       : f.load_help)
        ->check(CLI::ExistingFile);
  if (f.no_pictures) app.add_flag("--no-pictures", *f.no_pictures, "write the CSV files but do not run gnuplot");
  if (f.quiet) app.add_flag("--quiet", *f.quiet, "no progress line on stderr");
}

int64_t whole_number_field(const nlohmann::json& j, const char* who, const std::string& what, int64_t lo, int64_t hi) {
  if (!j.is_number_integer()) fail(who, "{} must be a whole number", what);
  const int64_t v = j.get<int64_t>();
  if (v < lo || v > hi) fail(who, "{} is {}; it must be from {} to {}", what, v, lo, hi);
  return v;
}

std::string default_out(const std::string& lab) { return (fs::path("labs_out") / lab).string(); }

std::string row_str(const std::vector<double>& v, int decimals) {
  std::string s;
  for (double x : v) s += fmt::format("{}{:.{}f}", s.empty() ? "" : " ", x, decimals);
  return s;
}

std::string duration_str(double s) {
  const int64_t t = static_cast<int64_t>(s + 0.5);
  return t >= 60 ? fmt::format("{}m{:02}s", t / 60, t % 60) : fmt::format("{}s", t);
}

ProgressLine::ProgressLine(std::string name, bool on)
    : name_(std::move(name)), on_(on), tty_(isatty(STDERR_FILENO) != 0), start_(Clock::now()) {}

void ProgressLine::operator()(int64_t done, int64_t total, double first, double later) {
  first_.push_back(first);
  later_.push_back(later);
  if (!on_) return;
  const auto now = Clock::now();
  const bool last = done == total;
  if (tty_) {
    if (!last && now - shown_ < std::chrono::milliseconds(200)) return;
  } else {
    const int64_t every = std::max<int64_t>(1, total / 10);
    if (!last && done % every != 0) return;
  }
  shown_ = now;
  const double el = std::chrono::duration<double>(now - start_).count();
  const double rate = el > 0 ? static_cast<double>(done) / el : 0.0;
  const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0.0;
  const std::string line = fmt::format("[{}] step {}/{}  first {:.2f}  later {:.2f}  {:.1f} steps/s  {} {}", name_, done,
                                       total, tail(first_), tail(later_), rate, last ? "took" : "ETA",
                                       duration_str(last ? el : eta));
  if (tty_) fmt::print(stderr, "\r{:<100}{}", line, last ? "\n" : "");
  else fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
}

double ProgressLine::tail(const std::vector<double>& v) {
  const size_t n = std::min<size_t>(25, v.size());
  double s = 0;
  for (size_t i = v.size() - n; i < v.size(); ++i) s += v[i];
  return n ? s / static_cast<double>(n) : 0.0;
}

std::function<void(int64_t, int64_t, double, double)> ProgressLine::callback() {
  return [this](int64_t d, int64_t t, double f, double l) { (*this)(d, t, f, l); };
}

void write_matrix_csv(const std::string& path, const Tensor& m) {  // rows of comma-separated values
  const Tensor c = m.detach().to(DType::f64).to(Device::cpu).contiguous();
  const std::vector<double> v = c.to_vector();
  const int64_t R = c.size(0), K = c.size(1);
  std::string s;
  for (int64_t i = 0; i < R; ++i) {
    for (int64_t j = 0; j < K; ++j) s += fmt::format("{}{:.6g}", j ? "," : "", v[static_cast<size_t>(i * K + j)]);
    s += "\n";
  }
  write_file(path, s, "write_matrix_csv");
}

bool gnuplot_available() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

std::string gnuplot_missing_note() { return "  gnuplot is not installed (Debian: apt-get install gnuplot-nox): no pictures drawn"; }

void run_gnuplot(const std::string& dir, const std::string& script_name, const std::string& script,
                 const std::string& lab) {
  write_file((fs::path(dir) / script_name).string(), script, lab);
  const std::string cmd = fmt::format("cd {} && gnuplot {} 2> gnuplot.log", shell_quote(dir), shell_quote(script_name));
  if (std::system(cmd.c_str()) != 0)
    fail(lab, "gnuplot failed on {}/{} (its messages are in {}/gnuplot.log)", dir, script_name, dir);
}

std::string diverging_palette(double max_abs) {
  const double m = std::isfinite(max_abs) && max_abs > 0 ? max_abs : 1.0;
  return fmt::format("set palette defined (-1 '#2166ac', 0 'white', 1 '#b2182b')\nset cbrange [{:.6g}:{:.6g}]\nset colorbox\n", -m, m);
}

uint64_t checked_product(std::initializer_list<uint64_t> factors, const std::string& flag) {
  uint64_t p = 1;
  for (uint64_t f : factors) {
    if (f != 0 && p > std::numeric_limits<uint64_t>::max() / f)
      fail(flag, "the memory this value needs does not fit in 64 bits; give a smaller {}", flag);
    p *= f;
  }
  return p;
}

uint64_t checked_bytes(uint64_t count, uint64_t bytes_each, const std::string& flag) {
  return checked_product({count, bytes_each}, flag);
}

void check_memory(uint64_t bytes, const std::string& flag, const std::string& subject, const std::string& what) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;  // unknown: let the allocation decide
  const uint64_t have = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  if (bytes > have)
    fail(flag, "{} need at least {:.1f} GiB ({}) and this machine has {:.1f} GiB of memory; give a smaller {}",
         subject, static_cast<double>(bytes) / GiB, what, static_cast<double>(have) / GiB, flag);
}

}  // namespace hg::lab
