// cpu/gemm_impl.h — handgrad's own float32 gemm over packed panels, included by
// cpu/kernels_impl.h at the levels with FMA (avx2, avx512); the baseline has none (kernels.h).
//
//   C (M × N) ← alpha · op(A) op(B) + beta · C, row-major, op(X) = X or Xᵀ
//
// The loops are the usual ones around a register tile (BLIS's, Goto's): columns of C in blocks of
// kNc, the sum over K in blocks of kKc, rows in blocks of kMc; within them B's kKc × kNc block is
// packed once, times alpha, into slivers NR columns wide, which the micro-kernel reads at unit
// stride. A product of at most kDirectM rows with B not transposed skips the packing: its tiles
// read B's rows where they lie and apply alpha as they load (direct_product, below).
// A is read where it lies — its element (i, p) is one broadcast, at stride 1 along p when
// A is row-major and along i when it is stored transposed, so either way a tile's six rows are six
// loads a term; a tile at C's last rows has fewer rows, one at its last columns masked loads and
// stores (at half width when they fit in half), so no element outside the matrices is touched.
// (Packing A, as BLIS does, costs about 16/N of the product's time here, a quarter of it for N = 64;
// at kMc × kKc, A's block is read from L2 either way.) The micro-kernel keeps an MR × NR tile of C in
// MR · NR/W vector registers: 6 × 16 on AVX2 (12 of the 16 ymm), 6 × 64 on AVX-512 (24 of the 32
// zmm). The wider AVX-512 tile reads each element of A once per 64 columns of C, not 32, and does
// 24 FMAs per 10 loads instead of 12 per 8: in a loop over panels held in L1 it ran at 85–95 % of
// an Intel Xeon's FMA peak against 6 × 32's 76–80 %, and 1.04–1.11× faster on the step's and the
// tiled attention's shapes (bench/RESULTS.md). Sizes measured on Zen 4 (AVX2) and that Xeon (AVX-512).
//
// What each element is, exactly — the same at every level and every blocking:
//   t ← (beta = 0 ? 0 : beta · c);  for p = 0, 1, …, K−1:  t ← fma(a_ip, alpha · b_pj, t);  c ← t
// one fused multiply-add per term, in the order of p. Between blocks of K the partial t is stored in
// C itself (a float, so nothing is lost), the register tile's shape only decides which elements are
// computed together, and a thread split by rows or columns of C leaves every element's chain whole. So
// avx2 and avx512 give the same bits, whatever the thread count (tests/cpu/test_gemm.cpp); against
// OpenBLAS, whose order of terms is its own, the results agree to float32 rounding, not bit for bit.
// With beta = 0, C is never read (NaN there does not leak), as in BLAS.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>

#ifndef HG_CPU_LEVEL
#error "cpu/gemm_impl.h is included by cpu/kernels_impl.h"
#endif

