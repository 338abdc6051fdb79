// cuda/attention.cpp — the host side of attention's GPU kernels: the scores' scale and mask in
// place (cuda/attention.cu), run between the cuBLAS gemms and the row kernels of
// ops/attention.cpp's materialized path; and FlashAttention-2's tiled forward and backward
// (cuda/attention_tiled_*.cu), which never hold a (Tq, Tk) buffer.
#include "cuda/device_ops.h"
#include "cuda/runtime.h"

namespace hg::cuda {

namespace {

// The mask's kind for scores of dtype t: none, boolean (b8) or additive (t); anything else throws.
int mask_kind(std::string_view op, const Tensor& mask, DType t) {
  if (!mask.defined()) return kMaskNone;
  require_device(op, mask, "mask");
  if (mask.dtype() == DType::b8) return kMaskBool;
  if (mask.dtype() == t) return kMaskAdditive;
  fail(op, "the mask {} must be b8 (true = may attend) or additive with the scores' dtype {}", mask.describe(),
       dtype_name(t));
}

}  // namespace

void attention_scale_mask(const Tensor& S, double scale_by, bool causal, const Tensor& mask) {
  constexpr std::string_view op = "attention_scale_mask (cuda)";
  require_float(op, S, "scores S");
  if (S.dim() < 2) fail(op, "the scores {} need two dimensions (..., Tq, Tk)", S.describe());
  if (!S.is_contiguous())
    fail(op, "the scores {} must be contiguous (the gemm's output); written in place", S.describe());
  const int kind = mask_kind(op, mask, S.dtype());
  const Shape sm = mask.defined() ? broadcast_strides(op, mask, S.shape()) : Shape(S.shape().size(), 0);
  const Geometry<1> g = geometry<1>(op, S.shape(), {&sm});
  HG_CUDA_CHECK(launch_scale_mask(elem(S.dtype()), S.raw_data(), S.size(-2), S.size(-1), scale_by, causal, kind,
                                  mask.defined() ? mask.raw_data() : nullptr, g, stream()));
}

void attention_zero_hidden(const Tensor& X, bool causal, const Tensor& mask, const Tensor& flags) {
  constexpr std::string_view op = "attention_zero_hidden (cuda)";
  require_float(op, X, "weights or their gradient X");
  require_float(op, flags, "row flags");
  require_same_dtype(op, X, flags);
  if (X.dim() < 2 || flags.dim() != X.dim() || !X.is_contiguous() ||
      Shape(flags.shape().begin(), flags.shape().end() - 1) != Shape(X.shape().begin(), X.shape().end() - 1))
    fail(op, "X {} must be contiguous (batch..., Tq, Tk) and the flags {} (batch..., Tq, w)", X.describe(),
         flags.describe());
  const int kind = mask_kind(op, mask, X.dtype());
  const Shape rows(X.shape().begin(), X.shape().end() - 1);  // (batch..., Tq)
  Shape row_strides(rows.size(), 0);  // the mask's strides over (batch..., Tq); sj along keys
  int64_t sj = 0;
  if (mask.defined()) {
    const Shape sm = broadcast_strides(op, mask, X.shape());
    row_strides.assign(sm.begin(), sm.end() - 1);
    sj = sm.back();
  }
  const Geometry<1> g = geometry<1>(op, rows, {&row_strides});
  const Tensor f = dense(flags);
  HG_CUDA_CHECK(launch_attention_zero_hidden(elem(X.dtype()), X.raw_data(), f.raw_data(), flags.size(-1), X.size(-2),
                                             X.size(-1), causal, kind, mask.defined() ? mask.raw_data() : nullptr, sj,
                                             g, stream()));
}

Tensor attention_finite_part(const Tensor& x) {
  constexpr std::string_view op = "attention_finite_part (cuda)";
  require_float(op, x, "input x");
  Tensor out = empty(x.shape(), x.dtype(), Device::cuda);
  const Shape so = out.strides(), sx = x.strides();
  const Geometry<2> g = geometry<2>(op, x.shape(), {&so, &sx});
  HG_CUDA_CHECK(launch_attention_finite_part(elem(x.dtype()), out.raw_data(), x.raw_data(), g, stream()));
  return out;
}

// ---------------------------------------------------------------- tiled attention

namespace {

constexpr std::string_view kTiled = "attention_tiled (cuda)";

Shape batch_and(const Shape& batch, std::initializer_list<int64_t> last) {
  Shape s = batch;
  s.insert(s.end(), last);
  return s;
}

// Checks q, k, v and the mask (an Error naming the op, the shapes and the fix) and describes the
// problem to the kernels; *batch = the batch shape.
TiledAttention tiled_problem(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                             bool causal, Shape* batch) {
  require_float(kTiled, q, "query q");
  require_float(kTiled, k, "key k");
  require_float(kTiled, v, "value v");
  require_same_dtype(kTiled, q, k);
  require_same_dtype(kTiled, q, v);
  const auto batch_of = [](const Tensor& x) { return Shape(x.shape().begin(), x.shape().end() - 2); };
  if (q.dim() < 2 || k.dim() != q.dim() || v.dim() != q.dim() || batch_of(k) != batch_of(q) ||
      batch_of(v) != batch_of(q))
    fail(kTiled, "q {}, k {} and v {} must be (batch..., T, d) with one batch shape (expand them to it first)",
         q.describe(), k.describe(), v.describe());
  *batch = batch_of(q);
  if (k.size(-1) != q.size(-1))
    fail(kTiled, "q {} and k {} must have the same head dim dk (their last dimension)", q.describe(), k.describe());
  if (v.size(-2) != k.size(-2))
    fail(kTiled, "k {} and v {} must have as many rows (keys Tk)", k.describe(), v.describe());
  if (q.size(-1) > kAttentionMaxHead || v.size(-1) > kAttentionMaxHead)
    fail(kTiled,
         "head dims dk = {} (q {}) and dv = {} (v {}): the tiled kernels hold at most {} per row in shared memory; "
         "use the materialized path (AttentionPath::materialized) for larger heads",
         q.size(-1), q.describe(), v.size(-1), v.describe(), kAttentionMaxHead);
  TiledAttention a;
  a.slices = shape_numel(*batch);
  a.Tq = q.size(-2), a.Tk = k.size(-2), a.dk = q.size(-1), a.dv = v.size(-1);
  a.scale = scale;
  a.causal = causal;
  a.mask_kind = mask_kind(kTiled, mask, q.dtype());
  if (mask.defined()) {  // read through its strides: a broadcast dimension is stride 0, never expanded
    const Shape ms = broadcast_strides(kTiled, mask, batch_and(*batch, {a.Tq, a.Tk}));
    const Shape batch_strides(ms.begin(), ms.end() - 2);
    a.mask = mask.raw_data();
    a.mask_si = ms[ms.size() - 2];
    a.mask_sj = ms.back();
    a.mask_batch = geometry<1>(kTiled, *batch, {&batch_strides});
  }
  return a;
}

// t is a CUDA tensor of q's dtype and the given shape, or an Error.
void require_shape(const Tensor& t, const char* what, const Tensor& q, const Shape& want) {
  require_float(kTiled, t, what);
  require_same_dtype(kTiled, q, t);
  if (t.shape() != want)
    fail(kTiled, "the {} {} must have shape {} (from q {} and v)", what, t.describe(), shape_str(want), q.describe());
}

void* data_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

}  // namespace

Tensor attention_tiled_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                               bool causal, Tensor* L) {
  Shape batch;
  const TiledAttention a = tiled_problem(q, k, v, mask, scale, causal, &batch);
  Tensor O = empty(batch_and(batch, {a.Tq, a.dv}), q.dtype(), Device::cuda);  // (batch..., Tq, dv)
  Tensor lse = empty(batch_and(batch, {a.Tq}), q.dtype(), Device::cuda);      // (batch..., Tq)
  const Tensor qc = dense(q), kc = dense(k), vc = dense(v);
  HG_CUDA_CHECK(launch_attention_tiled_forward(elem(q.dtype()), a, qc.raw_data(), kc.raw_data(), vc.raw_data(),
                                               O.raw_data(), lse.raw_data(), stream()));
  if (L) *L = lse;
  return O;
}

