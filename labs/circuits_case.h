// labs/circuits_case.h — the circuits lab's computations (Section 10.6.1 of "What Attention
// Computes" and its exercises 1 and 4), read from the weights of a TinyCharLM: every head's QK and
// OV circuit and their ranks, the zero-block model's Gram matrix E Eᵀ and what its symmetry and
// positive semi-definiteness forbid, the K-composition matrices of block 2 with block 1 (as the
// exercise writes them, with RoPE's rotation at the offsets the induction head attends to, and with
// the query read through block 1), Elhage et al.'s composition scores, and the copying head of
// exercise 1 built by hand.
//
// Notation (column vectors, as the text): a Linear stores W (out, in) and computes y = x Wᵀ, i.e.
// y = W x for a column x. For head h of a block, with D = d and d_h = D / H,
//   W_q = qkv.weight[h d_h : (h+1) d_h],  W_k = qkv.weight[D + h d_h : …],  W_v = qkv.weight[2D + h d_h : …]
//   (each (d_h, D)),  W_o = proj.weight[:, h d_h : (h+1) d_h]  (D, d_h);
//   W_QK = W_qᵀ W_k,  W_OV = W_o W_v  (both (D, D), rank ≤ d_h),
// and the score of query position i on key position j is h_iᵀ W_qᵀ R(j − i) W_k h_j / √d_h, where
// R(δ) is RoPE's rotation by δ positions (R(0) = I: W_QK is the score at offset 0).
//
// Everything here runs on the host in float64 unless it says otherwise, on copies of the weights;
// the evaluations that run the model (context rates, the partner task) run on the model's device.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "handgrad.h"
#include "induction_lab.h"
#include "linalg.h"

