// Peak dense FLOP/s per GPU and dtype (vendor datasheets), and model FLOPs utilisation.
#include <string>

#include "flopsprof/report.h"

namespace flopsprof {
namespace {

struct Peaks {
  double fp64, fp32, tf32, bf16, fp16, fp8;  // TFLOP/s, dense (no structured sparsity)
};

// NVIDIA datasheets: H100 SXM5 and H200 SXM share the compute; H100 PCIe; A100 SXM4.
constexpr Peaks kH100Sxm{34, 67, 494.7, 989.4, 989.4, 1978.9};
constexpr Peaks kH100Pcie{26, 51, 378, 756, 756, 1513};
constexpr Peaks kA100{9.7, 19.5, 156, 312, 312, 0};

const Peaks* lookup(const std::string& name) {
  if (name.find("H200") != std::string::npos) return &kH100Sxm;
  if (name.find("H100") != std::string::npos) {
    return name.find("PCIe") != std::string::npos ? &kH100Pcie : &kH100Sxm;
  }
  if (name.find("A100") != std::string::npos) return &kA100;
  return nullptr;
}

}  // namespace

std::optional<double> device_peak_flops(const std::string& device_name, DType dtype, bool tf32) {
  const Peaks* p = lookup(device_name);
  if (p == nullptr) return std::nullopt;
  double t = 0;
  switch (dtype) {
    case DType::kFloat64:
      t = p->fp64;
      break;
    case DType::kFloat32:
      t = tf32 ? p->tf32 : p->fp32;
      break;
    case DType::kBFloat16:
      t = p->bf16;
      break;
    case DType::kFloat16:
      t = p->fp16;
      break;
    case DType::kFloat8:
      t = p->fp8;
      break;
    default:
      return std::nullopt;
  }
  if (t <= 0) return std::nullopt;
  return t * 1e12;
}

std::optional<double> mfu(uint64_t flops, double seconds, const std::string& device_name,
                          DType dtype, bool tf32) {
  std::optional<double> peak = device_peak_flops(device_name, dtype, tf32);
  if (!peak || seconds <= 0) return std::nullopt;
  return static_cast<double>(flops) / seconds / *peak;
}

}  // namespace flopsprof
