// engine/dtype.h — element types, devices and shapes.
#pragma once
#include <cstdint>
#include <string>
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
int64_t shape_numel(const Shape& s);
Shape contiguous_strides(const Shape& s);
// The text of the hg::Error for a float that has no i64 value (engine/convert.h), on either
// device: the dtype and value, `where` it is ("at position [1] of the source (3,)"), what to do.
std::string no_i64_value(DType from, double v, const std::string& where);

}  // namespace hg
