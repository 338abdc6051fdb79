// cuda/kernels.h — the launchers of the kernels in cuda/*.cu, as the host side (cuda/*.cpp) calls them.
//
// Kept free of engine headers so nvcc compiles only kernel files (C++17): element types are named
// by Elem, elementwise kinds by the codes of cuda/kinds.h. Buffers are device pointers already
// offset to element 0. Each launcher enqueues on `s` and returns cudaGetLastError() for the caller
// to check with HG_CUDA_CHECK; a launcher given no elements launches nothing and returns success.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/kinds.h"

namespace hg::cuda {

enum class Elem : int { f32, f64, i64, b8 };  // b8 is stored as uint8_t

// ---------------------------------------------------------------- strided index spaces
//
// One index space (the output's shape, adjacent dimensions already merged where every operand
// allows it) and each operand's strides in elements (0 on a broadcast dimension). Element e of
// the space, in row-major order, is at Σ_d idx_d(e) · stride[k][d] in operand k.
constexpr int kMaxDims = 8;

template <size_t N>
struct Geometry {
  int rank = 0;       // 1 ≤ rank ≤ kMaxDims
  int64_t numel = 0;  // Π size
  int64_t size[kMaxDims] = {};
  int64_t stride[N][kMaxDims] = {};
};

// ---------------------------------------------------------------- elementwise (elementwise.cu)

// The kinds (UnaryCode, BinaryCode) are in cuda/kinds.h.

// operands: 0 dst, 1 src (any dtype pair, converted by engine/convert.h's rule, as the CPU's copy_).
// status: for a float -> i64 copy (and only then; null otherwise), a status buffer (below) whose
// [kBadIndex] gets the first position e of an element with no int64 value, written as 0.
cudaError_t launch_copy(Elem dst_t, void* dst, Elem src_t, const void* src, const Geometry<2>& g, long long* status,
                        cudaStream_t s);
// operands: 0 dst; value converted by engine/convert.h's rule (the host checks that it converts)
cudaError_t launch_fill(Elem t, void* dst, double value, const Geometry<1>& g, cudaStream_t s);
// dst += alpha * src; operands: 0 dst, 1 src (float types)
cudaError_t launch_axpy(Elem t, void* dst, const void* src, double alpha, const Geometry<2>& g, cudaStream_t s);
// dst *= factor; operands: 0 dst
cudaError_t launch_scale(Elem t, void* dst, double factor, const Geometry<1>& g, cudaStream_t s);
// out = f(x); operands: 0 out, 1 x
cudaError_t launch_unary(int code, Elem t, void* out, const void* x, double scalar, const Geometry<2>& g,
                         cudaStream_t s);
// out = f(a, b); operands: 0 out, 1 a, 2 b
cudaError_t launch_binary(int code, Elem t, void* out, const void* a, const void* b, const Geometry<3>& g,
                          cudaStream_t s);
// out = mask ? value : x; operands: 0 out, 1 x, 2 mask (uint8)
cudaError_t launch_masked_fill(Elem t, void* out, const void* x, const uint8_t* mask, double value,
                               const Geometry<3>& g, cudaStream_t s);
// out = cond ? a : b; operands: 0 out, 1 cond (uint8), 2 a, 3 b
cudaError_t launch_where(Elem t, void* out, const uint8_t* cond, const void* a, const void* b, const Geometry<4>& g,
                         cudaStream_t s);

// ---------------------------------------------------------------- attention (attention.cu)

// Attention scores in place. S is contiguous (batch..., Tq, Tk); g spans S's shape with one
// operand, the mask's strides. mask_kind: 0 none, 1 boolean (uint8, true = may attend),
// 2 additive (S's type; −inf or ≤ lowest/2 counts as masked).
enum MaskKind : int { kMaskNone, kMaskBool, kMaskAdditive };
cudaError_t launch_scale_mask(Elem t, void* S, int64_t Tq, int64_t Tk, double scale, bool causal, int mask_kind,
                              const void* mask, const Geometry<1>& g, cudaStream_t s);

// The NaN rule's zero and the finite part of Q (ops/attention.h).
// X (rows, Tk) contiguous, rows = (batch..., Tq) as g spans them with the mask's strides, flags
// (rows, w) contiguous: X_ij = 0 at the keys hidden from query i of each row whose flags hold a NaN.
cudaError_t launch_attention_zero_hidden(Elem t, void* X, const void* flags, int64_t w, int64_t Tq, int64_t Tk,
                                         bool causal, int mask_kind, const void* mask, int64_t mask_sj,
                                         const Geometry<1>& g, cudaStream_t s);
// out (contiguous) = x (g: operands 0 out, 1 x) with every NaN and ±inf entry 0.
cudaError_t launch_attention_finite_part(Elem t, void* out, const void* x, const Geometry<2>& g, cudaStream_t s);

// ---------------------------------------------------------------- tiled attention (attention_tiled_*.cu)

// FlashAttention-2's kernels, on `slices` batch slices. q (slices, Tq, dk), k (slices, Tk, dk),
// v (slices, Tk, dv), O and dO (slices, Tq, dv), L and D (slices, Tq), dQ (slices, Tq, dk), dK,
// dV (slices, Tk, dk / dv), dS (slices, Tq, Tk): all contiguous. The mask (mask_kind as above) is
// read through strides: entry (slice b, query i, key j) is at offset(b) + i · mask_si + j · mask_sj,
// offset(b) that of element b of mask_batch (the batch shape with the mask's batch strides).
constexpr int64_t kAttentionMaxHead = 128;  // dk and dv at most: the tiles' rows in shared memory
struct TiledAttention {
  int64_t slices = 0, Tq = 0, Tk = 0, dk = 0, dv = 0;
  double scale = 1.0;
  bool causal = false;
  int mask_kind = kMaskNone;
  const void* mask = nullptr;
  int64_t mask_si = 0, mask_sj = 0;
  Geometry<1> mask_batch;
};
// O and L = the row log-sum-exp of the scaled, masked scores (−inf on a row with no visible key,
// whose O row is 0; NaN on a row with a NaN among its visible scores, whose O row is NaN).
cudaError_t launch_attention_tiled_forward(Elem t, const TiledAttention& a, const void* q, const void* k,
                                           const void* v, void* O, void* L, cudaStream_t s);
// The forward with its tangent (forward mode) along dq, dk, dv (the operands' shapes; null where
// that input does not move): O, L as the forward's, and Ȯ (slices, Tq, dv).
cudaError_t launch_attention_tiled_tangent(Elem t, const TiledAttention& a, const void* q, const void* k,
                                           const void* v, const void* dq, const void* dk, const void* dv, void* O,
                                           void* Od, void* L, cudaStream_t s);
// From the forward's O, L and dO: D = rowsum(dO ∘ O) into D (scratch, (slices, Tq)), then dQ, dK,
// dV and dS, each written in full when it is not null.
cudaError_t launch_attention_tiled_backward(Elem t, const TiledAttention& a, const void* q, const void* k,
                                            const void* v, const void* O, const void* L, const void* dO, void* D,
                                            void* dQ, void* dK, void* dV, void* dS, cudaStream_t s);
// dM (the mask's own shape, contiguous) = dS summed over the entries that read each mask entry. The
// mask in `a` is that shape, contiguous, so that entry (slice b, i, j) is at the same offset in
// the mask and in dM. Slice b of the batch entries is at offsets_of(entry, e) + offsets_of(reps, k)
// for e < entry.numel (the mask's batch entries, in order) and k < reps.numel (the slices that read
// each). rows / cols: whether the mask has a query / key dimension (else dS is summed along it).
// D: scratch (slices, Tq) for rowsum(dO ∘ O).
cudaError_t launch_attention_tiled_mask_grad(Elem t, const TiledAttention& a, const void* q, const void* k,
                                             const void* v, const void* O, const void* L, const void* dO, void* D,
                                             void* dM, const Geometry<1>& entry, const Geometry<1>& reps, bool rows,
                                             bool cols, cudaStream_t s);

// ---------------------------------------------------------------- rows (softmax.cu), contiguous (rows, n)

// p = softmax of each row; a row of −inf gives zeros
cudaError_t launch_softmax_rows(Elem t, const void* x, void* p, int64_t rows, int64_t n, cudaStream_t s);
// y = log_softmax of each row; a row of −inf gives −inf
cudaError_t launch_log_softmax_rows(Elem t, const void* x, void* y, int64_t rows, int64_t n, cudaStream_t s);
// ds = p ∘ (dp − D), D = rowsum(p ∘ dp) written to D (rows,) when D is not null
cudaError_t launch_softmax_backward_rows(Elem t, const void* p, const void* dp, void* ds, void* D, int64_t rows,
                                         int64_t n, cudaStream_t s);
// ds = g − exp(y) rowsum(g); 0 on a row of −inf
cudaError_t launch_log_softmax_backward_rows(Elem t, const void* y, const void* g, void* ds, int64_t rows, int64_t n,
                                             cudaStream_t s);
// J (rows, n, n) = diag(p) − p pᵀ per row
cudaError_t launch_jacobian_rows(Elem t, const void* p, void* J, int64_t rows, int64_t n, cudaStream_t s);
// dp_k = G_kk − Σ_j (G_kj + G_jk) p_j per row; G (rows, n, n)
cudaError_t launch_jacobian_backward_rows(Elem t, const void* p, const void* G, void* dp, int64_t rows, int64_t n,
                                          cudaStream_t s);

// ---------------------------------------------------------------- rows (rows.cu)

// out[r] = Σ_j x[r, j]
cudaError_t launch_sum_rows(Elem t, const void* x, void* out, int64_t rows, int64_t cols, cudaStream_t s);
// values[r] = max_j x[r, j] at its first position j*; argmax[r] = j* and onehot[r, :] = e_{j*}
// when those are not null. cols ≥ 1.
cudaError_t launch_max_rows(Elem t, const void* x, void* values, int64_t* argmax, void* onehot, int64_t rows,
                            int64_t cols, cudaStream_t s);

// status: three device int64 (long long) the host initialises and reads back after the kernels:
//   [0] the first position holding an out-of-range index/target (INT64_MAX if none),
//   [1] the first row whose loss is NaN (INT64_MAX if none),
//   [2] (cross-entropy) the number of kept rows.
enum StatusSlot : int { kBadIndex, kNanRow, kKept, kStatusSlots };

// Per row r of x (N, C): lse[r] = logsumexp(x_r), loss[r] = lse[r] − x[r, t_r] (double) for a
// kept row (t_r != ignore), 0 and 0 for an ignored one. Arithmetic in double, as the CPU op.
cudaError_t launch_cross_entropy_rows(Elem t, const void* x, const int64_t* targets, int64_t N, int64_t C,
                                      int64_t ignore_index, void* lse, double* loss, long long* status, cudaStream_t s);
// out (0-d) = Σ_{kept} loss[r] / n_kept (0 when none kept); status[kKept] = n_kept. One block.
cudaError_t launch_cross_entropy_mean(Elem t, const double* loss, const int64_t* targets, int64_t N,
                                      int64_t ignore_index, void* out, long long* status, cudaStream_t s);
// dx[r, c] = scale (exp(x[r, c] − lse[r]) − [c = t_r]) on kept rows, 0 on ignored rows, with
// scale = g / n_kept read on the device: g the 0-d incoming gradient, n_kept the forward's count
// (its status[kKept]); scale = 0 when n_kept = 0.
cudaError_t launch_cross_entropy_backward(Elem t, const void* x, const int64_t* targets, const void* lse, int64_t N,
                                          int64_t C, int64_t ignore_index, const void* g, const long long* n_kept,
                                          void* dx, long long* status, cudaStream_t s);
// status = {INT64_MAX, INT64_MAX, 0}: no bad index, no NaN row, nothing counted.
cudaError_t launch_status_init(long long* status, cudaStream_t s);
// Up to kGatherMax status buffers, by value in the launch's arguments (elementwise.cu).
constexpr int kGatherMax = 64;
struct StatusSources {
  const long long* status[kGatherMax];
  int count;
};
// out[i · kStatusSlots + k] = src.status[i][k] for i < src.count: the pending statuses in one
// buffer, for one copy to the host (cuda/elementwise.cpp, wait_for_stream).
cudaError_t launch_status_gather(const StatusSources& src, long long* out, cudaStream_t s);

// out[p, j] = w[idx[p] · sv + j · sd]; out (P, d) contiguous, idx (P,) contiguous
cudaError_t launch_embedding(Elem t, const void* w, int64_t sv, int64_t sd, int64_t V, int64_t d, const int64_t* idx,
                             int64_t P, void* out, long long* status, cudaStream_t s);
// dw[v, j] = Σ_{p: idx[p] = v} g[p, j], summed in position order (the CPU's order: the same bits,
// run after run); dw (V, d) written whole, g (P, d) contiguous
cudaError_t launch_embedding_backward(Elem t, const void* g, const int64_t* idx, int64_t P, int64_t V, int64_t d,
                                      void* dw, long long* status, cudaStream_t s);

// ---------------------------------------------------------------- training (positional.cu, optim.cu)

// y = R_θ x pair by pair (ops/positional.h), θ = (start + t) · base^(−2i/d_h), direction −1 for −θ.
// g spans (lead..., T, d_h/2): operand 0 y (contiguous, stride 2 on the last dimension), operand 1
// x (2 · sd on the last dimension); sd is x's stride between a pair's two elements.
cudaError_t launch_rope(Elem t, void* y, const void* x, int64_t sd, int64_t T_len, int64_t half, int64_t start,
                        double base, int direction, const Geometry<2>& g, cudaStream_t s);
// b (H, T, T) contiguous: the ALiBi bias; pe (T, d) contiguous: the sinusoidal table.
cudaError_t launch_alibi(Elem t, void* b, int64_t H, int64_t T_len, cudaStream_t s);
cudaError_t launch_sinusoidal(Elem t, void* pe, int64_t T_len, int64_t d, cudaStream_t s);

// One AdamW step's constants (nn/optim.cpp), rounded to the element type by the launcher.
struct AdamWScalars {
  double decay, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, neg_step;
};
// In place on n contiguous elements of w, m, v, reading g.
cudaError_t launch_adamw(Elem t, void* w, const void* g, void* m, void* v, const AdamWScalars& c, int64_t n,
                         cudaStream_t s);

// ---------------------------------------------------------------- the build (softmax.cu)

// cudaFuncGetAttributes on a kernel of softmax.cu: fails with cudaErrorNoKernelImageForDevice
// (or similar) when the build's CMAKE_CUDA_ARCHITECTURES cannot run on the current device.
cudaError_t probe_kernel_image();

}  // namespace hg::cuda
