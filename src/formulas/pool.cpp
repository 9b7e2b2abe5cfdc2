// Pooling and upsampling formulas.
// Convention (DeepSpeed): pooling numel(input); upsample/interpolate numel(output); upsample
// backward numel(grad_output).
// Pooling backward: numel(input) (one pass over the input gradient).
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

}  // namespace

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
