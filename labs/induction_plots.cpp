// labs/induction_plots.cpp — CSV files and gnuplot pictures for the induction lab, and the matrix
// writer and gnuplot runner the circuits lab draws with too.
#include "induction_plots.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "report.h"

namespace hg::lab {

namespace fs = std::filesystem;

namespace {

std::ofstream open_for_writing(const std::string& path, const std::string& lab) {
  std::ofstream f(path);
  if (!f) fail(lab, "cannot write '{}' (is --out a writable folder?)", path);
  return f;
}

}  // namespace

void write_matrix_csv(const std::string& path, const Tensor& m) {  // rows of comma-separated values
  std::ofstream f = open_for_writing(path, "write_matrix_csv");
  const Tensor c = m.detach().to(DType::f64).to(Device::cpu).contiguous();
  const std::vector<double> v = c.to_vector();
  const int64_t R = c.size(0), K = c.size(1);
  for (int64_t i = 0; i < R; ++i) {
    for (int64_t j = 0; j < K; ++j) f << (j ? "," : "") << fmt::format("{:.6g}", v[static_cast<size_t>(i * K + j)]);
    f << "\n";
  }
}

void run_gnuplot(const std::string& dir, const std::string& script_name, const std::string& script,
                 const std::string& lab) {
  {
    std::ofstream f = open_for_writing((fs::path(dir) / script_name).string(), lab);
    f << script;
  }
  const std::string cmd = fmt::format("cd {} && gnuplot {} 2> gnuplot.log", shell_quote(dir), shell_quote(script_name));
  if (std::system(cmd.c_str()) != 0)
    fail(lab, "gnuplot failed on {}/{} (its messages are in {}/gnuplot.log)", dir, script_name, dir);
}

}  // namespace hg::lab

namespace hg::lab::induction {

namespace fs = std::filesystem;

namespace {

std::ofstream open_out(const std::string& path) {
  std::ofstream f(path);
  if (!f) fail("induction", "cannot write '{}' (is --out a writable folder?)", path);
  return f;
}

// The shortest text that reads back as the same double, so runs can be compared bit for bit.
std::string at(const std::vector<double>& v, size_t i) { return i < v.size() ? fmt::format("{}", v[i]) : ""; }

}  // namespace

std::vector<std::string> write_csv(const std::string& dir, const Outputs& o) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("induction", "cannot create the output folder '{}': {}", dir, ec.message());
  std::vector<std::string> files;
  auto path = [&](const std::string& name) {
    files.push_back((fs::path(dir) / name).string());
    return files.back();
  };

  {  // per-step losses of the 2-vs-1-block runs
    std::ofstream f = open_out(path("curves.csv"));
    f << "step,first_two_blocks,later_two_blocks,first_one_block,later_one_block\n";
    const size_t n = std::max(o.two.later.size(), o.one.later.size());
    for (size_t i = 0; i < n; ++i)
      f << i + 1 << "," << at(o.two.first, i) << "," << at(o.two.later, i) << "," << at(o.one.first, i) << ","
        << at(o.one.later, i) << "\n";
  }
  {  // the text's plot: means of 25-step chunks, x = 0, 25, 50, ...
    std::ofstream f = open_out(path("curves_smoothed.csv"));
    f << "step,later_two_blocks,later_one_block,first_two_blocks\n";
    const auto lt = chunk_means(o.two.later), lo = chunk_means(o.one.later), ft = chunk_means(o.two.first);
    for (size_t i = 0; i < std::max(lt.size(), lo.size()); ++i)
      f << i * 25 << "," << at(lt, i) << "," << at(lo, i) << "," << at(ft, i) << "\n";
  }
  if (!o.shortcut.later.empty()) {
    std::ofstream f = open_out(path("shortcut_curve.csv"));
    f << "step,first,second\n";
    for (size_t i = 0; i < o.shortcut.later.size(); ++i)
      f << i + 1 << "," << at(o.shortcut.first, i) << "," << at(o.shortcut.later, i) << "\n";
  }
  if (!o.acc_per_position.empty()) {
    std::ofstream f = open_out(path("accuracy_per_position.csv"));
    f << "target_position,accuracy\n";
    for (size_t i = 0; i < o.acc_per_position.size(); ++i) f << i + 1 << "," << at(o.acc_per_position, i) << "\n";
  }
  if (!o.scores.prev.empty()) {
    std::ofstream f = open_out(path("head_scores.csv"));
    f << "block,head,previous_token,induction_target\n";
    for (size_t b = 0; b < o.scores.prev.size(); ++b)
      for (size_t h = 0; h < o.scores.prev[b].size(); ++h)
        f << b + 1 << "," << h << "," << at(o.scores.prev[b], h) << "," << at(o.scores.induction[b], h) << "\n";
  }
  if (o.C.defined()) write_matrix_csv(path("ov_matrix.csv"), o.C);
  for (size_t b = 0; b < o.maps.size(); ++b)
    for (int64_t h = 0; h < o.maps[b].size(0); ++h)
      write_matrix_csv(path(fmt::format("attention_block{}_head{}.csv", b + 1, h)), o.maps[b].select(0, h));
  return files;
}

