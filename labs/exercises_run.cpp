// labs/exercises_run.cpp — what the reports of exercises 3, 5 and 6 share (their runs are in
// exercises_positions.cpp, exercises_copies.cpp and exercises_held_out.cpp): the CSV files and
// gnuplot pictures they write into --out, and how each says what it took.
#include "exercises_run.h"

#include <fmt/format.h>

#include <filesystem>

#include "kit.h"

namespace hg::lab::exercises {

namespace fs = std::filesystem;

// Draws `script` (gnuplot) into --out, or says why not; prints the PNG's path.
void draw(Report& rep, const ExerciseOptions& o, const std::string& name, const std::string& png, const std::string& script) {
  if (!o.pictures) return;
  if (!gnuplot_available()) {
    rep.text(gnuplot_missing_note());
    return;
  }
  run_gnuplot(o.out, name, "set datafile separator ','\nset terminal pngcairo size 900,560 font ',10'\n" + script,
              "exercises");
  rep.text("  wrote " + (fs::path(o.out) / png).string());
}

// Writes a CSV file into --out, says so, and draws its picture.
void write_csv_and_draw(Report& rep, const ExerciseOptions& o, const std::string& csv, const std::string& content,
                        const std::string& note, const std::string& script_name, const std::string& png,
                        const std::string& script) {
  write_file((fs::path(o.out) / csv).string(), content, "exercises");
  rep.text(fmt::format("  {}/{}{}", o.out, csv, note));
  draw(rep, o, script_name, png, script);
}

void report_time(Report& rep, int n, const Stopwatch& t0, const std::string& detail) {
  const double seconds = t0.seconds();
  rep.text(fmt::format("exercise {} took {}{}", n, duration_str(seconds), detail.empty() ? "" : " (" + detail + ")"));
  rep.json()["timing"][fmt::format("exercise {} seconds", n)] = seconds;
}

}  // namespace hg::lab::exercises
