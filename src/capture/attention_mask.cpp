#include "capture/attention_mask.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "capture/interceptor.h"

namespace flopsprof::detail {
namespace {

// An additive mask's entry at or below this discards its pair (see attention_mask.h): -1e4 and
// below, also as bf16 rounds -1e4 (to -9984).
constexpr double kMaskedBelow = -9000;

// Counts the kept elements of a strided tensor of T by walking its sizes and strides. A dim of
// stride 0 (a broadcast) is walked once and its count multiplied by its size.
template <class T, class Keep>
uint64_t count_kept(const T* base, c10::IntArrayRef sizes, c10::IntArrayRef strides, Keep keep) {
  constexpr size_t kMaxDims = 16;
  int64_t size[kMaxDims], stride[kMaxDims];
  size_t n = 0;
  uint64_t repeat = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 0;
    if (sizes[d] == 1) continue;
    if (strides[d] == 0) {
      repeat *= static_cast<uint64_t>(sizes[d]);
      continue;
    }
    size[n] = sizes[d];
    stride[n] = strides[d];
    ++n;
  }
  if (n == 0) return keep(base[0]) ? repeat : 0;
  uint64_t kept = 0;
  int64_t index[kMaxDims] = {};
  const int64_t inner = size[n - 1], inner_stride = stride[n - 1];
  const T* row = base;
  while (true) {
    for (int64_t i = 0; i < inner; ++i) kept += keep(row[i * inner_stride]) ? 1 : 0;
    // Next row: the odometer over dims [0, n - 1).
    size_t d = n - 1;
    while (d > 0) {
      --d;
      row += stride[d];
      if (++index[d] < size[d]) break;
      row -= stride[d] * size[d];
      index[d] = 0;
      if (d == 0) return kept * repeat;
    }
    if (n == 1) return kept * repeat;
  }
}

template <class T>
uint64_t count_additive(const at::Tensor& t) {
  return count_kept(t.data_ptr<T>(), t.sizes(), t.strides(),
                    [](T v) { return !(static_cast<double>(v) <= kMaskedBelow); });
}

}  // namespace

std::optional<uint64_t> kept_mask_entries(const at::Tensor& mask) noexcept {
  try {
    if (!mask.defined() || mask.is_meta() || mask.layout() != c10::kStrided ||
        mask.is_quantized() || mask.dim() > 16) {
      return std::nullopt;
    }
    at::Tensor t = mask;
    if (!t.is_cpu()) {
      Unobserved unobserved;  // the copy is the profiler's, not the model's
      c10::AutoGradMode no_grad(false);
      t = t.to(at::kCPU);
    }
    switch (t.scalar_type()) {
      case at::kBool:
        return count_kept(t.data_ptr<bool>(), t.sizes(), t.strides(), [](bool v) { return v; });
      case at::kByte:
        return count_kept(t.data_ptr<uint8_t>(), t.sizes(), t.strides(),
                          [](uint8_t v) { return v != 0; });
      case at::kFloat:
        return count_additive<float>(t);
      case at::kDouble:
        return count_additive<double>(t);
      case at::kHalf:
        return count_additive<c10::Half>(t);
      case at::kBFloat16:
        return count_additive<c10::BFloat16>(t);
      default:
        return std::nullopt;
    }
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace flopsprof::detail
