// cpu/kernels.h — handgrad's own hot CPU loops, compiled once per instruction-set level
// and chosen once, at start-up, from what the CPU can run.
//
// The library itself is compiled for baseline x86-64 (128-bit SSE2 vectors), so it runs on any
// x86-64 CPU. The loops below are the exception: the same source (cpu/kernels_impl.h) is
// compiled three times, each file with its own flags (CMakeLists.txt) — baseline, AVX2 + FMA
// (256-bit), AVX-512 (512-bit) — into one table of function pointers per level, as PyTorch's
// ATen does with its CPU_CAPABILITY. kernels() returns the table of the widest level the CPU
// supports, or the one HANDGRAD_CPU_CAPABILITY=baseline|avx2|avx512 names (ATEN_CPU_CAPABILITY's
// counterpart; asking for a level the CPU lacks is an error, not a silent fallback).
//
// Every level gives the same bits. The kernel files are compiled with floating-point
// contraction off, so the compiler fuses no product into a sum (the only fused multiply-adds are
// AdamW's explicit std::fma, rounded once whichever instruction computes them; and RoPE's loop is
// written so that GCC's vfmaddsub pattern, which ignores the flag, cannot match it); every other
// operation is one correctly rounded IEEE operation per element, whatever the vector width; and every
// reduction goes over the same 8 lanes in the same order (cpu/rows.h). So a level changes
// how fast a step runs, never its numbers — tests/cpu/test_cpu_kernels.cpp holds every level the CPU
// has to the baseline's bits, NaN, infinities and every length's tail included. Elsewhere (other
// CPUs) only the baseline is built. The float32 gemm (cpu/gemm_impl.h) exists only at the levels
// with FMA: avx2 and avx512 give the same bits (its definition is one fused multiply-add a term, in
// order), and the baseline has none (ops/gemm.h then runs OpenBLAS).
//
// Each kernel works on contiguous float32 rows (AdamW also float64); the callers in engine/, ops/
// and nn/ walk strides and threads and call these on the innermost rows. Not in the table: the
// sum op's reductions, which add each row strictly left to right (a lane order would change the
// bits the labs compare with the texts), and copies, whose unit-stride rows are memcpy's.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace hg::cpu {

enum class Capability { baseline, avx2, avx512 };

// One AdamW step's constants in the parameter's dtype (nn/optim.cpp derives them).
template <typename T>
struct AdamWConstants {
  T decay, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, neg_step;
};

// o ← a ∘ b over n floats (the elementwise kernels below)
using BinaryRow = void (*)(float* o, const float* a, const float* b, int64_t n);

struct Kernels {
  Capability level;

  // ---- rows for softmax and cross-entropy
  float (*max)(const float* x, int64_t n);                      // max over 8 lanes, NaN skipped; −inf for n = 0
  float (*sum)(const float* x, int64_t n);                      // Σ over 8 lanes
  void (*exp_shift)(float* x, int64_t n, float m);              // x ← e^(x − m) (exp_fast), in place
  void (*exp_shift_to)(float* y, const float* x, int64_t n, float m);  // y ← e^(x − m); y, x do not overlap
  double (*exp_shift_sum_f64)(const float* x, int64_t n, float m);     // Σ double(e^(x − m)) over 8 lanes
  float (*exp_shift_sum)(float* x, int64_t n, float m);         // x ← e^(x − m) in place; returns Σ x over 8 lanes
  void (*scale)(float* x, int64_t n, float s);                  // x ← s x
  float (*dot)(const float* a, const float* b, int64_t n);      // Σ a b over 8 lanes
  void (*softmax_grad)(float* g, const float* p, int64_t n, float c);  // g ← p (g − c), the row rule

  // ---- elementwise: o ← a ∘ b, none overlapping unless o == a or o == b exactly
  BinaryRow vadd, vsub, vmul, vdiv;

