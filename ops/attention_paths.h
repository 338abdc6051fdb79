// ops/attention_paths.h — what the files of scaled dot-product attention share: the checked
// problem, the plan (which kernels a call runs), the forward's and backward's buffers, and the
// kernels' entries.
//
//   ops/attention.cpp           attention(): validate, plan, run, record — the op and its node
//   ops/attention_problem.cpp   the inputs checked and expanded (prepare); the plan (make_plan)
//   ops/attention_formulas.cpp  the formulas op by op (every buffer of attention_trace), and with
//                               recorded ops: the create_graph backward and the tangent
//   ops/attention_cpu.h         the mask rule, stated once for the CPU, and the per-slice gemms
//   ops/attention_cpu.cpp       the fused per-slice forward and backward (the CPU's materialized path)
//   ops/attention_tiled.cpp     the tiled path (FlashAttention-2) on the CPU; its tangent in
//                               ops/attention_tiled_tangent.cpp
//   ops/attention_qkv.cpp       attention_qkv: qkv_heads and attention as one op (RoPE inside the kernels)
//   ops/attention_trace.cpp     every intermediate, for labs and tests
//   cpu/row_rules.h             the softmax row and the row rule every CPU path calls
//   cuda/attention_mask.cuh     the mask rule for the GPU (cuda/attention*.cu, cuda/rows.cu)
// Internal to ops/: not installed as an API.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/tensor.h"
#include "ops/attention_options.h"

