// tests/mpi/dp_check.cpp — data-parallel training held to one-process training. Run under
// `mpirun -np N dp_check`: a small TinyCharLM (2 blocks, RoPE) trains --steps steps through the
// labs' own loop (train_repeat) on N ranks with a global batch of --batch, in float64 and float32,
// and rank 0 trains the same model alone on the whole batch. The two loss curves and the final
// parameters must agree (float64 to 1e-12, float32 to 1e-5, relative), every rank must hold the
// same bits, and a second data-parallel run must repeat the first bit for bit.
//
// --fail-rank R --fail-how throw|kill --fail-step S make rank R fail after step S (an hg::Error, or
// SIGKILL), so a test can check that the whole job ends, non-zero, instead of hanging.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "induction_lab.h"
#include "report.h"

using namespace hg;
using namespace hg::lab;

namespace {

struct Options {
  int64_t steps = 20, batch = 16;
  uint64_t seed = 3;
  int fail_rank = -1;
  int64_t fail_step = 5;
  std::string fail_how = "throw";
};

struct Run {
  std::vector<double> loss;
  std::vector<Tensor> params;  // after training
  std::vector<Tensor> moved;   // after training minus before: what the steps did
};

Run train(const Options& o, DType dtype, nn::Communicator& comm, const induction::Progress& progress = {}) {
  const nn::TinyCharLMConfig cfg{.vocab = 16, .d = 32, .heads = 2, .blocks = 2, .pos = "rope", .dtype = dtype};
  Generator gen(o.seed);
  nn::TinyCharLM model(cfg, gen);
  const induction::TrainSetup s{.steps = o.steps, .Lmin = 4, .Lmax = 8, .batch = o.batch, .seq = 24, .vocab = 16,
                                .comm = &comm};
  std::vector<Tensor> start;
  for (const Tensor& p : model.parameters()) start.push_back(p.detach().clone());
  const induction::History h = induction::train_repeat(model, s, gen, progress);
  Run r{h.loss, {}, {}};
  for (size_t i = 0; i < start.size(); ++i) {
    r.params.push_back(model.parameters()[i].detach().clone());
    r.moved.push_back(sub(r.params.back(), start[i]));
  }
  return r;
}

// max |a − b| / max |b| per tensor, the worst over the tensors (0 when equal); the curves' the same
// element by element.
double tensors_rel(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<double> x = a[i].to_vector(), y = b[i].to_vector();
    double diff = 0, scale = 0;
    for (size_t k = 0; k < x.size(); ++k) {
      diff = std::max(diff, std::abs(x[k] - y[k]));
      scale = std::max(scale, std::abs(y[k]));
    }
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}
double curve_rel(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a[k] - b[k]) / std::abs(b[k]));
  return worst;
}
bool same_bits(const Run& a, const Run& b) {
  if (a.loss != b.loss) return false;
  for (size_t i = 0; i < a.params.size(); ++i)
    if (a.params[i].to_vector() != b.params[i].to_vector()) return false;
  return true;
}
// How many ranks hold parameters that differ from rank 0's in any bit.
int ranks_differing(nn::Communicator& comm, const Run& r) {
  double differ = 0;
  for (const Tensor& p : r.params) {
    const Tensor root = p.clone();
    comm.broadcast(root, 0);
    if (root.to_vector() != p.to_vector()) differ = 1;
  }
  const Tensor n = tensor({differ}, {1}, DType::f64);
  comm.all_reduce(n, nn::Reduce::sum);
  return static_cast<int>(n.item());
}