  // ---- RoPE over `rows` rows of 2·half interleaved pairs (unit stride within a row): row r of
  // x at x + r·x_row, of y at y + r·y_row, its angles' cos and sin at c + r·cs_row, s + r·cs_row
  // (cs_row = half: one position per row; 0: every row at one position, e.g. the H heads of one
  // token). y_2i = x_2i c_i − x_2i+1 s_i, y_2i+1 = x_2i s_i + x_2i+1 c_i. y and x do not overlap.
  void (*rope)(float* y, int64_t y_row, const float* x, int64_t x_row, const float* c, const float* s,
               int64_t cs_row, int64_t rows, int64_t half);

  // ---- AdamW over n elements (torch.optim's single-tensor step, nn/optim.cpp)
  void (*adamw_f32)(const AdamWConstants<float>& k, float* w, const float* g, float* m, float* v, int64_t n);
  void (*adamw_f64)(const AdamWConstants<double>& k, double* w, const double* g, double* m, double* v, int64_t n);

  // ---- float32 gemm over packed panels, one thread (cpu/gemm_impl.h says what each element is):
  // C (M × N) ← alpha · op(A) op(B) + beta · C, row-major, op(X) = Xᵀ when trans_X. Only at the
  // levels with FMA (nullptr at the baseline), the same bits at each; ops/gemm.h chooses between
  // it and OpenBLAS per shape.
  void (*sgemm)(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
  // The same with B packed once for several products: sgemm_pack_b writes alpha · op(B) (K × N)
  // into sgemm_packed_size(K, N) floats, which sgemm_packed reads as its B (n_packed = that N; it
  // may read only the first N ≤ n_packed columns); the same bits as sgemm.
  int64_t (*sgemm_packed_size)(int64_t K, int64_t N);
  void (*sgemm_pack_b)(bool trans_b, int64_t K, int64_t N, float alpha, const float* B, int64_t ldb, float* out);
  void (*sgemm_packed)(bool trans_a, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* packed,
                       int64_t n_packed, float beta, float* C, int64_t ldc);
};

// The table in use: the widest level this CPU runs, or HANDGRAD_CPU_CAPABILITY's. Read once;
// a bad or unsupported HANDGRAD_CPU_CAPABILITY throws (every call, until it is fixed).
const Kernels& kernels();

// A level's table, or nullptr when this build lacks it or this CPU cannot run it.
const Kernels* kernels_for(Capability level);

// The levels this build has and this CPU runs, baseline first.
std::vector<Capability> available();

const char* name(Capability level);  // "baseline", "avx2", "avx512"

// Makes kernels() return `level`'s table while it lives (tests run whole ops at every level with
// it); throws when the level is not available. Not for use while other threads run kernels.
class ForceCapability {
 public:
  explicit ForceCapability(Capability level);
  ~ForceCapability();
  ForceCapability(const ForceCapability&) = delete;
  ForceCapability& operator=(const ForceCapability&) = delete;

 private:
  const Kernels* previous_;
};

// Why `level` cannot run here ("this CPU lacks AVX-512 (F, BW, DQ, VL)", "this build has none ..."),
// or an empty string when it can. Tests print it when they skip a level.
std::string unavailable_reason(Capability level);

// For tests: while it lives, the CPU appears to lack the levels in `hidden` (the baseline cannot
// be hidden), so that the branches a CPU without AVX2 or AVX-512 takes run on every machine.
// available(), kernels_for(), choose(), unavailable_reason() and ForceCapability see the mask;
// kernels() keeps the table it chose at start-up (the constructor makes it choose first). Masks
// nest; not for use while other threads choose levels.
class HideCapabilities {
 public:
  explicit HideCapabilities(std::initializer_list<Capability> hidden);
  ~HideCapabilities();
  HideCapabilities(const HideCapabilities&) = delete;
  HideCapabilities& operator=(const HideCapabilities&) = delete;

 private:
  unsigned previous_;
};

// The level HANDGRAD_CPU_CAPABILITY's value names, or an error naming the variable, the value,
// and the levels this CPU has. An empty value is "automatic" (the widest available).
Capability choose(const char* env_value);

}  // namespace hg::cpu