// Each level's copy in its own namespace: the same inline functions compiled with other flags.
namespace hg::cpu::HG_CPU_LEVEL::gemm_detail {

#if defined(__AVX512F__)
using vf = __m512;
constexpr int kW = 16;
inline vf vzero() { return _mm512_setzero_ps(); }
inline vf vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, vf v) { _mm512_storeu_ps(p, v); }
inline vf vbroadcast(const float* p) { return _mm512_set1_ps(*p); }
inline vf vfma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
inline vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
using vmask = __mmask16;  // the first n lanes
inline vmask first_lanes(int64_t n) { return n >= 16 ? vmask(0xFFFF) : n <= 0 ? vmask(0) : vmask((1u << n) - 1); }
inline vf vload_first(const float* p, vmask m) { return _mm512_maskz_loadu_ps(m, p); }
inline void vstore_first(float* p, vmask m, vf v) { _mm512_mask_storeu_ps(p, m, v); }
#else
using vf = __m256;
constexpr int kW = 8;
inline vf vzero() { return _mm256_setzero_ps(); }
inline vf vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, vf v) { _mm256_storeu_ps(p, v); }
inline vf vbroadcast(const float* p) { return _mm256_broadcast_ss(p); }
inline vf vfma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
inline vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
using vmask = __m256i;  // the first n lanes (all bits set in each)
inline vmask first_lanes(int64_t n) {
  const int k = n >= 8 ? 8 : n <= 0 ? 0 : static_cast<int>(n);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline vf vload_first(const float* p, vmask m) { return _mm256_maskload_ps(p, m); }
inline void vstore_first(float* p, vmask m, vf v) { _mm256_maskstore_ps(p, m, v); }
#endif

constexpr int kMr = 6;  // rows of the register tile
#if defined(__AVX512F__)
constexpr int kNv = 4;          // vectors across it
constexpr int64_t kKc = 128;    // terms per block of K: a B sliver (kKc × kNr, 32 KiB) stays in L1
#else
constexpr int kNv = 2;
constexpr int64_t kKc = 256;    // (a sliver of 16 KiB)
#endif
constexpr int kNr = kNv * kW;   // its columns: 16 (avx2), 64 (avx512)
constexpr int64_t kMc = 24 * kMr;  // rows of A per block (144 × kKc floats, read from L2)
constexpr int64_t kNc = 3072;      // columns per packed block of B (a multiple of either kNr)

// One thread's scratch for a packed block of B, kept between calls (64-byte aligned, grown on
// demand); not ops/gemm.h's PackedB, a B packed once by its caller for many products.
struct PackScratch {
  struct Free {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<float[], Free> data;
  int64_t cap = 0;
  float* grow(int64_t n) {
    if (n > cap) {
      data.reset(static_cast<float*>(::operator new[](static_cast<size_t>(n) * sizeof(float), std::align_val_t{64})));
      cap = n;
    }
    return data.get();
  }
};

inline PackScratch& pack_scratch() {
  thread_local PackScratch b;
  return b;
}

// out (8 rows, ld_out apart) ← alpha · the transpose of in's 8 × 8 block (rows ld_in apart).
inline void transpose_8x8(const float* in, int64_t ld_in, float alpha, float* out, int64_t ld_out) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + i * ld_in);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  // r[k] (k < 4) holds column k of rows 0-3 in its low half and column k + 4 in its high half;
  // r[k + 4] the same of rows 4-7. Column i of the block is one half of each.
  const __m256 va = _mm256_set1_ps(alpha);
  for (int i = 0; i < 8; ++i) {
    const int k = i % 4;
    const __m256 v = i < 4 ? _mm256_permute2f128_ps(r[k], r[k + 4], 0x20) : _mm256_permute2f128_ps(r[k], r[k + 4], 0x31);
    _mm256_storeu_ps(out + i * ld_out, alpha == 1.0f ? v : _mm256_mul_ps(va, v));
  }
}

// alpha times op(B)'s terms p0 .. p0+kc, columns j0 .. j0+nc, as slivers of kNr columns: sliver s
// holds column c of term p at out[s·kc·kNr + p·kNr + c]; columns past nc are zeros.
inline void pack_b(bool trans, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float alpha,
                   float* out) {
  const vf va = vbroadcast(&alpha);
  for (int64_t s = 0; s * kNr < nc; ++s, out += kc * kNr) {
    const int64_t cols = std::min<int64_t>(kNr, nc - s * kNr), c0 = j0 + s * kNr;
    if (!trans && cols == kNr) {
      for (int64_t p = 0; p < kc; ++p)
        for (int v = 0; v < kNv; ++v) {
          const vf b = vload(B + (p0 + p) * ldb + c0 + v * kW);
          vstore(out + p * kNr + v * kW, alpha == 1.0f ? b : vmul(va, b));
        }
      continue;
    }
    if (trans) {  // column c of op(B) is row c0 + c of B: 8 × 8 blocks transposed in registers, the rest one by one
      const int64_t c8 = cols / 8 * 8, p8 = kc / 8 * 8;
      for (int64_t c = 0; c < c8; c += 8)
        for (int64_t p = 0; p < p8; p += 8) transpose_8x8(B + (c0 + c) * ldb + p0 + p, ldb, alpha, out + p * kNr + c, kNr);
      for (int64_t c = 0; c < cols; ++c) {
        const float* row = B + (c0 + c) * ldb + p0;
        for (int64_t p = c < c8 ? p8 : 0; p < kc; ++p) out[p * kNr + c] = alpha == 1.0f ? row[p] : alpha * row[p];
      }
    } else {
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t c = 0; c < cols; ++c) {
          const float b = B[(p0 + p) * ldb + c0 + c];
          out[p * kNr + c] = alpha == 1.0f ? b : alpha * b;
        }
    }
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t c = cols; c < kNr; ++c) out[p * kNr + c] = 0.0f;
  }
}

