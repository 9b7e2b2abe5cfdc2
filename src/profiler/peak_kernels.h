// The kernels that measure a machine's peaks with LibTorch's own ops: a matrix product and a
// convolution per dtype (FLOP/s), a streaming triad (bandwidth) over main memory and over half of
// each cache level. Each runs unobserved by the caller's profile (the caller holds
// detail::Unobserved) and draws no random numbers. Not thread-safe: one measurement at a time
// (the caller's lock).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "flopsprof/formulas.h"
#include "flopsprof/roofline.h"

namespace flopsprof::detail {

/// Waits for the work queued on `device`'s current stream (nothing to wait for on the CPU).
void wait_for_device(const c10::Device& device);

/// Seconds from `t0` to now.
double seconds_since(std::chrono::steady_clock::time_point t0);

/// Peak FLOP/s of torch::mm at `dtype` on `device` (`*what`: what was timed, or why it could
/// not run); 0 when LibTorch cannot multiply this dtype there.
double gemm_peak(DType dtype, std::string* what, const c10::Device& device = c10::kCPU);

/// Peak FLOP/s of a 3x3 convolution at `dtype` on this CPU; 0 when it cannot run.
double conv_peak(DType dtype, std::string* what);

/// Main memory's bandwidth (bytes/s) from a triad over arrays larger than the last-level cache
/// (`*detail`: what was timed).
double triad_bandwidth(std::string* detail, const c10::Device& device = c10::kCPU);

/// The CPU's data caches (sysfs, CPU 0): L1 (data), L2, L3, with their sizes; empty when unknown.
std::vector<BandwidthLevel> cache_levels();

/// The bandwidth of a cache level of `capacity` bytes (bytes/s).
double level_bandwidth(uint64_t capacity);

}  // namespace flopsprof::detail
