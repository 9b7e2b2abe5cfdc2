// Helpers of the bytes rules: element sizes, dtype promotion, the bytes of an op's inputs.
// Convention (docs/report.md, "Bytes moved"): compulsory traffic, an upper bound of DRAM traffic
// with no reuse between ops: each distinct input tensor read once at the memory it covers (a
// broadcast view at its stored size), each output written once, in-place ops read and write self.
#include <algorithm>

#include "formulas/common.h"

namespace flopsprof::detail {

uint64_t element_bytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
    case DType::kInt64:
    case DType::kComplex64:
      return 8;
    case DType::kFloat32:
    case DType::kTFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
      return 2;
    case DType::kFloat8:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool:
    case DType::kQuantized:
      return 1;
    case DType::kComplex128:
      return 16;
    default:
      return 0;
  }
}

DType dtype_of_scalar_type(int64_t code) {
  // c10::ScalarType's numbering (c10/core/ScalarType.h; stable across 1.x and 2.x).
  switch (code) {
    case 0:
      return DType::kUInt8;
    case 1:
      return DType::kInt8;
    case 2:
      return DType::kInt16;
    case 3:
      return DType::kInt32;
    case 4:
      return DType::kInt64;
    case 5:
      return DType::kFloat16;
    case 6:
      return DType::kFloat32;
    case 7:
      return DType::kFloat64;
    case 9:
      return DType::kComplex64;
    case 10:
      return DType::kComplex128;
    case 11:
      return DType::kBool;
    case 12:
    case 13:
    case 14:
      return DType::kQuantized;
    case 15:
      return DType::kBFloat16;
    case 23:
    case 24:
    case 25:
    case 26:
      return DType::kFloat8;
    default:
      return DType::kUnknown;
  }
}

namespace {
// Promotion order: bool < integers < floating < complex.
int rank(DType d) {
  switch (d) {
    case DType::kBool:
      return 0;
    case DType::kUInt8:
      return 1;
    case DType::kInt8:
      return 2;
    case DType::kInt16:
      return 3;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 5;
    case DType::kFloat8:
      return 6;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 7;
    case DType::kFloat32:
    case DType::kTFloat32:
      return 8;
    case DType::kFloat64:
      return 9;
    case DType::kComplex64:
      return 10;
    case DType::kComplex128:
      return 11;
    default:
      return -1;
  }
}
}  // namespace

DType promote(DType a, DType b) {
  if (a == DType::kUnknown) return b;
  if (b == DType::kUnknown || a == b) return a;
  if ((a == DType::kFloat16 && b == DType::kBFloat16) ||
      (a == DType::kBFloat16 && b == DType::kFloat16))
    return DType::kFloat32;
  return rank(a) >= rank(b) ? a : b;
}

uint64_t count_of(IntSpan shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n = sat_mul(n, u(d));
  return n;
}

uint64_t arg_bytes(const OpInputs& in, size_t i) {
  const ArgView& a = in[i];
  if (a.kind == ArgKind::kTensor) return sat_mul(a.extent, element_bytes(a.dtype));
  if (a.kind == ArgKind::kTensorList) return a.extent;
  return 0;
}

uint64_t input_bytes(const OpInputs& in) {
  uint64_t n = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].kind == ArgKind::kTensor && in[i].repeated) continue;
    n = sat_add(n, arg_bytes(in, i));
  }
  return n;
}

DType dtype_arg(const OpInputs& in, size_t i, DType fallback) {
  const ArgView& a = in[i];
  if (a.kind != ArgKind::kInt) return fallback;
  const DType d = dtype_of_scalar_type(a.i);
  return d == DType::kUnknown ? fallback : d;
}

ByteCount reads_inputs_writes(const OpInputs& in, uint64_t elements, DType dtype) {
  return ByteCount{input_bytes(in), sat_mul(elements, element_bytes(dtype))};
}

ByteCount in_place(const OpInputs& in, size_t i) {
  return ByteCount{input_bytes(in), arg_bytes(in, i)};
}

std::optional<uint64_t> broadcast_count(const OpInputs& in, std::initializer_list<size_t> indices) {
  size_t rank_max = 0;
  for (size_t i : indices) rank_max = std::max(rank_max, in.shape(i).size());
  uint64_t n = 1;
  for (size_t k = 0; k < rank_max; ++k) {
    int64_t dim = 1;
    for (size_t i : indices) {
      IntSpan s = in.shape(i);
      if (k >= s.size()) continue;
      const int64_t d = s.back(k);
      if (d == 1) continue;
      if (dim != 1 && d != dim) return std::nullopt;
      dim = d;
    }
    n = sat_mul(n, u(dim));
  }
  return n;
}

DType result_dtype(const OpInputs& in, std::initializer_list<size_t> indices) {
  DType d = DType::kUnknown;
  bool float_scalar = false;
  for (size_t i : indices) {
    if (in[i].kind == ArgKind::kTensor) d = promote(d, in[i].dtype);
    if (in[i].kind == ArgKind::kDouble) float_scalar = true;
  }
  if (float_scalar && !is_floating(d)) d = DType::kFloat32;
  return d;
}

BytesFn same_as(size_t i) {
  return [i](const OpInputs& in) -> std::optional<ByteCount> {
    if (!in.is_tensor(i)) return std::nullopt;
    return reads_inputs_writes(in, count_of(in.shape(i)), in[i].dtype);
  };
}

}  // namespace flopsprof::detail