// The register tile: c (R × NV·kW, rows ldc apart) ← t + Σ_p a(r, p) b_p, t = c when `load`, else 0,
// with a(r, p) at a[r·rs + p·ps] (row-major A: rs = lda, ps = 1; stored transposed: rs = 1,
// ps = lda) and b_p the first NV·kW columns of B's row p (bs apart). R = kMr but at C's last rows,
// NV = kNv but in a last sliver of at most kNr / 2 columns; with `Edge`, only C's first `cols`
// columns are read and written (masked loads and stores). B is a packed sliver (bs = kNr, alpha
// already in it, zeros past `cols`), or with `Direct` B itself where it lies (bs = ldb): then its
// loads are masked at the edge too, and each b_p is multiplied by alpha when `scale` — the same
// alpha · b the packed sliver holds, so the same bits.
template <int R, int NV, bool Edge, bool Direct>
void micro_kernel(int64_t kc, const float* __restrict a, int64_t rs, int64_t ps, const float* __restrict b, int64_t bs,
                  float* c, int64_t ldc, bool load, int64_t cols, bool scale, float alpha) {
  vmask m[NV];
  for (int v = 0; v < NV; ++v) m[v] = first_lanes(Edge ? cols - v * kW : kW);
  const vf va = vbroadcast(&alpha);
  vf acc[R][NV];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const float* cv = c + r * ldc + v * kW;
      acc[r][v] = !load ? vzero() : Edge ? vload_first(cv, m[v]) : vload(cv);
    }
  for (int64_t p = 0; p < kc; ++p, a += ps, b += bs) {
    vf bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      bv[v] = Direct && Edge ? vload_first(b + v * kW, m[v]) : vload(b + v * kW);
      if (Direct && scale) bv[v] = vmul(va, bv[v]);
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const vf ar = vbroadcast(a + r * rs);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = vfma(ar, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float* cv = c + r * ldc + v * kW;
      if (Edge) vstore_first(cv, m[v], acc[r][v]);
      else vstore(cv, acc[r][v]);
    }
}

// B's side of a tile: where its rows are, how far apart, and whether alpha is still to be applied.
struct BRows {
  const float* b;
  int64_t bs;
  bool direct, scale;
  float alpha;
};

template <int NV, bool Edge, bool Direct>
void tile_rows(int64_t rows, int64_t kc, const float* a, int64_t rs, int64_t ps, const BRows& b, float* c, int64_t ldc,
               bool load, int64_t cols) {
  static_assert(kMr == 6);
  const auto run = [&]<int R>() {
    micro_kernel<R, NV, Edge, Direct>(kc, a, rs, ps, b.b, b.bs, c, ldc, load, cols, b.scale, b.alpha);
  };
  switch (rows) {
    case 6: return run.template operator()<6>();
    case 5: return run.template operator()<5>();
    case 4: return run.template operator()<4>();
    case 3: return run.template operator()<3>();
    case 2: return run.template operator()<2>();
    default: return run.template operator()<1>();
  }
}

template <int NV, bool Edge>
void tile(int64_t rows, int64_t kc, const float* a, int64_t rs, int64_t ps, const BRows& b, float* c, int64_t ldc,
          bool load, int64_t cols) {
  if (b.direct) return tile_rows<NV, Edge, true>(rows, kc, a, rs, ps, b, c, ldc, load, cols);
  return tile_rows<NV, Edge, false>(rows, kc, a, rs, ps, b, c, ldc, load, cols);
}

// A tile of `rows` × `cols` (at most kMr × kNr): the full kernel where it fits, otherwise the one
// for its rows, masked at C's last columns, and at half width where the columns fit in half.
inline void any_tile(int64_t rows, int64_t kc, const float* a, int64_t rs, int64_t ps, const BRows& b, float* c,
                     int64_t ldc, bool load, int64_t cols) {
  constexpr int kHalf = kNv / 2;
  if (cols == kNr) {
    if (rows == kMr && !b.direct)
      return micro_kernel<kMr, kNv, false, false>(kc, a, rs, ps, b.b, b.bs, c, ldc, load, cols, false, 1.0f);
    return tile<kNv, false>(rows, kc, a, rs, ps, b, c, ldc, load, cols);
  }
  if constexpr (kHalf * 2 == kNv && kHalf > 1)
    if (cols <= kHalf * kW) {
      if (cols == kHalf * kW) return tile<kHalf, false>(rows, kc, a, rs, ps, b, c, ldc, load, cols);
      return tile<kHalf, true>(rows, kc, a, rs, ps, b, c, ldc, load, cols);
    }
  return tile<kNv, true>(rows, kc, a, rs, ps, b, c, ldc, load, cols);
}

// C's columns j0 .. j0+nc (C already offset to j0) ← t + Σ over one block of K (p0 .. p0+kc):
// B's block packed at bp (slivers of kc × kNr), A's element (i, p) at A[i·rs + p·ps].
inline void block_product(int64_t M, int64_t nc, int64_t kc, int64_t p0, const float* A, int64_t rs, int64_t ps,
                          const float* bp, float* C, int64_t ldc, bool load) {
  for (int64_t i0 = 0; i0 < M; i0 += kMc) {
    const int64_t i1 = std::min(M, i0 + kMc);
    for (int64_t jr = 0; jr < nc; jr += kNr) {
      const float* b = bp + (jr / kNr) * kc * kNr;
      const int64_t cols = std::min<int64_t>(kNr, nc - jr);
      for (int64_t i = i0; i < i1; i += kMr) {
        const float* a = A + i * rs + p0 * ps;
        float* c = C + i * ldc + jr;
        any_tile(std::min<int64_t>(kMr, i1 - i), kc, a, rs, ps, BRows{b, kNr, false, false, 1.0f}, c, ldc, load, cols);
      }
    }
  }
}

