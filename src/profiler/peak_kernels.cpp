// The kernels that measure a machine's peaks (peak_kernels.h).
#include "profiler/peak_kernels.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>

#include <ATen/ATen.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <fmt/format.h>

namespace flopsprof::detail {

// Waits for the work queued on `device`'s current stream (nothing to wait for on the CPU).
void wait_for_device(const c10::Device& device) {
  if (device.is_cpu()) return;
  c10::impl::getDeviceGuardImpl(device.type())->getStream(device).synchronize();
}

namespace {

// The last-level cache of CPU 0, bytes (sysfs); 32 MiB when unknown.
uint64_t llc_bytes() {
  uint64_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    std::ifstream lf(dir + "level"), sf(dir + "size");
    int level = 0;
    std::string size;
    if (!(lf >> level) || !(sf >> size) || size.empty()) continue;
    uint64_t v = std::strtoull(size.c_str(), nullptr, 10);
    if (size.back() == 'K') v <<= 10;
    if (size.back() == 'M') v <<= 20;
    if (level > best_level || (level == best_level && v > best)) {
      best_level = level;
      best = v;
    }
  }
  return best > 0 ? best : (32u << 20);
}


// Seconds `launch` takes to run on `device`: from the host, until the device finished it.
template <typename F>
double device_seconds(const c10::Device& device, F launch) {
  const auto t0 = std::chrono::steady_clock::now();
  launch();
  wait_for_device(device);
  return seconds_since(t0);
}

// The LibTorch type of a floating dtype the peaks are measured in; nullopt for the others.
std::optional<c10::ScalarType> measured_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
      return at::kDouble;
    case DType::kFloat32:
      return at::kFloat;
    case DType::kBFloat16:
      return at::kBFloat16;
    case DType::kFloat16:
      return at::kHalf;
    default:
      return std::nullopt;
  }
}

// The best of `first` and up to 6 more timings of `timed` (seconds), within about 120 ms: on a
// shared machine one run in three can go at half speed (a neighbour on the core), and a peak is
// the fastest the kernel can go.
double best_of_more(double first, const std::function<double()>& timed) {
  double t = first, spent = 0;
  for (int k = 0; k < 6 && spent < 0.12; ++k) {
    const double tk = timed();
    spent += tk;
    t = std::min(t, tk);
  }
  return t;
}

// Seconds of one a = b + 2 * c over fp32 arrays whose three operands take `working_set` bytes,
// as a profile's ops run it (at::add_out at the current thread count): repeated to about 3 ms a
// timing, the best of 5 timings, over the repetitions.
double triad_call_seconds(uint64_t working_set) {
  const int64_t n = std::max<int64_t>(64, static_cast<int64_t>(working_set / 12));
  const auto options = at::TensorOptions().dtype(at::kFloat);
  at::Tensor a = at::empty({n}, options), b = at::ones({n}, options), c = at::ones({n}, options);
  for (int k = 0; k < 8; ++k) at::add_out(a, b, c, 2.0);  // warm: pages, caches, the dispatcher
  const auto t0 = std::chrono::steady_clock::now();
  at::add_out(a, b, c, 2.0);
  const double one = std::max(1e-8, seconds_since(t0));
  const int reps = static_cast<int>(std::clamp(0.003 / one, 1.0, 100000.0));
  double best = 1e300;
  for (int k = 0; k < 5; ++k) {
    const auto tk = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) at::add_out(a, b, c, 2.0);
    best = std::min(best, seconds_since(tk));
  }
  return best / reps;
}

}  // namespace

