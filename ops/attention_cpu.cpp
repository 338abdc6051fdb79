// ops/attention_cpu.cpp — attention's materialized CPU kernels: the op-by-op path's scale and
// mask, and the fused per-slice forward and backward (the mask rule: ops/attention_cpu.h).
//
// The same formulas, one batch slice (one sequence and head) at a time: the slice's gemms and
// rows run back to back on one thread while its (Tq, Tk) block is in cache, the scale rides in
// gemm's alpha (C = alpha · A B rounds as (A B) · scale does), a hidden key is never
// exponentiated, and dP lives in a per-thread scratch block instead of a (batch..., Tq, Tk)
// tensor. Slices are independent, so they are spread over the threads (engine/strided.h).
// attention() runs these; attention_trace keeps the op-by-op path (ops/attention.cpp), and the tests check
// the two against each other (tests/ops/test_attention.cpp, tests/cpu/test_parallel.cpp). How much faster
// the fused kernels are: bench/RESULTS.md, "What the step spends its time on, and what changed".

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/row_rules.h"
#include "engine/dispatch.h"
#include "engine/strided.h"
#include "ops/attention_cpu.h"
#include "ops/attention_paths.h"
#include "ops/broadcast.h"
#include "ops/rope_rows.h"

namespace hg::attention_detail {

namespace {

// The op-by-op path's scale and mask, over every slice of S.
template <typename T>
void scale_and_mask_slices(const Problem& p, Tensor& S) {
  const Shape ms = mask_strides(p, S.shape());
  const T scale = static_cast<T>(p.scale);
  const int64_t nb = shape_numel(p.batch), Tq = p.Tq, Tk = p.Tk;
  T* row = S.data_ptr<T>();
  std::vector<int64_t> idx(p.batch.size(), 0);
  int64_t mb = 0;  // the mask's offset for this batch slice
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t i = 0; i < Tq; ++i, row += Tk) {
      const MaskRule<T> rule = mask_rule<T>(p, mb, ms, i);
      for (int64_t j = 0; j < Tk; ++j) row[j] = rule(row[j] * scale, j);
    }
    for (size_t d = p.batch.size(); d-- > 0;) {  // odometer over the batch dimensions
      mb += ms[d];
      if (++idx[d] < p.batch[d]) break;
      mb -= ms[d] * p.batch[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

void scale_and_mask_cpu(const Problem& p, Tensor& S) {
  dispatch_float(S.dtype(), "attention", [&]<typename T>() { scale_and_mask_slices<T>(p, S); });
}

void zero_hidden_in_nan_rows_cpu(const Problem& p, const Tensor& X, const Tensor& flags_in) {
  const Shape ms = mask_strides(p, X.shape());
  const Tensor flags = flags_in.contiguous();
  const int64_t nb = shape_numel(p.batch), Tq = p.Tq, Tk = p.Tk, w = flags.size(-1);
  dispatch_float(X.dtype(), "attention", [&]<typename T>() {
    T* x = X.data_ptr<T>();
    const T* f = flags.data_ptr<const T>();
    for (int64_t b = 0; b < nb; ++b) {
      int64_t mb = 0, rest = b;  // the mask's offset for this batch slice
      for (size_t d = p.batch.size(); d-- > 0; rest /= p.batch[d]) mb += (rest % p.batch[d]) * ms[d];
      for (int64_t i = 0; i < Tq; ++i) {
        const T* fr = f + (b * Tq + i) * w;
        if (!cpu::has_nan(fr, w)) continue;
        zero_hidden(mask_rule<T>(p, mb, ms, i), x + (b * Tq + i) * Tk, 0, Tk);
      }
    }
  });
}

Tensor finite_part_cpu(const Tensor& x) {
  const Tensor c = x.contiguous();
  const int64_t d = c.dim() ? c.size(-1) : 1, rows = d ? c.numel() / d : 0;
  Tensor out;
  dispatch_float(x.dtype(), "attention backward", [&]<typename T>() {
    if (!any_non_finite(c.data_ptr<const T>(), d, rows, d)) return;
    out = empty(x.shape(), x.dtype());
    finite_part(c.data_ptr<const T>(), d, rows, d, out.data_ptr<T>());
  });
  return out.defined() ? out : x;
}

namespace {

// One slice's rows: S (Tq, Tk) holds scale · Q Kᵀ; make it P in place. The mask rule (above)
// sets the scores; then softmax's own row (cpu/row_rules.h) over the visible keys, so P is
// softmax()'s bit for bit; 0 where hidden, a row with nothing visible all 0. Keys past the causal
// limit are never exponentiated. Rows i_begin..i_end−1 of the slice (a causal row block, below).
template <typename T>
void softmax_slice(const Problem& p, T* S, int64_t mask_off, const Shape& ms, int64_t i_begin, int64_t i_end) {
  const int64_t Tk = p.Tk;
  for (int64_t i = i_begin; i < i_end; ++i) {
    T* row = S + i * Tk;
    const MaskRule<T> rule = mask_rule<T>(p, mask_off, ms, i);
    const int64_t visible = rule.visible;
    if (p.mask.defined())
      for (int64_t j = 0; j < visible; ++j) row[j] = rule(row[j], j);
    const cpu::Row kind = cpu::softmax_row(row, row, visible);
    std::fill(row + visible, row + Tk, T(0));
    // A NaN row: a hidden key's weight is 0 · NaN by the arithmetic (ops/attention.h).
    if (kind == cpu::Row::nan) zero_hidden(rule, row, 0, visible);
  }
}

// Causal row blocks. Under the causal rule query i sees keys 0..min(Tk, i + 1) − 1 only, so a slice
// is done in blocks of queries, each block's gemms over the keys its last query sees: the scores
// above the diagonal's blocks are never computed (nor their share of P V, dO Vᵀ, dS K, dSᵀ Q) —
// at T = 63 in blocks of 32, 75 % of the full products; at T = 256, 56 %. Without the causal
// rule, one block of all Tq rows over all Tk keys.
struct RowBlocks {
  int64_t size, Tq, Tk;
  bool causal;
  int64_t count() const { return (Tq + size - 1) / size; }
  int64_t begin(int64_t b) const { return b * size; }
  int64_t rows(int64_t b) const { return std::min(size, Tq - b * size); }
  int64_t keys(int64_t b) const { return causal ? std::min(Tk, b * size + rows(b)) : Tk; }
  int64_t all_keys() const { return count() ? keys(count() - 1) : 0; }  // the last block's: every block's are a prefix
};

// `one_block`: all rows at once whatever the rule (the backward asked for the full dS).
RowBlocks row_blocks(const Problem& p, bool one_block = false) {
  const bool causal = p.causal && !one_block;
  // Blocks of 32 queries: smaller blocks skip more of the triangle, but OpenBLAS's gemms lose
  // speed on thinner matrices; 32 was best or tied at T = 63 and 256 (bench/RESULTS.md, "Causal
  // row blocks in the fused attention").
  const int64_t size = !causal ? std::max<int64_t>(p.Tq, 1) : 32;
  return {size, p.Tq, p.Tk, causal};
}

}  // namespace

bool fits_blas(const Problem& p) {
  for (int64_t v : {p.Tq, p.Tk, p.dk, p.dv})
    if (v > INT_MAX / 4) return false;
  return true;
}

namespace {

// A slice's rows as gemm reads or writes them: the first row, and rows `ld` apart.
template <typename T>
struct SliceRows {
  T* data = nullptr;
  int64_t ld = 0;
};

// A SliceReader (ops/attention_paths.h) at work for T. Plain: a slice of Q or K is read in place, and
// its gradient gathered in place. Rotated: with the angle tables of θ (the read) and, for a
// backward, of −θ (R_θᵀ, the gradients' way back), one row per position, a slice is rotated into a
// per-thread block as it is read, and its gradient gathered in another block, rotated back into
// place when the slice is done.
template <typename T>
class SliceReading {
 public:
  SliceReading(const Problem& p, const SliceReader& reader, bool backward) {
    if (!reader.rotate) return;
    half_ = p.dk / 2;
    const int64_t positions = std::max(p.Tq, p.Tk);
    rope_detail::tables<T>(positions, half_, 0, reader.base, +1, c_, s_);
    if (backward) rope_detail::tables<T>(positions, half_, 0, reader.base, -1, back_c_, back_s_);
  }
  // `rows` rows of a slice as the kernels read them: x itself, or rotated by θ into `block`.
  SliceRows<const T> read(SliceRows<const T> x, int64_t rows, std::vector<T>& block) const {
    if (!rotates()) return x;
    block.resize(static_cast<size_t>(rows * 2 * half_));
    rope_detail::rotate_rows(x.data, x.ld, block.data(), 2 * half_, c_.data(), s_.data(), rows, half_);
    return {block.data(), 2 * half_};
  }
  // Where the gradient of `rows` rows read from a slice gathers: in place at `to`, or in `block`.
  SliceRows<T> gather(SliceRows<T> to, int64_t rows, std::vector<T>& block) const {
    if (!rotates()) return to;
    block.resize(static_cast<size_t>(rows * 2 * half_));
    return {block.data(), 2 * half_};
  }
  // The gathered gradient on its way out to `to`: already there, or rotated back by −θ from `block`.
  void send_back(const std::vector<T>& block, int64_t rows, SliceRows<T> to) const {
    if (!rotates()) return;
    rope_detail::rotate_rows(block.data(), 2 * half_, to.data, to.ld, back_c_.data(), back_s_.data(), rows, half_);
  }

 private:
  bool rotates() const { return half_ > 0; }
  std::vector<T> c_, s_, back_c_, back_s_;  // (positions, d/2) each
  int64_t half_ = 0;
};

template <typename T>
void zero_rows(T* x, int64_t ld, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) std::fill(x + r * ld, x + r * ld + cols, T(0));
}

}  // namespace

// forward: for each slice, S = scale · Q Kᵀ (gemm), P = softmax(S + mask) (rows), O = P V (gemm),
// by causal row blocks (RowBlocks, above); the slice's Q and K as `read` reads them (rotated: into a
// per-thread block, the rotated tensors never made).
// Returns P (batch..., Tq, Tk), contiguous, and O (batch..., Tq, dv): contiguous, or in the merged
// layout that p.merged_output asks for.
Forward fused_forward(const Problem& p, const SliceReader& read) {
  Forward f;
  const Shape scores = with_last2(p.batch, p.Tq, p.Tk);
  f.P = empty(scores, p.q.dtype());
  if (p.merged_output && p.batch.size() >= 2) {  // (batch[0], Tq, batch[1..], dv), read as (batch..., Tq, dv)
    Shape phys{p.batch[0], p.Tq};
    phys.insert(phys.end(), p.batch.begin() + 1, p.batch.end());
    phys.push_back(p.dv);
    std::vector<int64_t> order{0};  // batch[0], then batch[1..] (physical 2..), then Tq (1), then dv
    for (size_t d = 1; d < p.batch.size(); ++d) order.push_back(static_cast<int64_t>(d) + 1);
    order.push_back(1);
    order.push_back(static_cast<int64_t>(phys.size()) - 1);
    f.O = empty(phys, p.q.dtype()).permute(order);
  } else {
    f.O = empty(with_last2(p.batch, p.Tq, p.dv), p.q.dtype());
  }
  const int64_t nb = shape_numel(p.batch), Tq = p.Tq, Tk = p.Tk, dk = p.dk, dv = p.dv;
  Shape ms;
  const Slices<const void> mask = mask_slices(p, scores, ms);
  dispatch_float(p.q.dtype(), "attention", [&]<typename T>() {
    Tensor qt = p.q, kt = p.k, vt = p.v;
    const Slices<T> Q = slices_of<T>(qt, p.batch), K = slices_of<T>(kt, p.batch), V = slices_of<T>(vt, p.batch);
    T* P = f.P.data_ptr<T>();
    const Slices<T> O = slices_of<T>(f.O, p.batch);  // in place: its rows are unit-stride and apart
    const T scale = static_cast<T>(p.scale);
    const RowBlocks rb = row_blocks(p);
    const SliceReading<T> reading(p, read, false);
    parallel_for(nb, Tq * Tk * (dk + dv + 8), [&](int64_t begin, int64_t end) {
      PackedB<T> k_panel;  // scale · Kᵀ of a slice, packed once for all its row blocks (each reads the keys it sees)
      std::vector<T> q_block, k_block;  // a rotated read's Q and K
      for (int64_t t = begin; t < end; ++t) {
        T* Pt = P + t * Tq * Tk;
        const SliceRows<const T> Qs = reading.read({Q.data + Q.offset(t), Q.ld}, Tq, q_block),
                                 Ks = reading.read({K.data + K.offset(t), K.ld}, rb.all_keys(), k_block);
        k_panel.pack(true, dk, rb.all_keys(), scale, Ks.data, Ks.ld);
        for (int64_t blk = 0; blk < rb.count(); ++blk) {  // causal row blocks (above); one block otherwise
          const int64_t i0 = rb.begin(blk), rows = rb.rows(blk), kv = rb.keys(blk);
          T* Pb = Pt + i0 * Tk;  // S, then P: rows i0.., keys 0..kv−1 (softmax_slice zeroes the rest)
          k_panel.gemm_first(kv, false, rows, Qs.data + i0 * Qs.ld, Qs.ld, T(0), Pb, Tk);
          softmax_slice<T>(p, Pt, p.mask.defined() ? mask.offset(t) : 0, ms, i0, i0 + rows);
          gemm<T>(false, false, rows, dv, kv, T(1), Pb, Tk, V.data + V.offset(t), V.ld,
                  O.data + O.offset(t) + i0 * O.ld, O.ld);
        }
      }
    });
  });
  return f;
}

namespace {

// The gradients a backward writes, each where its writer says: the given view, or a fresh
// (contiguous) tensor; and a live mask's full dS.
Backward gradient_buffers(const Problem& p, const Needs& need, bool live_mask, const GradientWriters& write) {
  const DType dt = p.q.dtype();
  Backward b;
  auto buffer = [&](bool needed, const SliceWriter& w, int64_t rows, int64_t cols) {
    if (!needed) return Tensor();
    return w.view.defined() ? w.view : empty(with_last2(p.batch, rows, cols), dt);
  };
  b.dV = buffer(need.v, write.dV, p.Tk, p.dv);
  b.dQ = buffer(need.q, write.dQ, p.Tq, p.dk);
  b.dK = buffer(need.k, write.dK, p.Tk, p.dk);
  if (live_mask) b.dS = empty(with_last2(p.batch, p.Tq, p.Tk), dt);
  return b;
}

}  // namespace

// backward, for each slice: dV = Pᵀ dO, dP = dO Vᵀ (scratch), dS = P ∘ (dP − rowsum(P ∘ dP)) in
// place, dQ = scale · dS K, dK = scale · dSᵀ Q (all gemms but the row rule). A hidden key has
// P = 0, so dS = 0 there, as in attention_backward. By causal row blocks (RowBlocks, above), each
// over the keys its queries see; dV and dK then sum the blocks' products (zeroed first). When the
// full dS is asked for (a live additive mask), one block. Q and K are read as the forward read
// them, and dQ and dK gathered and sent back the reader's way (rotated: by −θ, R_θᵀ, from a
// per-thread block: the gradients of the unrotated inputs).
Backward fused_backward(const Problem& p, const Tensor& P, const Tensor& dO_in, const Needs& need, bool live_mask,
                        const SliceReader& read, const GradientWriters& write) {
  const bool need_q = need.q, need_k = need.k, need_v = need.v;
  Backward b = gradient_buffers(p, need, live_mask, write);
  const DType dt = p.q.dtype();
  const int64_t nb = shape_numel(p.batch), Tq = p.Tq, Tk = p.Tk, dk = p.dk, dv = p.dv;
  const bool row_rule = need_q || need_k || live_mask;
  Shape ms;
  const Slices<const void> mask = mask_slices(p, with_last2(p.batch, Tq, Tk), ms);
  dispatch_float(dt, "attention backward", [&]<typename T>() {
    Tensor qt = p.q, kt = p.k, vt = p.v, dOt = dO_in, Pt = P.contiguous();
    const Slices<T> Q = slices_of<T>(qt, p.batch), K = slices_of<T>(kt, p.batch), V = slices_of<T>(vt, p.batch),
                    dO = slices_of<T>(dOt, p.batch);
    // The gradients' slices: fresh, or the writers' views, whose rows slices_of takes in place.
    const Slices<T> dV = need_v ? slices_of<T>(b.dV, p.batch) : Slices<T>{},
                    dQ = need_q ? slices_of<T>(b.dQ, p.batch) : Slices<T>{},
                    dK = need_k ? slices_of<T>(b.dK, p.batch) : Slices<T>{};
    const T* Pd = Pt.data_ptr<const T>();
    const T scale = static_cast<T>(p.scale);
    T* dSd = live_mask ? b.dS.data_ptr<T>() : nullptr;  // the full dS, for a mask that requires grad
    const RowBlocks rb = row_blocks(p, live_mask);  // the full dS: one block
    // Several blocks add into dV and dK, zeroed first — as does one block that sees only some of
    // the keys (Tq < Tk): the keys no query sees get zero gradient.
    const T beta = rb.count() > 1 || rb.keys(0) < Tk ? T(1) : T(0);
    const SliceReading<T> reading(p, read, true);
    parallel_for(nb, Tq * Tk * (2 * dk + 2 * dv + 4), [&](int64_t begin, int64_t end) {
      std::vector<T> scratch(static_cast<size_t>(row_rule && !live_mask ? Tq * Tk : 0));  // (Tq, Tk): dP, then dS
      std::vector<T> q_finite;  // (Tq, dk): a slice's Q with a NaN or ±inf, read by dK as 0 there
      std::vector<T> q_block, k_block, dq_block, dk_block;  // a rotated read's Q and K; dQ and dK before −θ
      PackedB<T> v_panel;  // a slice's Vᵀ, packed once for dP = dO Vᵀ in all its row blocks
      for (int64_t t = begin; t < end; ++t) {
        const T* Ps = Pd + t * Tq * Tk;
        const T* dOs = dO.data + dO.offset(t);
        const T* Vs = V.data + V.offset(t);
        T* dVs = need_v ? dV.data + dV.offset(t) : nullptr;
        // Q and K as the reader reads them; dQ and dK gathered where it says, in the writers' slices
        // or in blocks it sends back there when the slice is done (below).
        SliceRows<const T> Qs{Q.data + Q.offset(t), Q.ld}, Ks{K.data + K.offset(t), K.ld};
        if (row_rule) Qs = reading.read(Qs, Tq, q_block), Ks = reading.read(Ks, Tk, k_block);
        const SliceRows<T> dQ_out{dQ.data + dQ.offset(t), dQ.ld}, dK_out{dK.data + dK.offset(t), dK.ld};
        const SliceRows<T> dQs = need_q ? reading.gather(dQ_out, Tq, dq_block) : SliceRows<T>{},
                           dKs = need_k ? reading.gather(dK_out, Tk, dk_block) : SliceRows<T>{};
        if (beta != T(0)) {
          if (dVs) zero_rows(dVs, dV.ld, Tk, dv);
          if (dKs.data) zero_rows(dKs.data, dKs.ld, Tk, dk);
        }
        T* dS = live_mask ? dSd + t * Tq * Tk : scratch.data();
        const int64_t mask_off = p.mask.defined() ? mask.offset(t) : 0;
        const T* Qk = Qs.data;  // as dK = dSᵀ Q reads it: a NaN or ±inf of Q as 0 (the NaN rule)
        int64_t qk_ld = Qs.ld;
        finite_queries_for_dk(need_k, &Qk, &qk_ld, Tq, dk, q_finite);
        if (row_rule) v_panel.pack(true, dv, rb.all_keys(), T(1), Vs, V.ld);
        for (int64_t blk = 0; blk < rb.count(); ++blk) {
          const int64_t i0 = rb.begin(blk), nr = rb.rows(blk), kv = rb.keys(blk);
          const T* Pb = Ps + i0 * Tk;
          const T* dOb = dOs + i0 * dO.ld;
          if (need_v) gemm<T>(true, false, kv, dv, nr, T(1), Pb, Tk, dOb, dO.ld, dVs, dV.ld, beta);
          if (!row_rule) continue;
          T* dSb = dS + i0 * Tk;  // rows i0.., keys 0..kv−1
          v_panel.gemm_first(kv, false, nr, dOb, dO.ld, T(0), dSb, Tk);
          for (int64_t i = 0; i < nr; ++i) {  // the row rule, over the block's keys (P is 0 past the visible ones)
            T* r = dSb + i * Tk;
            const T D = cpu::row_rule(Pb + i * Tk, r, kv);  // cpu/row_rules.h
            // A NaN row: dS = 0 · (dP − NaN) at its hidden keys must be 0 (ops/attention.h).
            if (D != D) zero_hidden(mask_rule<T>(p, mask_off, ms, i0 + i), r, 0, kv);
          }
          if (need_q) gemm<T>(false, false, nr, dk, kv, scale, dSb, Tk, Ks.data, Ks.ld, dQs.data + i0 * dQs.ld, dQs.ld);
          if (need_k) gemm<T>(true, false, kv, dk, nr, scale, dSb, Tk, Qk + i0 * qk_ld, qk_ld, dKs.data, dKs.ld, beta);
        }
        if (need_q) reading.send_back(dq_block, Tq, dQ_out);
        if (need_k) reading.send_back(dk_block, Tk, dK_out);
      }
    });
  });
  return b;
}

}  // namespace hg::attention_detail
