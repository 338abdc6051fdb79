// ops/embedding.cpp — embedding, a gather of rows, and its backward, the matching scatter-add
// (recorded as an op of its own under create_graph).
#include <fmt/format.h>

#include "cuda/ops.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "ops/device.h"
#include "ops/indexing.h"
#include "ops/registry.h"

namespace hg {

// forward:  out[p, :] = weight[indices[p], :]          weight (V, d), indices (...), out (..., d)
// backward: dweight[v, :] = sum over p with indices[p] = v of g[p, :]
// — a row read k times receives the sum of its k gradients (scatter-add, `+=`: rows fan out).
// Saves the indices (i64), which say where each gradient row goes; the weight is not needed.
// tangent: linear in the weight, ȯ[p, :] = Ẇ[indices[p], :] = embedding(Ẇ, indices).
constexpr OpDef kEmbedding{.name = "embedding", .saves = {{"indices", "where each gradient row goes"}},
                           .derivation = "ops/embedding.cpp", .tangent = "ȯ = embedding(Ẇ, indices)"};
struct EmbeddingSaved { static constexpr SavedSlot indices = kEmbedding.slot("indices"); };

namespace {

// Under create_graph, embedding's gradient dweight (already summed by the kernel) is recorded as
// an op of g. It is linear in g: dweight[v] = Σ_{p: idx[p] = v} g[p], so its own backward reads
// row idx[p] of the incoming gradient for each position p — embedding itself. Saves the indices.
// Its tangent, linear in g again, is the same scatter-add of ġ.
constexpr OpDef kEmbeddingBackward{.name = "embedding_backward",
                                   .saves = {{"indices", "its gradient is embedding itself"}},
                                   .derivation = "ops/embedding.cpp", .from_backward = true,
                                   .tangent = "the same scatter-add of ġ"};
struct EmbeddingBackwardSaved { static constexpr SavedSlot indices = kEmbeddingBackward.slot("indices"); };
Tensor scatter_rows(const Tensor& g, const Tensor& indices, int64_t V);

Tensor recorded_scatter(const Tensor& g, const Tensor& indices, const Tensor& dweight) {
  if (should_record({g}))
    record(kEmbeddingBackward, {g, indices}, {dweight}, {save(EmbeddingBackwardSaved::indices, indices)},
           [](const std::vector<Tensor>& gg, const Saved& s) {
             return std::vector<Tensor>{embedding(gg[0], s[EmbeddingBackwardSaved::indices]), Tensor()};
           }, [&](const std::vector<Tensor>& d) {
             return std::vector<Tensor>{recorded_scatter(d[0], indices, scatter_rows(d[0], indices, dweight.size(0)))};
           });
  return dweight;
}

// The CPU kernels: the rows of weight (V, d) that indices name, and the scatter-add back.
Tensor embedding_cpu(const Tensor& weight, const Tensor& indices) {
  const char* op = kEmbedding.c_str();
  const int64_t V = weight.size(0), d = weight.size(1);
  const std::vector<int64_t> ids = indices.to_int_vector();  // row-major over indices' shape
  for (size_t p = 0; p < ids.size(); ++p)
    if (ids[p] < 0 || ids[p] >= V)
      throw IndexError(fmt::format("{}: index {} at position {} of indices {} is out of range for a table of V = {} rows (weight {}); "
           "token ids must lie in [0, {})", op, ids[p], index_str(indices.shape(), static_cast<int64_t>(p)),
           shape_str(indices.shape()), V, shape_str(weight.shape()), V));
  Shape out_shape = indices.shape();
  out_shape.push_back(d);
  Tensor out = empty(out_shape, weight.dtype());  // (..., d)
  dispatch_float(weight.dtype(), op, [&]<typename T>() {
    const T* w = static_cast<const T*>(weight.raw_data());  // (V, d), any strides
    const int64_t sv = weight.strides()[0], sd = weight.strides()[1];
    T* o = out.data_ptr<T>();
    parallel_for(static_cast<int64_t>(ids.size()), d, [&](int64_t begin, int64_t end) {  // rows are independent
      for (int64_t p = begin; p < end; ++p)
        for (int64_t j = 0; j < d; ++j) o[p * d + j] = w[ids[static_cast<size_t>(p)] * sv + j * sd];
    });
  });
  return out;
}

Tensor embedding_backward_cpu(const Tensor& g, const Tensor& indices, int64_t V) {
  const int64_t d = g.size(-1);
  const std::vector<int64_t> rows = indices.to_int_vector();
  const Tensor gc = g.contiguous();      // (..., d)
  Tensor dweight = zeros({V, d}, g.dtype());  // (V, d)
  dispatch_float(g.dtype(), "embedding backward", [&]<typename T>() {
    const T* gp = static_cast<const T*>(gc.raw_data());
    T* dw = dweight.data_ptr<T>();
    // Threads split the d columns, not the positions: each dweight element still sums its rows
    // in position order, whatever the number of threads.
    parallel_for(d, static_cast<int64_t>(rows.size()), [&](int64_t j0, int64_t j1) {
      for (size_t p = 0; p < rows.size(); ++p)
        for (int64_t j = j0; j < j1; ++j) dw[rows[p] * d + j] += gp[static_cast<int64_t>(p) * d + j];
    });
  });
  return dweight;
}

// dweight (V, d) from g (..., d): the scatter-add on g's device.
Tensor scatter_rows(const Tensor& g, const Tensor& indices, int64_t V) {
  return on_device("embedding backward", {g, indices}, [&] { return embedding_backward_cpu(g, indices, V); },
                   HG_CUDA(cuda::embedding_backward(g, indices, V)));
}

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices, Site where) {
  const char* op = kEmbedding.c_str();
  if (!weight.defined()) fail(op, "the weight is an undefined tensor");
  if (!indices.defined()) fail(op, "the indices are an undefined tensor");
  if (weight.dim() != 2)
    fail(op, "weight {} must be 2-D (V, d): one row of d numbers per token id", weight.describe());
  if (indices.dtype() != DType::i64)
    fail(op, "indices {} must be i64 token ids; convert with .to(DType::i64)", indices.describe());
  // On the GPU the kernel checks the indices on the device (a deferred Error).
  Tensor out = on_device(op, {weight, indices}, [&] { return embedding_cpu(weight, indices); },
                         HG_CUDA(cuda::embedding(weight.detach(), indices)));
  if (should_record({weight})) {
    const int64_t V = weight.size(0);
    record(kEmbedding, {weight, indices}, {out}, {save(EmbeddingSaved::indices, indices)}, [V](const std::vector<Tensor>& g, const Saved& s) {
      const Tensor& ids = s[EmbeddingSaved::indices];
      return std::vector<Tensor>{recorded_scatter(g[0], ids, scatter_rows(g[0], ids, V)), Tensor()};
    }, [&indices](const std::vector<Tensor>& d) { return std::vector<Tensor>{embedding(d[0], indices)}; }, where);
  }
  return out;
}

Tensor embedding_backward(const Tensor& g, const Tensor& indices, int64_t V) {
  return recorded_scatter(g, indices, scatter_rows(g, indices, V));
}

// ---------------------------------------------------------------- the definitions, for the registry
std::span<const OpDef* const> embedding_ops() {
  static const OpDef* const defs[] = {&kEmbedding, &kEmbeddingBackward};
  return defs;
}

}  // namespace hg
