// Pooling and upsampling formulas.
// Convention (DeepSpeed): pooling numel(input); upsample/interpolate numel(output); upsample
// backward numel(grad_output).
// Pooling backward: numel(input) (one pass over the input gradient).
// Bytes: the input read once, the output written ([N, C, out spatial], pooling's output sizes;
// max pooling with indices also the int64 indices); backward writes the input's gradient.
#include <cmath>
#include <string>

#include "flopsprof/error.h"
#include "formulas/common.h"

namespace flopsprof::detail {
namespace {

// pool(x, ...): numel(x)
std::optional<FlopCount> pool(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  return flops_only(in.numel(0));
}

// upsample_*(x[N, C, spatial...], output_size?, scales...): N*C*prod(output spatial)
std::optional<FlopCount> upsample(const OpInputs& in) {
  IntSpan x = in.shape(0);
  if (x.size() < 3) return std::nullopt;
  size_t spatial = x.size() - 2;
  uint64_t out = checked_mul(u(x[0]), u(x[1]));
  IntSpan size = in.int_list(1);
  if (size.size() == spatial) {
    for (int64_t s : size) out = checked_mul(out, u(s));
    return flops_only(out);
  }
  for (size_t i = 1; i < in.size(); ++i) {  // the .vec overload: scale_factors as a list
    const ArgView& a = in[i];
    if (a.kind == ArgKind::kDoubleList && a.shape.size() == spatial) {
      for (size_t d = 0; d < spatial; ++d) {
        const double size = std::floor(static_cast<double>(x[2 + d]) * a.dlist[d]);
        if (!std::isfinite(size) || size < 0) return std::nullopt;  // NaN, inf, negative: n/a
        if (size >= 9.2e18) {
          throw Error("upsample output size overflows 64 bits (scale " +
                      std::to_string(a.dlist[d]) + "); the op is reported as n/a");
        }
        out = checked_mul(out, static_cast<uint64_t>(size));
      }
      return flops_only(out);
    }
  }
  return std::nullopt;
}

// upsample_*_backward(grad_output, output_size, input_size, ...): numel(grad_output), one
// accumulation per gradient element into the input's gradient.
std::optional<FlopCount> upsample_backward(const OpInputs& in) {
  if (!in.is_tensor(0)) return std::nullopt;
  return flops_only(in.numel(0));
}

// *_pool*_backward(grad_output, input, ...): numel(input)
std::optional<FlopCount> pool_backward(const OpInputs& in) {
  if (!in.is_tensor(1)) return std::nullopt;
  return flops_only(in.numel(1));
}

// ---- Bytes ----

int64_t list_at(IntSpan list, size_t i, int64_t fallback) {
  if (list.empty()) return fallback;
  return list.size() == 1 ? list[0] : (i < list.size() ? list[i] : fallback);
}

// A pooling's output element count: N*C (the dims before the `spatial` last ones) times each
// spatial output size, as PyTorch's pooling_output_shape computes it.
std::optional<uint64_t> pooled_count(const OpInputs& in, size_t spatial, int dilation_at,
                                     int ceil_at) {
  IntSpan x = in.shape(0), kernel = in.int_list(1), stride = in.int_list(2),
          padding = in.int_list(3);
  IntSpan dilation = dilation_at >= 0 ? in.int_list(static_cast<size_t>(dilation_at)) : IntSpan{};
  if (x.size() < spatial || kernel.empty()) return std::nullopt;
  const bool ceil_mode = in.boolean(static_cast<size_t>(ceil_at)).value_or(false);
  uint64_t n = 1;
  for (size_t d = 0; d + spatial < x.size(); ++d) n = sat_mul(n, u(x[d]));
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t size = x[x.size() - spatial + d], k = list_at(kernel, d, 1);
    const int64_t s = list_at(stride, d, k), p = list_at(padding, d, 0);
    const int64_t dl = list_at(dilation, d, 1);
    if (s < 1 || k < 1) return std::nullopt;
    const int64_t span = size + 2 * p - dl * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    if (span < 0) return std::nullopt;
    int64_t out = span / s + 1;
    if (ceil_mode && (out - 1) * s >= size + p) --out;
    n = sat_mul(n, u(out));
  }
  return n;
}

// max_pool*(self, kernel, stride, padding, dilation, ceil_mode); with indices also writes them
BytesFn max_pool_bytes(size_t spatial, bool indices) {
  return [=](const OpInputs& in) -> std::optional<ByteCount> {
    std::optional<uint64_t> n = pooled_count(in, spatial, 4, 5);
    if (!n) return std::nullopt;
    ByteCount b = reads_inputs_writes(in, *n, in[0].dtype);
    if (indices) b.written = sat_add(b.written, sat_mul(*n, 8));
    return b;
  };
}

// avg_pool*(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
BytesFn avg_pool_bytes(size_t spatial) {
  return [=](const OpInputs& in) -> std::optional<ByteCount> {
    std::optional<uint64_t> n = pooled_count(in, spatial, -1, 4);
    if (!n) return std::nullopt;
    return reads_inputs_writes(in, *n, in[0].dtype);
  };
}

// adaptive_*(self, output_size): the dims before the spatial ones times output_size; the max
// variants also write int64 indices
BytesFn adaptive_bytes(bool indices) {
  return [=](const OpInputs& in) -> std::optional<ByteCount> {
    IntSpan x = in.shape(0), size = in.int_list(1);
    if (size.empty() || x.size() < size.size()) return std::nullopt;
    uint64_t n = 1;
    for (size_t d = 0; d + size.size() < x.size(); ++d) n = sat_mul(n, u(x[d]));
    for (int64_t s : size) n = sat_mul(n, u(s));
    ByteCount b = reads_inputs_writes(in, n, in[0].dtype);
    if (indices) b.written = sat_add(b.written, sat_mul(n, 8));
    return b;
  };
}

// upsample: the FLOP formula's count is the output's element count
std::optional<ByteCount> upsample_bytes(const OpInputs& in) {
  std::optional<FlopCount> f;
  try {
    f = upsample(in);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!f) return std::nullopt;
  return reads_inputs_writes(in, f->flops, in[0].dtype);
}

// upsample_*_backward(grad_output, output_size, input_size, ...): the input's gradient, shaped
// as input_size, typed as grad_output
std::optional<ByteCount> upsample_backward_bytes(const OpInputs& in) {
  IntSpan size = in.int_list(2);
  if (!in.is_tensor(0) || size.empty()) return std::nullopt;
  return reads_inputs_writes(in, count_of(size), in[0].dtype);
}

}  // namespace