// Peak FLOP/s of torch::mm at `dtype` on `device`: n doubles from 128 until one product takes
// >= 8 ms on a CPU, 2 ms on a device (or n = 2048 on a CPU, 8192 on a device; the smaller ones
// warm the kernel up), then the best of that one and up to 6 more at that size (at most about
// 120 ms more). The operands are constant (no random generator is drawn from: the program's
// random numbers stay as they were). `*what`: what was timed ("fp32 mm 1024^3"), or that it could
// not run. 0 when LibTorch cannot multiply this dtype there.
double gemm_peak(DType dtype, std::string* what, const c10::Device& device) {
  const std::optional<c10::ScalarType> st = measured_scalar_type(dtype);
  if (!st) return 0;
  try {
    int64_t n = 128;
    at::Tensor a, b;
    auto product = [&] { return device_seconds(device, [&] { at::Tensor c = at::mm(a, b); }); };
    const bool cpu = device.is_cpu();
    const double enough = cpu ? 0.008 : 0.002;
    const int64_t largest = cpu ? 2048 : 8192;
    const auto options = at::TensorOptions().dtype(*st).device(device);
    double t = 0;
    for (;;) {
      a = at::full({n, n}, 0.5, options);
      b = at::full({n, n}, 0.25, options);
      t = product();
      if (t >= enough || n >= largest) break;
      n *= 2;
    }
    t = best_of_more(t, product);
    const double flops =
        2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / t;
    *what = fmt::format("{} mm {}^3", dtype_name(dtype), n);
    return flops;
  } catch (const std::exception&) {
    *what = fmt::format("{} mm not supported", dtype_name(dtype));
    return 0;
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Peak FLOP/s of a 3x3 convolution at `dtype` on this CPU (64 to 64 channels, 56 x 56, padding 1:
// 2 x N x 64 x 64 x 9 x 56 x 56 FLOPs): LibTorch runs it with oneDNN, whose kernels may use wider
// vector units than the BLAS behind at::mm (OpenBLAS's fp32 GEMM is its AVX2 kernel on a CPU with
// AVX-512: a quarter of what oneDNN's convolutions reach there). The batch N doubles from 1 until
// one convolution takes >= 8 ms (or N = 64), then the best of up to 6 more within about 120 ms,
// as for the GEMM. Constant operands. 0 when LibTorch cannot convolve this dtype here.
double conv_peak(DType dtype, std::string* what) {
  // fp64 and fp16 convolutions have no faster CPU kernel than the GEMM's
  if (dtype != DType::kFloat32 && dtype != DType::kBFloat16) return 0;
  try {
    const auto options = at::TensorOptions().dtype(*measured_scalar_type(dtype));
    const at::Tensor w = at::full({64, 64, 3, 3}, 0.125, options);
    int64_t n = 1;
    at::Tensor x;
    auto conv = [&] {
      return device_seconds(c10::kCPU, [&] { at::Tensor y = at::conv2d(x, w, {}, 1, 1); });
    };
    double t = 0;
    for (;;) {
      x = at::full({n, 64, 56, 56}, 0.5, options);
      t = conv();
      if (t >= 0.008 || n >= 64) break;
      n *= 2;
    }
    t = best_of_more(t, conv);
    *what = fmt::format("{} conv2d 3x3 {}x64x56^2", dtype_name(dtype), n);
    return 2.0 * static_cast<double>(n) * 64 * 64 * 9 * 56 * 56 / t;
  } catch (const std::exception&) {
    return 0;
  }
}

// Bandwidth of a = b + 2 * c over fp32 arrays (on a CPU of max(2 x LLC, 32 MiB) each, at most
// 512 MiB; on a device 128 MiB each, and 10 passes per timing, as one pass takes well under a
// millisecond there): 3 x the array's bytes per pass (the compulsory traffic), best of 3 after a
// first pass that touches a's pages (b and c are written when made: reading never-written pages
// would read the kernel's shared zero page, from cache).
double triad_bandwidth(std::string* detail, const c10::Device& device) {
  const bool cpu = device.is_cpu();
  const uint64_t bytes =
      cpu ? std::min<uint64_t>(std::max<uint64_t>(2 * llc_bytes(), 32u << 20), 512u << 20)
          : (128u << 20);
  const int passes = cpu ? 1 : 10;
  const int64_t n = static_cast<int64_t>(bytes / 4);
  const auto options = at::TensorOptions().dtype(at::kFloat).device(device);
  at::Tensor a = at::empty({n}, options), b = at::ones({n}, options), c = at::ones({n}, options);
  at::add_out(a, b, c, 2.0);
  double best = 1e300;
  for (int k = 0; k < 3; ++k) {
    best = std::min(best, device_seconds(device, [&] {
                      for (int p = 0; p < passes; ++p) at::add_out(a, b, c, 2.0);
                    }));
  }
  *detail += passes > 1 ? fmt::format("triad 3 x {} MiB x {}", bytes >> 20, passes)
                        : fmt::format("triad 3 x {} MiB", bytes >> 20);
  return 3.0 * static_cast<double>(n) * 4.0 * passes / best;
}

// The CPU's data caches (sysfs, CPU 0): L1 (data), L2, L3, with their sizes; empty when unknown.
std::vector<BandwidthLevel> cache_levels() {
  std::map<int, uint64_t> by_level;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    std::ifstream lf(dir + "level"), sf(dir + "size"), tf(dir + "type");
    int level = 0;
    std::string size, type;
    if (!(lf >> level) || !(sf >> size) || !(tf >> type) || size.empty()) continue;
    if (type == "Instruction") continue;
    uint64_t v = std::strtoull(size.c_str(), nullptr, 10);
    if (size.back() == 'K') v <<= 10;
    if (size.back() == 'M') v <<= 20;
    if (v > 0 && level >= 1 && level <= 4) by_level[level] = v;
  }
  std::vector<BandwidthLevel> out;
  for (const auto& [level, bytes] : by_level) {
    BandwidthLevel l;
    l.name = fmt::format("L{}", level);
    l.capacity_bytes = bytes;
    out.push_back(l);
  }
  return out;
}

// The bandwidth of a cache level of `capacity` bytes: the slope of a triad's time between working
// sets of a quarter and a half of it (both stay in it). The slope leaves out what every call
// pays whatever its size (the dispatcher, the kernel's start), which is no bandwidth: the
// ceiling is what the level streams, as a cache-aware roofline's (Intel Advisor's) are. A slope
// the noise spoils (not positive, or past 20 times the half's own rate) falls back to that rate.
double level_bandwidth(uint64_t capacity) {
  const uint64_t small = capacity / 4, large = capacity / 2;
  const double ts = triad_call_seconds(small), tl = triad_call_seconds(large);
  const double whole = static_cast<double>(large) / tl;
  const double slope = tl > ts ? static_cast<double>(large - small) / (tl - ts) : 0.0;
  return slope > 0 && slope < 20 * whole ? std::max(slope, whole) : whole;
}

}  // namespace flopsprof::detail