// What beta does before the sum: C ← beta · C unless beta is 0 or 1 (t starts at beta · c); with
// no terms (K = 0) that is the product, zeros for beta = 0. Returns whether there are terms to add.
inline bool prepare_c(int64_t M, int64_t N, int64_t K, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return false;
  if (beta != 0.0f && beta != 1.0f)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] *= beta;
  if (K <= 0 && beta == 0.0f)
    for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
  return K > 0;
}

// Few rows of C and B not transposed: B is read where it lies, each tile loading its rows (masked at
// the last columns) and multiplying them by alpha, instead of packing B first. Packing a block of B
// costs about as much as one pass of tiles over it, so a product of few rows, which passes over B
// only M / kMr times — the step's attention, 32 or 63 rows a product — spent up to half its time
// packing (bench/RESULTS.md). A transposed B has no rows to read, so it is packed whatever M is.
constexpr int64_t kDirectM = 64;

inline void direct_product(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t rs, int64_t ps,
                           const float* B, int64_t ldb, float* C, int64_t ldc, bool load_c) {
  for (int64_t p0 = 0; p0 < K; p0 += kKc) {
    const int64_t kc = std::min(kKc, K - p0);
    for (int64_t j = 0; j < N; j += kNr) {
      const BRows b{B + p0 * ldb + j, ldb, true, alpha != 1.0f, alpha};
      for (int64_t i = 0; i < M; i += kMr)
        any_tile(std::min<int64_t>(kMr, M - i), kc, A + i * rs + p0 * ps, rs, ps, b, C + i * ldc + j, ldc,
                 p0 > 0 || load_c, std::min<int64_t>(kNr, N - j));
    }
  }
}

inline void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                  const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (!prepare_c(M, N, K, beta, C, ldc)) return;
  if (!trans_b && M <= kDirectM)
    return direct_product(M, N, K, alpha, A, trans_a ? 1 : lda, trans_a ? lda : 1, B, ldb, C, ldc, beta != 0.0f);
  float* bp = pack_scratch().grow(std::min(K, kKc) * ((std::min(N, kNc) + kNr - 1) / kNr) * kNr);
  const int64_t rs = trans_a ? 1 : lda, ps = trans_a ? lda : 1;  // a(i, p) = A[i·rs + p·ps]
  for (int64_t j0 = 0; j0 < N; j0 += kNc) {
    const int64_t nc = std::min(kNc, N - j0);
    for (int64_t p0 = 0; p0 < K; p0 += kKc) {
      const int64_t kc = std::min(kKc, K - p0);
      pack_b(trans_b, B, ldb, p0, kc, j0, nc, alpha, bp);
      block_product(M, nc, kc, p0, A, rs, ps, bp, C + j0, ldc, p0 > 0 || beta != 0.0f);
    }
  }
}

// B packed once for several products (every block of K, all N columns): block p0 .. p0+kc at
// out + p0 · Npad, Npad = N rounded up to kNr, in slivers of kc × kNr.
inline int64_t packed_size(int64_t K, int64_t N) { return std::max<int64_t>(K, 0) * ((std::max<int64_t>(N, 0) + kNr - 1) / kNr) * kNr; }

inline void pack_b_whole(bool trans_b, int64_t K, int64_t N, float alpha, const float* B, int64_t ldb, float* out) {
  const int64_t npad = (N + kNr - 1) / kNr * kNr;
  for (int64_t p0 = 0; p0 < K; p0 += kKc) pack_b(trans_b, B, ldb, p0, std::min(kKc, K - p0), 0, N, alpha, out + p0 * npad);
}

// sgemm with B (and alpha) from pack_b_whole of n_packed ≥ N columns, of which it reads the first
// N: the same bits as sgemm with those columns of B and that alpha.
inline void sgemm_packed(bool trans_a, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* bp,
                         int64_t n_packed, float beta, float* C, int64_t ldc) {
  if (!prepare_c(M, N, K, beta, C, ldc)) return;
  const int64_t rs = trans_a ? 1 : lda, ps = trans_a ? lda : 1, npad = (n_packed + kNr - 1) / kNr * kNr;
  for (int64_t p0 = 0; p0 < K; p0 += kKc)
    block_product(M, N, std::min(kKc, K - p0), p0, A, rs, ps, bp + p0 * npad, C, ldc, p0 > 0 || beta != 0.0f);
}

}  // namespace hg::cpu::HG_CPU_LEVEL::gemm_detail
