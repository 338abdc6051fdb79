// labs/induction_plots.h — the induction lab's files: CSV of every curve and map, and PNG pictures
// drawn by gnuplot (Debian's gnuplot-nox) when it is installed.
#pragma once
#include <string>
#include <vector>

#include "induction_lab.h"
#include "kit.h"

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

// Writes `dir`/plots.gp and runs gnuplot on it (the CSV files must already be there); returns the
// PNG paths. Throws hg::Error when gnuplot fails.
std::vector<std::string> draw_pictures(const std::string& dir, const Outputs& o);

}  // namespace hg::lab::induction
