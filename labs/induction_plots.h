// labs/induction_plots.h — the induction lab's files: CSV of every curve and map, and PNG pictures
// drawn by gnuplot (Debian's gnuplot-nox) when it is installed.
#pragma once
#include <string>
#include <vector>

#include "induction_lab.h"

namespace hg::lab::induction {

struct Outputs {
  History two, one, shortcut;         // training curves (empty when not trained)
  std::vector<Tensor> maps;           // per block, (H, T, T): one period-24 sequence
  Tensor C;                           // the OV copying matrix (V, V), or undefined
  std::vector<double> acc_per_position;
  HeadScores scores;
};

// Writes the CSV files into `dir` (created if missing); returns their paths.
std::vector<std::string> write_csv(const std::string& dir, const Outputs& o);

// True when a gnuplot that can write PNG is on PATH.
bool gnuplot_available();

// Writes `dir`/plots.gp and runs gnuplot on it (the CSV files must already be there); returns the
// PNG paths. Throws hg::Error when gnuplot fails.
std::vector<std::string> draw_pictures(const std::string& dir, const Outputs& o);

// Writes `script` to `dir`/`script_name` and runs gnuplot on it in `dir` (its messages go to
// `dir`/gnuplot.log). Throws hg::Error when gnuplot fails.
void run_gnuplot(const std::string& dir, const std::string& script_name, const std::string& script);

}  // namespace hg::lab::induction