namespace hg::attention_detail {

// The inputs, checked, detached and expanded (stride-0 views, no copies) to one batch shape:
// that of Q, K, V and the mask broadcast together.
struct Problem {
  Tensor q, k, v;  // (batch..., Tq, dk), (batch..., Tk, dk), (batch..., Tk, dv)
  Tensor mask;     // undefined, or b8 / float broadcastable to (batch..., Tq, Tk)
  Shape batch;
  int64_t Tq = 0, Tk = 0, dk = 0, dv = 0;
  double scale = 1.0;
  bool causal = false;
  bool merged_output = false;  // AttentionOptions::merged_output
};

Shape with_last2(Shape s, int64_t a, int64_t b);

// Checks the inputs (an Error naming `op`, the shapes and the fix) and expands them.
Problem prepare(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o);

struct Forward {
  Tensor S, P, O;
};

struct Backward {
  Tensor dP, D, dS, dQ, dK, dV;  // dQ, dK, dV still at the expanded batch shape
  Tensor dMask;  // a live additive mask's gradient at its own shape, where a path sums dS itself
};

// What a backward is asked for: the gradients of Q, K, V. A live additive mask (Plan::live_mask)
// asks for dS in full (batch..., Tq, Tk) besides: dMask = dS summed to the mask's shape.
struct Needs {
  bool q = false, k = false, v = false;
};

// ---------------------------------------------------------------- the plan (attention_problem.cpp)

// The kernels a call runs, forward and backward:
//   ops    the materialized path op by op (attention_forward, attention_backward): on CUDA tensors
//          (cuBLAS and cuda/rows.cu), for an empty problem, or with sizes past the BLAS integer
//   fused  the materialized path's fused per-slice CPU kernels (fused_forward, fused_backward)
//   tiled  FlashAttention-2 (tiled_forward, tiled_backward; cuda/attention_tiled_*.cu on CUDA)
// The choice among them: the path asked for (automatic: the one chosen for the problem's shape and
// device), then the problem's device and sizes.
enum class Kernels { ops, fused, tiled };

// Which code one call runs and what its node needs, decided once from the call's arguments.
struct Plan {
  Kernels kernels = Kernels::ops;
  Needs need;               // the gradients of Q, K, V its backward computes
  bool live_mask = false;   // the additive mask requires grad: its gradient is dS summed to its shape
  bool mask_input = false;  // the mask moves (a gradient or a tangent), so it is one of the node's inputs
  // The tiled forward computes Ȯ in its own pass (O(T) memory): the tiled kernels, an input with a
  // tangent, and nothing asking for the tangent's own derivative; else composed_tangent records Ȯ.
  bool tangent_in_tiles = false;
  // attention_qkv runs as one op over qkv (RoPE read inside the fused kernels, ops/attention_qkv.cpp):
  // the fused kernels and no mask. Elsewhere it is the composition, qkv_heads then attention.
  bool qkv_in_one_op = false;
};
// q, k, v: the tensors the node's gradients are for (attention_qkv: qkv, three times).
Plan make_plan(const Problem& p, AttentionPath asked, const Tensor& q, const Tensor& k, const Tensor& v,
               const Tensor& mask);

// ---------------------------------------------------------------- the CPU kernels (attention_cpu.cpp)

// S (contiguous, (batch..., Tq, Tk)) ← S · scale (+ additive mask), −inf where the mask rule
// hides a key: the op-by-op path's step between the two gemms.
void scale_and_mask_cpu(const Problem& p, Tensor& S);
// The NaN rule's zero on the op-by-op path (ops/attention.h), in place: in each row i of X
// (contiguous, (batch..., Tq, Tk): P or dS) whose row of `flags` ((batch..., Tq, w): O, or D)
// holds a NaN, X_ij = 0 at every key j the mask rule hides from i.
void zero_hidden_in_nan_rows_cpu(const Problem& p, const Tensor& X, const Tensor& flags);
// x, or where it holds a NaN or ±inf, a contiguous copy with those entries 0: Q as dK = dSᵀ Q
// reads it under the NaN rule.
Tensor finite_part_cpu(const Tensor& x);
// Whether every size fits the BLAS integer (the fused kernels call cblas per slice).
bool fits_blas(const Problem& p);
// How the fused kernels read a slice (one sequence and head) of Q and of K: as it is (plain), or
// rotated by RoPE on the way in (attention_qkv: row t of the slice by θ_t = t · base^(−2i/d_k), pair
// by pair, as rope() rotates it; p.q and p.k are the unrotated ones). A slice's gradients go back
// the way it was read: those of a rotated read are rotated by −θ (R_θᵀ) on their way out, so dQ and
// dK are the gradients of the unrotated p.q and p.k.
struct SliceReader {
  bool rotate = false;
  double base = 10000.0;
  static SliceReader plain() { return {}; }
  static SliceReader rope(double base) { return {.rotate = true, .base = base}; }
};
// Where the fused backward writes one gradient's slices: a fresh tensor (batch..., rows, cols), or a
// given view at that shape with unit-stride rows, written in place (attention_qkv's views of dqkv).
struct SliceWriter {
  Tensor view;  // the given view; undefined for a fresh tensor
  static SliceWriter fresh() { return {}; }
  static SliceWriter into(Tensor view) { return {std::move(view)}; }
};
struct GradientWriters {
  SliceWriter dQ, dK, dV;
};
// The fused forward: P (batch..., Tq, Tk), contiguous, and O (batch..., Tq, dv), contiguous or, with
// merged_output, laid out (batch[0], Tq, batch[1..], dv) (S is not kept); Q and K as `read` reads them.
Forward fused_forward(const Problem& p, const SliceReader& read);

// The fused backward: dQ, dK, dV (those asked for) at the expanded batch shape, each where its writer
// puts it, and with a live mask the full dS; Q and K read (and their gradients sent back) as `read`
// says, as fused_forward read them.
Backward fused_backward(const Problem& p, const Tensor& P, const Tensor& dO, const Needs& need, bool live_mask,
                        const SliceReader& read, const GradientWriters& write);

// ---------------------------------------------------------------- op by op (attention_formulas.cpp)

// The backward written with recorded ops (create_graph): p.q, p.k, p.v are the graph's own tensors
// (expanded), so the gradients' graph reaches them.
// `live_mask`: the additive mask that requires grad (Plan::live_mask), else undefined.
Backward composed_backward(const Problem& p, const Tensor& dO, const Tensor& live_mask, const Needs& need);
// The tangent Ȯ with recorded ops, from the tangents d of q, k, v (and of the mask), each
// undefined where none; p.q, p.k, p.v as for composed_backward.
Tensor composed_tangent(const Problem& p, const Tensor& mask, const std::vector<Tensor>& d);

// The materialized forward and backward written op by op (S, P, O; dV, dP, D, dS, dQ, dK), run by
// attention() on CUDA tensors and by the traces (attention_trace.cpp), which return every buffer.
Forward attention_forward(const Problem& p);
Backward attention_backward(const Problem& p, const Tensor& P, const Tensor& dO, const Needs& need, bool live_mask);
// Ṡ's part from Q and K, (Q̇ Kᵀ + Q K̇ᵀ) · scale (batch..., Tq, Tk); undefined when neither moves.
Tensor scores_tangent(const Problem& p, const Tensor& dq, const Tensor& dk);
// A b8 tensor of S's shape on S's device, true where S is −inf (a hidden key).
Tensor hidden_entries(const Tensor& S);

// ---------------------------------------------------------------- the tiled path (attention_tiled.cpp)

// FlashAttention-2's forward: O (batch..., Tq, dv) and the row log-sum-exp L (batch..., Tq) of the
// scaled, masked scores: −inf on a row with no visible key (whose O row is 0), NaN on a row with
// a NaN among its visible scores (whose O row is NaN).
struct TiledForward {
  Tensor O, L;
};
TiledForward tiled_forward(const Problem& p);
// Its backward from O, L and dO: dQ, dK, dV (those asked for) at the expanded batch shape, and with a
// live mask the full dS.
Backward tiled_backward(const Problem& p, const Tensor& O, const Tensor& L, const Tensor& dO, const Needs& need,
                        bool live_mask);
// The forward and its tangent (forward mode) along (q̇, k̇, v̇) — each expanded as p.q, p.k, p.v
// are, or undefined where that input does not move — in one pass over the tiles: O(T) memory.
struct TiledTangent {
  Tensor O, L, Odot;
};
TiledTangent tiled_forward_tangent(const Problem& p, const Tensor& dq, const Tensor& dk, const Tensor& dv);

}  // namespace hg::attention_detail
