// labs/induction_plots.cpp — CSV files and gnuplot pictures for the induction lab.
#include "induction_plots.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "kit.h"
#include "report.h"

namespace hg::lab::induction {

namespace fs = std::filesystem;

namespace {

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
    std::ostringstream f;
    const std::string file = path("curves.csv");
    f << "step,first_two_blocks,later_two_blocks,first_one_block,later_one_block\n";
    const size_t n = std::max(o.two.later.size(), o.one.later.size());
    for (size_t i = 0; i < n; ++i)
      f << i + 1 << "," << at(o.two.first, i) << "," << at(o.two.later, i) << "," << at(o.one.first, i) << ","
        << at(o.one.later, i) << "\n";
    write_file(file, f.str(), "induction");
  }
  {  // the text's plot: means of 25-step chunks, x = 0, 25, 50, ...
    std::ostringstream f;
    const std::string file = path("curves_smoothed.csv");
    f << "step,later_two_blocks,later_one_block,first_two_blocks\n";
    const auto lt = chunk_means(o.two.later), lo = chunk_means(o.one.later), ft = chunk_means(o.two.first);
    for (size_t i = 0; i < std::max(lt.size(), lo.size()); ++i)
      f << i * 25 << "," << at(lt, i) << "," << at(lo, i) << "," << at(ft, i) << "\n";
    write_file(file, f.str(), "induction");
  }
  if (!o.shortcut.later.empty()) {
    std::ostringstream f;
    const std::string file = path("shortcut_curve.csv");
    f << "step,first,second\n";
    for (size_t i = 0; i < o.shortcut.later.size(); ++i)
      f << i + 1 << "," << at(o.shortcut.first, i) << "," << at(o.shortcut.later, i) << "\n";
    write_file(file, f.str(), "induction");
  }
  if (!o.acc_per_position.empty()) {
    std::ostringstream f;
    const std::string file = path("accuracy_per_position.csv");
    f << "target_position,accuracy\n";
    for (size_t i = 0; i < o.acc_per_position.size(); ++i) f << i + 1 << "," << at(o.acc_per_position, i) << "\n";
    write_file(file, f.str(), "induction");
  }
  if (!o.scores.prev.empty()) {
    std::ostringstream f;
    const std::string file = path("head_scores.csv");
    f << "block,head,previous_token,induction_target\n";
    for (size_t b = 0; b < o.scores.prev.size(); ++b)
      for (size_t h = 0; h < o.scores.prev[b].size(); ++h)
        f << b + 1 << "," << h << "," << at(o.scores.prev[b], h) << "," << at(o.scores.induction[b], h) << "\n";
    write_file(file, f.str(), "induction");
  }
  if (o.C.defined()) write_matrix_csv(path("ov_matrix.csv"), o.C);
  for (size_t b = 0; b < o.maps.size(); ++b)
    for (int64_t h = 0; h < o.maps[b].size(0); ++h)
      write_matrix_csv(path(fmt::format("attention_block{}_head{}.csv", b + 1, h)), o.maps[b].select(0, h));
  return files;
}