void register_pool_bytes() {
  for (const char* op :
       {"aten::max_pool2d_with_indices_backward", "aten::max_pool3d_with_indices_backward",
        "aten::avg_pool2d_backward", "aten::avg_pool3d_backward",
        "aten::_adaptive_avg_pool2d_backward", "aten::_adaptive_avg_pool3d_backward",
        "aten::adaptive_max_pool2d_backward", "aten::adaptive_max_pool3d_backward"}) {
    add_builtin_bytes(op, same_as(1));  // the input's gradient
  }
  add_builtin_bytes("aten::max_pool1d", max_pool_bytes(1, false));
  add_builtin_bytes("aten::max_pool2d", max_pool_bytes(2, false));
  add_builtin_bytes("aten::max_pool3d", max_pool_bytes(3, false));
  add_builtin_bytes("aten::mkldnn_max_pool2d", max_pool_bytes(2, false));
  add_builtin_bytes("aten::max_pool1d_with_indices", max_pool_bytes(1, true));
  add_builtin_bytes("aten::max_pool2d_with_indices", max_pool_bytes(2, true));
  add_builtin_bytes("aten::max_pool3d_with_indices", max_pool_bytes(3, true));
  add_builtin_bytes("aten::avg_pool1d", avg_pool_bytes(1));
  add_builtin_bytes("aten::avg_pool2d", avg_pool_bytes(2));
  add_builtin_bytes("aten::avg_pool3d", avg_pool_bytes(3));
  for (const char* op :
       {"aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d", "aten::adaptive_avg_pool3d",
        "aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool3d"}) {
    add_builtin_bytes(op, adaptive_bytes(false));
  }
  for (const char* op :
       {"aten::adaptive_max_pool1d", "aten::adaptive_max_pool2d", "aten::adaptive_max_pool3d"}) {
    add_builtin_bytes(op, adaptive_bytes(true));
  }
  for (const char* op :
       {"aten::upsample_nearest1d", "aten::upsample_nearest2d", "aten::upsample_nearest3d",
        "aten::_upsample_nearest_exact1d", "aten::_upsample_nearest_exact2d",
        "aten::_upsample_nearest_exact3d", "aten::upsample_linear1d", "aten::upsample_bilinear2d",
        "aten::upsample_bicubic2d", "aten::upsample_trilinear3d"}) {
    add_builtin_bytes(op, upsample_bytes);
    add_builtin_bytes((std::string(op) + "_backward").c_str(), upsample_backward_bytes);
  }
}

void register_pool_formulas() {
  for (const char* op :
       {"aten::max_pool2d_with_indices_backward", "aten::max_pool3d_with_indices_backward",
        "aten::avg_pool2d_backward", "aten::avg_pool3d_backward",
        "aten::_adaptive_avg_pool2d_backward", "aten::_adaptive_avg_pool3d_backward",
        "aten::adaptive_max_pool2d_backward", "aten::adaptive_max_pool3d_backward"}) {
    add_builtin_formula(op, pool_backward);
  }
  for (const char* op :
       {"aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d", "aten::max_pool1d_with_indices",
        "aten::max_pool2d_with_indices", "aten::max_pool3d_with_indices", "aten::mkldnn_max_pool2d",
        "aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d", "aten::adaptive_avg_pool1d",
        "aten::adaptive_avg_pool2d", "aten::adaptive_avg_pool3d", "aten::_adaptive_avg_pool2d",
        "aten::_adaptive_avg_pool3d", "aten::adaptive_max_pool1d", "aten::adaptive_max_pool2d",
        "aten::adaptive_max_pool3d"}) {
    add_builtin_formula(op, pool);
  }
  for (const char* op :
       {"aten::upsample_nearest1d", "aten::upsample_nearest2d", "aten::upsample_nearest3d",
        "aten::_upsample_nearest_exact1d", "aten::_upsample_nearest_exact2d",
        "aten::_upsample_nearest_exact3d", "aten::upsample_linear1d", "aten::upsample_bilinear2d",
        "aten::upsample_bicubic2d", "aten::upsample_trilinear3d"}) {
    add_builtin_formula(op, upsample);
    add_builtin_formula((std::string(op) + "_backward").c_str(), upsample_backward);
  }
}

}  // namespace flopsprof::detail
