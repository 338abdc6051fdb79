// python/src/rearrange.cpp — the spread (var, std), the extrema (amax ... cumsum) and the
// rearranging ops (ops/statistics.h, ops/extrema.h, ops/rearrange.h) as plain calls; python/handgrad/_rearrange.py reads PyTorch's argument forms
// (a dim or a tuple of dims, `unbiased` or `correction`, varargs) and calls these.
#include <nanobind/stl/pair.h>

#include "bind.h"

namespace hgpy {

void bind_rearrange(nb::module_& m) {
  using hg::Shape;
  using hg::Tensor;
  m.def("_var", [](const Tensor& x, const Shape& dims, double c, bool keepdim) { return hg::var(x, dims, c, keepdim); });
  m.def("_std", [](const Tensor& x, const Shape& dims, double c, bool keepdim) { return hg::std(x, dims, c, keepdim); });
  m.def("_index_select", [](const Tensor& x, int64_t dim, const Tensor& index) { return hg::index_select(x, dim, index); });
  m.def("_amax", [](const Tensor& x, const Shape& dims, bool keepdim) { return hg::amax(x, dims, keepdim); });
  m.def("_amin", [](const Tensor& x, const Shape& dims, bool keepdim) { return hg::amin(x, dims, keepdim); });
  m.def("_min", [](const Tensor& x, int64_t dim, bool keepdim) { return hg::min(x, dim, keepdim); });
  m.def("_argmin", [](const Tensor& x, int64_t dim, bool keepdim) { return hg::argmin(x, dim, keepdim); });
  m.def("_logsumexp", [](const Tensor& x, const Shape& dims, bool keepdim) { return hg::logsumexp(x, dims, keepdim); });
  m.def("_cumsum", [](const Tensor& x, int64_t dim) { return hg::cumsum(x, dim); });
  m.def("_cumprod", [](const Tensor& x, int64_t dim) { return hg::cumprod(x, dim); });
  m.def("_sort", [](const Tensor& x, int64_t dim, bool descending) {
    hg::SortResult r = hg::sort(x, dim, descending);
    return std::make_pair(r.values, r.indices);
  });
  m.def("_topk", [](const Tensor& x, int64_t k, int64_t dim, bool largest) {
    hg::SortResult r = hg::topk(x, k, dim, largest);
    return std::make_pair(r.values, r.indices);
  });
  m.def("_stack", [](const std::vector<Tensor>& xs, int64_t dim) { return hg::stack(xs, dim); });
  m.def("_repeat", [](const Tensor& x, const Shape& r) { return hg::repeat(x, r); });
  m.def("_tile", [](const Tensor& x, const Shape& r) { return hg::tile(x, r); });
  m.def("_repeat_interleave", [](const Tensor& x, int64_t r, std::optional<int64_t> dim) { return hg::repeat_interleave(x, r, dim); });
  m.def("_maximum", [](const Tensor& a, const Tensor& b) { return hg::maximum(a, b); });
  m.def("_minimum", [](const Tensor& a, const Tensor& b) { return hg::minimum(a, b); });
  m.def("_lerp", [](const Tensor& a, const Tensor& b, const Tensor& w) { return hg::lerp(a, b, w); });
  m.def("_lerp_number", [](const Tensor& a, const Tensor& b, double w) { return hg::lerp(a, b, w); });
  m.def("_masked_select", [](const Tensor& x, const Tensor& mask) { return hg::masked_select(x, mask); });
  m.def("_flip", [](const Tensor& x, const Shape& dims) { return hg::flip(x, dims); });
  m.def("_roll", [](const Tensor& x, const Shape& shifts, const Shape& dims) { return hg::roll(x, shifts, dims); });
  m.def("_diagonal", [](const Tensor& x, int64_t offset, int64_t d1, int64_t d2) { return hg::diagonal(x, offset, d1, d2); });
  m.def("_diag", [](const Tensor& x, int64_t offset) { return hg::diag(x, offset); });
  m.def("_tril", [](const Tensor& x, int64_t offset) { return hg::tril(x, offset); });
  m.def("_triu", [](const Tensor& x, int64_t offset) { return hg::triu(x, offset); });
  m.def("_flatten", [](const Tensor& x, int64_t s, int64_t e) { return hg::flatten(x, s, e); });
  m.def("_unflatten", [](const Tensor& x, int64_t dim, const Shape& sizes) { return hg::unflatten(x, dim, sizes); });
  m.def("_movedim", [](const Tensor& x, const Shape& src, const Shape& dst) { return hg::movedim(x, src, dst); });
  m.def("_gather", [](const Tensor& x, int64_t dim, const Tensor& index) { return hg::gather(x, dim, index); });
  m.def("_scatter", [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) { return hg::scatter(x, dim, index, src); });
  m.def("_scatter_value", [](const Tensor& x, int64_t dim, const Tensor& index, double v) { return hg::scatter(x, dim, index, v); });
  m.def("_scatter_add", [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) { return hg::scatter_add(x, dim, index, src); });
  m.def("_vector_norm", [](const Tensor& x, double ord, const Shape& dims, bool keepdim) { return hg::vector_norm(x, ord, dims, keepdim); });
  m.def("_svdvals", [](const Tensor& a) { return hg::svdvals(a); });
  m.def("_matrix_rank", [](const Tensor& a, std::optional<double> atol, std::optional<double> rtol) { return hg::matrix_rank(a, atol, rtol); });
  m.def("_prod", [](const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return hg::prod(x, dim, keepdim); });
  m.def("_unfold", [](const Tensor& x, int64_t dim, int64_t size, int64_t step) { return hg::unfold(x, dim, size, step); });
  m.def("_diag_embed", [](const Tensor& x, int64_t offset, int64_t d1, int64_t d2) { return hg::diag_embed(x, offset, d1, d2); });
  m.def("_narrow", [](const Tensor& x, int64_t dim, int64_t start, int64_t length) { return hg::narrow(x, dim, start, length); });
}

}  // namespace hgpy