bool check(Report& rep, const std::string& what, double measured, const std::string& op, double bound) {
  const bool met = op == "<=" ? measured <= bound : measured >= bound;
  fmt::print("  {:<58} {:>10.3g}  {} {:<7g} {}\n", what, measured, op, bound, met ? "met" : "NOT MET");
  rep.json()["criteria"][what] = {{"measured", measured}, {"op", op}, {"bound", bound}, {"met", met}};
  return met;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Data-parallel TinyCharLM training (run under mpirun -np N) against one process on the whole batch."};
  Options o;
  std::string json;
  app.add_option("--steps", o.steps, "training steps")->capture_default_str()->check(whole_number_in(1, 100000));
  app.add_option("--batch", o.batch, "global batch (the rank count must divide it)")
      ->capture_default_str()->check(whole_number_in(1, 100000));
  app.add_option("--seed", o.seed, "seed")->capture_default_str()->check(whole_number_in(0, UINT64_MAX));
  app.add_option("--fail-rank", o.fail_rank, "this rank fails (a test of the job's end)")->check(CLI::Range(0, 1 << 20));
  app.add_option("--fail-step", o.fail_step, "after this step")->capture_default_str()->check(whole_number_in(1, 100000));
  app.add_option("--fail-how", o.fail_how, "throw (an hg::Error) or kill (SIGKILL)")
      ->capture_default_str()->check(CLI::IsMember({"throw", "kill"}));
  add_json_option(app, json);
  CLI11_PARSE(app, argc, argv);

  bool ok = true;
  const int rc = run_lab("dp_check", json, [&](Report& rep) {
    nn::Communicator& w = nn::world();
    rep.section(fmt::format("{} rank(s) ({}) x batch {} against 1 process x batch {}, {} steps", w.size(), w.backend(),
                            o.batch / w.size(), o.batch, o.steps));
    rep.json()["ranks"] = w.size();
    const induction::Progress fail_here = [&](int64_t done, int64_t, double, double) {
      if (w.rank() != o.fail_rank || done != o.fail_step) return;
      if (o.fail_how == "kill") raise(SIGKILL);
      fail("dp_check", "the failure asked for by --fail-rank {} at step {}", o.fail_rank, done);
    };
    for (const DType dtype : {DType::f64, DType::f32}) {
      const double tol = dtype == DType::f64 ? 1e-12 : 1e-5;
      const Run dp = train(o, dtype, w, fail_here);
      const Run again = train(o, dtype, w);
      const int differing = ranks_differing(w, dp);
      double loss_rel = 0, param_rel = 0, moved_rel = 0;
      if (w.rank() == 0) {
        const auto single = nn::make_single_communicator();
        const Run one = train(o, dtype, *single);
        loss_rel = curve_rel(dp.loss, one.loss);
        param_rel = tensors_rel(dp.params, one.params);
        moved_rel = tensors_rel(dp.moved, one.moved);
        fmt::print("  step  {:>22}  {:>22}\n", "data-parallel loss", "one-process loss");
        for (size_t k = 0; k < dp.loss.size(); k += std::max<size_t>(1, dp.loss.size() / 5))
          fmt::print("  {:>4}  {:>22.17g}  {:>22.17g}\n", k + 1, dp.loss[k], one.loss[k]);
      }
      const std::string d = dtype_name(dtype);
      ok &= check(rep, d + ": loss curve, max relative difference", loss_rel, "<=", tol);
      ok &= check(rep, d + ": parameters after training, max relative difference", param_rel, "<=", tol);
      // Stricter than the parameters themselves (the start cancels out), so float32 gets 1e-4: AdamW
      // divides each gradient by its running RMS, and a gradient element near zero, whose rounding
      // differs most in relative terms, still moves its parameter by up to lr.
      ok &= check(rep, d + ": what training moved them, max relative difference", moved_rel, "<=",
                  dtype == DType::f64 ? 1e-12 : 1e-4);
      ok &= check(rep, d + ": ranks whose parameters differ from rank 0's", differing, "<=", 0);
      ok &= check(rep, d + ": a second run repeats the first bit for bit (1: yes)", same_bits(dp, again) ? 1 : 0, ">=", 1);
    }
  });
  return rc != 0 ? rc : ok ? 0 : 1;
}