bool gnuplot_available() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

std::vector<std::string> draw_pictures(const std::string& dir, const Outputs& o) {
  std::vector<std::string> pngs;
  std::string gp = "set datafile separator ','\nset terminal pngcairo size 900,560 font ',10'\n";
  auto png = [&](const std::string& name) {
    pngs.push_back((fs::path(dir) / name).string());
    return name;
  };
  if (!o.two.later.empty() || !o.one.later.empty()) {
    gp += fmt::format(
        "set output '{}'\nset title 'later-copy and first-copy loss (means of 25-step chunks)'\n"
        "set xlabel 'step'\nset ylabel 'loss (nats)'\nset key top right\nset grid\n"
        "plot 'curves_smoothed.csv' every ::1 using 1:2 with lines lw 2 title 'later copies, 2 blocks', "
        "'' every ::1 using 1:3 with lines lw 2 title 'later copies, 1 block', "
        "'' every ::1 using 1:4 with lines lw 2 dt 2 title 'first copy, 2 blocks'\nunset title\nunset grid\n",
        png("loss_curves.png"));
  }
  if (!o.acc_per_position.empty()) {
    gp += fmt::format(
        "set output '{}'\nset title 'accuracy per target position, period-24 patterns'\nset xlabel 'target position'\n"
        "set ylabel 'accuracy'\nset yrange [0:1.05]\nset xrange [1:{}]\nset grid\n"
        "plot 'accuracy_per_position.csv' every ::1 using 1:2 with linespoints pt 7 ps 0.6 notitle\n"
        "unset title\nunset grid\nset autoscale\n",
        png("accuracy_per_position.png"), o.acc_per_position.size());
  }
  if (o.C.defined()) {
    gp += fmt::format(
        "set output '{}'\nset terminal pngcairo size 640,600 font ',10'\nset title 'C = E W_{{OV}}^T E^T, block 2 heads summed'\n"
        "set xlabel 'logit boosted'\nset ylabel 'token attended to'\nset palette defined (0 'white', 1 '#08306b')\n"
        "set xrange [-0.5:{}]\nset yrange [{}:-0.5]\nset size ratio -1\n"
        "plot 'ov_matrix.csv' matrix with image notitle\nunset title\nset size noratio\nset autoscale\n",
        png("ov_matrix.png"), o.C.size(1) - 0.5, o.C.size(0) - 0.5);
  }
  if (!o.maps.empty()) {
    const int64_t H = o.maps[0].size(0), rows = static_cast<int64_t>(o.maps.size());
    gp += fmt::format("set output '{}'\nset terminal pngcairo size {},{} font ',9'\n", png("attention_maps.png"),
                      260 * H + 40, 260 * rows + 60);
    const double edge = static_cast<double>(o.maps[0].size(-1)) - 0.5;
    gp += fmt::format("set palette defined (0 'white', 1 '#08306b')\nunset colorbox\nset cbrange [0:1]\nset size ratio -1\n"
                      "set xrange [-0.5:{}]\nset yrange [{}:-0.5]\nunset xlabel\nunset ylabel\n", edge, edge);
    gp += fmt::format("set multiplot layout {},{} title 'attention weights of every head, one period-24 sequence "
                      "(rows: blocks; x: key position, y: query position)'\n", rows, H);
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t h = 0; h < H; ++h)
        gp += fmt::format("set title 'block {} head {}'\nplot 'attention_block{}_head{}.csv' matrix with image notitle\n",
                          b + 1, h, b + 1, h);
    gp += "unset multiplot\n";
  }
  run_gnuplot(dir, "plots.gp", gp, "induction");
  return pngs;
}

}  // namespace hg::lab::induction