namespace hg::lab::circuits {

// The model the circuits are read from: the induction lab's 2-block model (TinyCharLM, vocab 64,
// d 128, 4 heads, RoPE, no bias), trained as the induction lab trains it (train_repeat, L uniform
// in 16..32) from the same seed, so the same weights, bit for bit, on the CPU.
constexpr int64_t kSteps = induction::kSteps;
constexpr uint64_t kSeed = induction::kSeed;

// ------------------------------------------------------------------ one head's circuits
struct HeadWeights {
  Tensor q, k, v, o;  // W_q, W_k, W_v (d_h, D); W_o (D, d_h); on the host
};
HeadWeights head_weights(const nn::TinyCharLM& model, int64_t block, int64_t head, DType dtype = DType::f64);
Tensor qk_circuit(const HeadWeights& w);                 // W_qᵀ W_k (D, D)
Tensor qk_circuit(const HeadWeights& w, int64_t delta);  // W_qᵀ R(δ) W_k (D, D), δ = j − i (key minus query)
Tensor ov_circuit(const HeadWeights& w);                 // W_o W_v (D, D)

// RoPE's relative rotation R(δ) (d_h, d_h) as ops/positional.h's rope applies it: pairs (2p, 2p+1)
// rotated by the angle δ · base^(−2p/d_h), so that rope(q at i) · rope(k at j) = qᵀ R(j − i) k.
Tensor rope_relative(int64_t d_h, int64_t delta, DType dtype = DType::f64, double base = 10000.0);

// ------------------------------------------------------------------ item 1: shapes and ranks
// Every head's W_QK and W_OV, formed in the weights' own dtype (float32 for the lab's model: the
// text's products), with numpy's rank rule (linalg.h).
struct HeadRanks {
  int64_t block = 0, head = 0;
  Shape qk_shape, ov_shape;
  MatrixRank qk, ov;
};
std::vector<HeadRanks> circuit_ranks(const nn::TinyCharLM& model);

// ------------------------------------------------------------------ item 2: zero blocks
// The zero-block model's logits for every token: its forward on the one sequence 0, 1, …, V−1,
// (V, V), row a = the logits after token a. With no block they are E e_a, so the table is E Eᵀ.
Tensor zero_block_logits(const nn::TinyCharLM& model);

struct GramCheck {
  double asymmetry = 0;        // max |A − Aᵀ|
  double max_abs = 0;          // max |A|
  MatrixRank rank;             // in A's dtype
  std::vector<double> eigenvalues;  // of (A + Aᵀ) / 2, smallest first (float64, dsyev)
  double eig_tol = 0;          // what "≥ 0" allows: |λ_max| · V · eps of A's dtype, A's rounding
  double diagonal_argmax = 0;  // rows whose largest entry is the diagonal
  double min_pair_gap = 0;     // min over a ≠ b of A_aa + A_bb − A_ab − A_ba (= ‖e_a − e_b‖² ≥ 0)
  bool max_on_diagonal = false;  // A's largest entry lies on its diagonal (A_ab ≤ √(A_aa A_bb))
};
GramCheck gram_check(const Tensor& A);

// The partner task: every token a is followed by its partner a XOR 1 (0↔1, 2↔3, …): a bigram
// table a free V × V lookup fits exactly. A zero-block model is trained on it (AdamW, fresh
// batches of uniform tokens each step), then its table A = E Eᵀ is read. For a pair {a, b}:
// A_ab + A_ba = 2 e_a·e_b ≤ ‖e_a‖² + ‖e_b‖² = A_aa + A_bb, so at most one of a→b, b→a can beat
// the self-repeat: accuracy ≤ 1/2; and by convexity the pair's mean loss is ≥ ln 2.
constexpr int64_t partner(int64_t a) { return a ^ 1; }
struct PartnerTask {
  std::vector<double> loss;     // per training step
  Tensor A;                     // (V, V) the trained table (zero_block_logits)
  double population_loss = 0;   // mean over a of −log softmax(A[a])[partner(a)] (every a equally likely)
  double accuracy = 0;          // rows whose argmax is the partner
  int64_t pairs = 0, one_way = 0, both_ways = 0;  // pairs with exactly one / both directions right
  int64_t shown = 0;            // the token a whose A_a,partner(a) − A_aa is largest (for printing)
};
PartnerTask train_partner_task(nn::TinyCharLM& model, int64_t steps, Generator& gen, int64_t batch = 64,
                               int64_t seq = 16, double lr = 1e-2);

// ------------------------------------------------------------------ item 3: composition
// Every head's weights and E in float64 on the host.
struct Circuits {
  Tensor E;                                     // (V, D)
  std::vector<std::vector<HeadWeights>> heads;  // [block][head]
};
Circuits read_circuits(const nn::TinyCharLM& model);

// How much a square matrix (rows: the query's token, columns: the key side's token) favours its
// diagonal: the fraction of rows whose argmax is the diagonal (chance 1/V), and
// z = (mean diagonal − mean off-diagonal) / std off-diagonal (0 when the off-diagonal is constant).
struct DiagonalConcentration {
  double argmax_fraction = 0, z = 0;
};
DiagonalConcentration diagonal_concentration(const Tensor& M);

// Exercise 4's matrix for block-2 head h2 and block-1 head h1, with RoPE's rotation at offset δ:
//   Q W_qᵀ R(δ) W_k W_OV⁽¹ʰ¹⁾ Eᵀ  (V, V),
// Q = E (the exercise) or a given (V, D) query side. h1 = −1 gives the direct path Q W_qᵀ R(δ) W_k Eᵀ.
Tensor k_composition(const Circuits& c, int64_t h2, int64_t h1, int64_t delta, const Tensor& query = {});

// The query side read through block 1: the block-2 input at a position holding token a is e_a
// plus, from each block-1 head h, W_OV⁽¹ʰ⁾ times what h reads; a head that attends to its own
// position with weight s_h adds s_h W_OV⁽¹ʰ⁾ e_a. So Q = E (I + Σ_h s_h W_OV⁽¹ʰ⁾)ᵀ (V, D), given each
// block-1 head's mean attention to its own position (from the attention maps).
Tensor query_through_block1(const Circuits& c, const std::vector<double>& self_attention);

// The induction head's offsets: from query i to key j = i + 1 − L, δ = j − i = 1 − L for L in Lmin..Lmax.
std::vector<int64_t> induction_offsets(int64_t Lmin, int64_t Lmax);

// The concentration of k_composition(c, h2, h1, δ, query), averaged over the offsets δ.
DiagonalConcentration mean_over_offsets(const Circuits& c, int64_t h2, int64_t h1, const std::vector<int64_t>& offsets,
                                        const Tensor& query = {});

// Diagonal concentration of every (block-2 head, block-1 head) pair, four ways:
//   text:        Q = E, δ = 0 (the exercise's matrix as written: W_qᵀ W_k is the score at offset 0);
//   rope:        Q = E, the mean over the induction offsets;
//   block1_text: Q = the query read through block 1, δ = 0;
//   block1_rope: Q = the query read through block 1, the mean over the induction offsets.
// Indexed [h2][h1] with h1 = 0..H−1 the block-1 heads and h1 = H the direct path (no block-1 head).
struct KCompositionTable {
  std::vector<int64_t> offsets;
  std::vector<std::vector<DiagonalConcentration>> text, rope, block1_text, block1_rope;
};
KCompositionTable k_composition_table(const Circuits& c, const std::vector<int64_t>& offsets, const Tensor& query_block1);

// Which block-1 head the query reads: for each block-1 head hq, the diagonal rows of
// k_composition(c, h2, key_head, δ, E W_OV⁽¹ʰq⁾ᵀ) (the query through hq alone, the key through
// key_head), averaged over the offsets and the block-2 heads h2.
std::vector<double> query_head_match(const Circuits& c, int64_t key_head, const std::vector<int64_t>& offsets);

// Elhage et al.'s composition scores of block-2 head h2 with block-1 head h1, ‖X Y‖_F / (‖X‖_F ‖Y‖_F):
//   Q: X = W_QK⁽²⁾ᵀ, Y = W_OV⁽¹⁾ (block 1 writes what block 2's query reads: h_iᵀ W_OVᵀ W_QK h_j);
//   K: X = W_QK⁽²⁾,  Y = W_OV⁽¹⁾ (what block 2's key reads);
//   V: X = W_OV⁽²⁾,  Y = W_OV⁽¹⁾.
double composition_score(const Tensor& X, const Tensor& Y);
struct CompositionScores {
  std::vector<std::vector<double>> q, k, v;  // [h2][h1]
};
CompositionScores composition_scores(const Circuits& c);
// The same scores for random matrices of the same shapes and ranks (W_QK = Aᵀ B and W_OV = C B'
// with iid N(0, 1) factors of the heads' shapes), averaged over `draws` draws of one pair each.
struct CompositionBaseline {
  double q = 0, k = 0, v = 0;
  int64_t draws = 0;
};
CompositionBaseline random_composition_baseline(int64_t d, int64_t d_h, int64_t draws, uint64_t seed);

// ------------------------------------------------------------------ item 4: the copying head by hand
// Exercise 1: TinyCharLM(64, num_blks=1, pos='none') from `seed`, then head 0's query and key maps
// set to the same random (d_h, D) matrix P (iid N(0, 1)) times `scale`, its value map to another
// random matrix W_v (iid N(0, 1)), its output columns to W_vᵀ (so W_OV = W_vᵀ W_v), and the other
// heads' output columns to 0. No training.
std::unique_ptr<nn::TinyCharLM> copying_head_model(double scale, uint64_t seed);

// On token sequences (B, T): head 0's contribution to the logits at every position (the logits
// minus the logits with head 0 ablated) and where its largest entry falls, at positions 1..T−1.
//   with_self:    its top-1 token occurs in the context x_0..x_i (the position attends to itself);
//   without_self: leaving the current token x_i out, the top-1 of the other tokens occurs in x_0..x_{i−1};
//   top1_current: the top-1 is the current token itself.
// The chances are what a uniformly random top-1 would score: the distinct context tokens over V
// (over V − 1 without the current token).
struct ContextRates {
  double with_self = 0, without_self = 0, top1_current = 0;
  double chance_with_self = 0, chance_without_self = 0;
  int64_t positions = 0;
};
ContextRates context_rates(nn::TinyCharLM& model, const Tensor& tokens);

}  // namespace hg::lab::circuits