std::vector<std::string> draw_pictures(const std::string& dir, const Outputs& o) {
  std::vector<std::string> pngs;
  std::string gp = "set datafile separator ','\nset terminal pngcairo size 900,560 font ',10'\n";
  auto png = [&](const std::string& name) {
    pngs.push_back((fs::path(dir) / name).string());
    return name;
  };
  if (!o.two.later.empty() || !o.one.later.empty()) {
    // The text's plot is of 25-step means; a run too short for two of them plots every step
    // (points joined, so even one step draws something).
    const size_t steps = std::max(o.two.later.size(), o.one.later.size());
    const bool smoothed = steps >= 50;
    const std::string file = smoothed ? "curves_smoothed.csv" : "curves.csv";
    const int later2 = smoothed ? 2 : 3, later1 = smoothed ? 3 : 5, first2 = smoothed ? 4 : 2;
    std::string series;
    auto add = [&](bool has, int col, const std::string& style, const std::string& title) {
      if (!has) return;
      series += fmt::format("{}'{}' every ::1 using 1:{} with linespoints {} title '{}'", series.empty() ? "" : ", ", file,
                            col, style, title);
    };
    add(!o.two.later.empty(), later2, "lw 2 pt 7 ps 0.4", "later copies, 2 blocks");
    add(!o.one.later.empty(), later1, "lw 2 pt 7 ps 0.4", "later copies, 1 block");
    add(!o.two.first.empty(), first2, "lw 2 dt 2 pt 6 ps 0.4", "first copy, 2 blocks");
    gp += fmt::format(
        "set output '{}'\nset title 'later-copy and first-copy loss ({})'\n"
        "set xlabel 'step'\nset ylabel 'loss (nats)'\nset key top right\nset grid\nplot {}\nunset title\nunset grid\n",
        png("loss_curves.png"),
        smoothed ? std::string("means of 25-step chunks") : fmt::format("every step: {} step{} too few for 25-step means", steps, steps == 1 ? " is" : "s are"),
        series);
  }
  if (!o.acc_per_position.empty()) {
    gp += fmt::format(
        "set output '{}'\nset title 'accuracy per target position, period-24 patterns'\nset xlabel 'target position'\n"
        "set ylabel 'accuracy'\nset yrange [0:1.05]\nset xrange [1:{}]\nset grid\n"
        "plot 'accuracy_per_position.csv' every ::1 using 1:2 with linespoints pt 7 ps 0.6 notitle\n"
        "unset title\nunset grid\nset autoscale\n",
        png("accuracy_per_position.png"), o.acc_per_position.size());
  }
  if (o.C.defined()) {  // signed: a diverging map, white at 0
    double max_abs = 0;
    for (double v : o.C.detach().to(DType::f64).to(Device::cpu).contiguous().to_vector()) max_abs = std::max(max_abs, std::abs(v));
    gp += fmt::format(
        "set output '{}'\nset terminal pngcairo size 700,600 font ',10'\nset title 'C = E W_{{OV}}^T E^T, block 2 heads summed "
        "(red: boosted, blue: suppressed)'\nset xlabel 'logit boosted'\nset ylabel 'token attended to'\n{}"
        "set xrange [-0.5:{}]\nset yrange [{}:-0.5]\nset size ratio -1\n"
        "plot 'ov_matrix.csv' matrix with image notitle\nunset title\nset size noratio\nset autoscale\nset autoscale cb\n",
        png("ov_matrix.png"), diverging_palette(max_abs), o.C.size(1) - 0.5, o.C.size(0) - 0.5);
  }
  if (!o.maps.empty()) {  // weights in [0, 1], a colour bar on each; the masked (later) keys grey
    const int64_t H = o.maps[0].size(0), rows = static_cast<int64_t>(o.maps.size());
    gp += fmt::format("set output '{}'\nset terminal pngcairo size {},{} font ',9'\n", png("attention_maps.png"),
                      330 * H + 40, 290 * rows + 70);
    const double edge = static_cast<double>(o.maps[0].size(-1)) - 0.5;
    gp += fmt::format("set palette defined (0 'white', 1 '#08306b')\nset colorbox\nset cbrange [0:1]\nset cbtics 0.5\n"
                      "set size ratio -1\nset xrange [-0.5:{}]\nset yrange [{}:-0.5]\nunset xlabel\nunset ylabel\n"
                      "set object 1 rectangle from graph 0,0 to graph 1,1 behind fillcolor rgb '#b0b0b0' fillstyle solid noborder\n",
                      edge, edge);
    gp += fmt::format("set multiplot layout {},{} title 'attention weights of every head, one period-24 sequence "
                      "(rows: blocks; x: key position, y: query position; grey: masked, a later key)'\n", rows, H);
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t h = 0; h < H; ++h)
        gp += fmt::format("set title 'block {} head {}'\nplot 'attention_block{}_head{}.csv' matrix using 1:2:($1 > $2 ? NaN : $3) "
                          "with image notitle\n", b + 1, h, b + 1, h);
    gp += "unset multiplot\nunset object 1\n";
  }
  run_gnuplot(dir, "plots.gp", gp, "induction");
  return pngs;
}

}  // namespace hg::lab::induction