Tensor attention_tiled_tangent(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                               bool causal, const Tensor& dq, const Tensor& dk, const Tensor& dv, Tensor* L,
                               Tensor* Odot) {
  Shape batch;
  const TiledAttention a = tiled_problem(q, k, v, mask, scale, causal, &batch);
  if (dq.defined()) require_shape(dq, "query tangent", q, batch_and(batch, {a.Tq, a.dk}));
  if (dk.defined()) require_shape(dk, "key tangent", q, batch_and(batch, {a.Tk, a.dk}));
  if (dv.defined()) require_shape(dv, "value tangent", q, batch_and(batch, {a.Tk, a.dv}));
  Tensor O = empty(batch_and(batch, {a.Tq, a.dv}), q.dtype(), Device::cuda);   // (batch..., Tq, dv)
  Tensor Od = empty(batch_and(batch, {a.Tq, a.dv}), q.dtype(), Device::cuda);  // (batch..., Tq, dv)
  Tensor lse = empty(batch_and(batch, {a.Tq}), q.dtype(), Device::cuda);       // (batch..., Tq)
  const Tensor qc = dense(q), kc = dense(k), vc = dense(v);
  const Tensor dqc = dq.defined() ? dense(dq) : Tensor(), dkc = dk.defined() ? dense(dk) : Tensor(),
               dvc = dv.defined() ? dense(dv) : Tensor();
  HG_CUDA_CHECK(launch_attention_tiled_tangent(elem(q.dtype()), a, qc.raw_data(), kc.raw_data(), vc.raw_data(),
                                               data_or_null(dqc), data_or_null(dkc), data_or_null(dvc), O.raw_data(),
                                               Od.raw_data(), lse.raw_data(), stream()));
  if (L) *L = lse;
  if (Odot) *Odot = Od;
  return O;
}

