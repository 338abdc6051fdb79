// engine/dtype.h — element types, devices and shapes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hg {

// f32/f64 are the differentiable types; i64 holds indices (token ids, class targets);
// b8 holds boolean masks (true = may attend / keep).
enum class DType : uint8_t { f32, f64, i64, b8 };
enum class Device : uint8_t { cpu, cuda };

using Shape = std::vector<int64_t>;

size_t dtype_size(DType t);
const char* dtype_name(DType t);
const char* device_name(Device d);
bool is_floating(DType t);
std::string shape_str(const Shape& s);  // "(3, 2)"
std::string index_str(const Shape& s, int64_t flat);  // the row-major position `flat` as "[1, 0]"
// Π s: an Error naming the shape when the product overflows int64 (check_shape rules that out
// for every tensor a factory or a view makes; this is the backstop).
int64_t shape_numel(const Shape& s);
// Row-major strides of shape s, with the same overflow Error.
Shape contiguous_strides(const Shape& s);
// A shape a tensor of dtype t may have: every size ≥ 0, and the product of the non-zero sizes
// times the element size within int64 — so the element count, every contiguous stride and every
// byte offset fit, even when a zero size makes the count 0. Otherwise an Error naming op, the
// shape and the limit.
void check_shape(std::string_view op, const Shape& s, DType t);
// The text of the hg::Error for a float that has no i64 value (engine/convert.h), on either
// device: the dtype and value, `where` it is ("at position [1] of the source (3,)"), what to do.
std::string no_i64_value(DType from, double v, const std::string& where);

}  // namespace hg
