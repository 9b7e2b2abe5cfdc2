// Peak dense FLOP/s and memory bandwidth per GPU (vendor datasheets), a GPU's ceilings from its
// properties when the table does not know it, and model FLOPs utilisation.
#include "aggregation/device_peaks.h"

#include <string>

#include <fmt/format.h>

#include "flopsprof/report.h"

namespace flopsprof {
namespace {

struct Peaks {
  double fp64, fp32, tf32, bf16, fp16, fp8;  // TFLOP/s, dense (no structured sparsity)
  double bandwidth;                          // TB/s of HBM
};

// NVIDIA datasheets: H100 SXM5 (HBM3, 3.35 TB/s) and H200 SXM (HBM3e, 4.8 TB/s) share the
// compute; H100 PCIe (2.0 TB/s); A100 SXM4 80 GB (2.039 TB/s) and 40 GB (1.555 TB/s).
constexpr Peaks kH100Sxm{34, 67, 494.7, 989.4, 989.4, 1978.9, 3.35};
constexpr Peaks kH200{34, 67, 494.7, 989.4, 989.4, 1978.9, 4.8};
constexpr Peaks kH100Pcie{26, 51, 378, 756, 756, 1513, 2.0};
constexpr Peaks kA100{9.7, 19.5, 156, 312, 312, 0, 2.039};
constexpr Peaks kA100_40{9.7, 19.5, 156, 312, 312, 0, 1.555};

const Peaks* lookup(const std::string& name) {
  if (name.find("H200") != std::string::npos) return &kH200;
  if (name.find("H100") != std::string::npos) {
    return name.find("PCIe") != std::string::npos ? &kH100Pcie : &kH100Sxm;
  }
  if (name.find("A100") != std::string::npos) {
    return name.find("40GB") != std::string::npos ? &kA100_40 : &kA100;
  }
  return nullptr;
}

// FP32 lanes per SM by compute capability (CUDA C Programming Guide, arithmetic throughput).
int fp32_lanes(int major, int minor) {
  if (major == 6) return minor == 0 ? 64 : 128;
  if (major == 7 || (major == 8 && minor == 0)) return 64;
  if (major >= 8) return 128;
  return 64;
}

}  // namespace

namespace detail {

MachinePeaks gpu_peaks(const GpuDeviceProperties& props) {
  MachinePeaks p;
  p.device = props.name;
  const Peaks* t = lookup(props.name);
  if (t != nullptr) {
    auto set = [&](DType d, double tflops) {
      if (tflops > 0) p.flops_per_s[static_cast<size_t>(d)] = tflops * 1e12;
    };
    set(DType::kFloat64, t->fp64);
    set(DType::kFloat32, t->fp32);
    set(DType::kTFloat32, t->tf32);
    set(DType::kBFloat16, t->bf16);
    set(DType::kFloat16, t->fp16);
    set(DType::kFloat8, t->fp8);
    p.bytes_per_s = t->bandwidth * 1e12;
    p.flops_source = p.bandwidth_source = "device table";
    p.detail = fmt::format("{}: NVIDIA datasheet, dense", props.name);
    return p;
  }
  const double clock = static_cast<double>(props.clock_khz) * 1e3;
  const double lanes = fp32_lanes(props.major, props.minor);
  if (props.sm_count > 0 && clock > 0) {
    p.flops_per_s[static_cast<size_t>(DType::kFloat32)] =
        2.0 * lanes * static_cast<double>(props.sm_count) * clock;
    p.flops_source = "device properties";
  }
  if (props.memory_clock_khz > 0 && props.memory_bus_bits > 0) {
    p.bytes_per_s = 2.0 * static_cast<double>(props.memory_clock_khz) * 1e3 *
                    static_cast<double>(props.memory_bus_bits) / 8.0;
    p.bandwidth_source = "device properties";
  }
  p.detail = fmt::format(
      "{} (compute capability {}.{}): {} SMs x {} FP32 lanes x 2 at {:.0f} MHz; {}-bit memory at "
      "{:.0f} MHz, double data rate; other dtypes use fp32's peak",
      props.name, props.major, props.minor, props.sm_count, static_cast<int>(lanes), clock / 1e6,
      props.memory_bus_bits, static_cast<double>(props.memory_clock_khz) / 1e3);
  return p;
}

}  // namespace detail

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
    case DType::kTFloat32:
      t = p->tf32;
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