void attention_tiled_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                              bool causal, const Tensor& O, const Tensor& L, const Tensor& dO, Tensor* dQ, Tensor* dK,
                              Tensor* dV, Tensor* dS_out) {
  Shape batch;
  const TiledAttention a = tiled_problem(q, k, v, mask, scale, causal, &batch);
  require_shape(O, "forward's output O", q, batch_and(batch, {a.Tq, a.dv}));
  require_shape(L, "forward's log-sum-exp L", q, batch_and(batch, {a.Tq}));
  require_shape(dO, "output gradient dO", q, batch_and(batch, {a.Tq, a.dv}));
  const auto result = [&](bool asked, std::initializer_list<int64_t> last) {
    return asked ? empty(batch_and(batch, last), q.dtype(), Device::cuda) : Tensor();
  };
  Tensor gq = result(dQ, {a.Tq, a.dk}), gk = result(dK, {a.Tk, a.dk}), gv = result(dV, {a.Tk, a.dv});
  Tensor ds = result(dS_out, {a.Tq, a.Tk});
  Tensor D = result(true, {a.Tq});  // rowsum(dO ∘ O), scratch
  const Tensor qc = dense(q), kc = dense(k), vc = dense(v), Oc = dense(O), Lc = dense(L), dOc = dense(dO);
  HG_CUDA_CHECK(launch_attention_tiled_backward(elem(q.dtype()), a, qc.raw_data(), kc.raw_data(), vc.raw_data(),
                                                Oc.raw_data(), Lc.raw_data(), dOc.raw_data(), D.raw_data(),
                                                data_or_null(gq), data_or_null(gk), data_or_null(gv),
                                                data_or_null(ds), stream()));
  if (dQ) *dQ = gq;
  if (dK) *dK = gk;
  if (dV) *dV = gv;
  if (dS_out) *dS_out = ds;
}

Tensor attention_tiled_mask_grad(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                                 bool causal, const Tensor& O, const Tensor& L, const Tensor& dO) {
  if (!mask.defined() || mask.dtype() != q.dtype())
    fail(kTiled, "the mask's gradient needs an additive mask in q's dtype {}; got {}", dtype_name(q.dtype()),
         mask.defined() ? mask.describe() : std::string("none"));
  const Tensor md = dense(mask);  // read where dM is written: entry (b, i, j) at one offset in both
  Shape batch;
  const TiledAttention a = tiled_problem(q, k, v, md, scale, causal, &batch);
  require_shape(O, "forward's output O", q, batch_and(batch, {a.Tq, a.dv}));
  require_shape(L, "forward's log-sum-exp L", q, batch_and(batch, {a.Tq}));
  require_shape(dO, "output gradient dO", q, batch_and(batch, {a.Tq, a.dv}));
  // The slices as (the mask's batch entries) × (the slices that read each): along a batch dimension
  // the mask has, the entry's index; along one it broadcasts over, the repeat's.
  const size_t nb = batch.size();
  const int64_t lead = static_cast<int64_t>(nb) + 2 - md.dim();  // batch dimensions the mask lacks
  Shape entry_size(nb, 1), entry_stride(nb, 0), rep_size(nb, 1), rep_stride(nb, 0);
  int64_t slice_stride = 1;  // of batch dimension d, in slices (row-major)
  for (size_t d = nb; d-- > 0; slice_stride *= batch[d]) {
    const int64_t md_d = static_cast<int64_t>(d) - lead;
    const bool has = md_d >= 0 && md.size(md_d) == batch[d];
    (has ? entry_size : rep_size)[d] = batch[d];
    (has ? entry_stride : rep_stride)[d] = slice_stride;
  }
  const Geometry<1> entry = geometry<1>(kTiled, entry_size, {&entry_stride});
  const Geometry<1> reps = geometry<1>(kTiled, rep_size, {&rep_stride});
  Tensor dM = empty(mask.shape(), q.dtype(), Device::cuda);
  if (dM.numel() == 0) return dM;
  Tensor D = empty(batch_and(batch, {a.Tq}), q.dtype(), Device::cuda);  // rowsum(dO ∘ O), scratch
  const Tensor qc = dense(q), kc = dense(k), vc = dense(v), Oc = dense(O), Lc = dense(L), dOc = dense(dO);
  HG_CUDA_CHECK(launch_attention_tiled_mask_grad(elem(q.dtype()), a, qc.raw_data(), kc.raw_data(), vc.raw_data(),
                                                 Oc.raw_data(), Lc.raw_data(), dOc.raw_data(), D.raw_data(),
                                                 dM.raw_data(), entry, reps, a.mask_si != 0, a.mask_sj != 0,
                                                 stream()));
  return dM;
}

}  // namespace hg::cuda
