// The roofline: the machine's ceilings (peak FLOP/s per dtype, memory bandwidth, and where they
// came from) and where a piece of work sits under them. Plain data and pure functions (no torch);
// measuring a CPU's peaks is in flopsprof/machine.h.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flopsprof/format.h"
#include "flopsprof/formulas.h"

namespace flopsprof {

/// A rate per dtype (FLOP/s), indexed by `static_cast<size_t>(DType)`.
using RateByDtype = std::array<double, static_cast<size_t>(DType::kCount)>;

/// One memory level's ceiling in the cache-aware roofline (docs/report.md, "The machine's
/// roofline"): the largest working set placed against it and its bandwidth.
struct BandwidthLevel {
  std::string name;             ///< "L1", "L2", "L3", "DRAM" (a CPU's), "HBM" (a GPU's memory)
  uint64_t capacity_bytes = 0;  ///< the largest working set it holds, bytes; 0: any (main memory)
  double bytes_per_s = 0;       ///< its bandwidth
};

/// The share of a ceiling above which work is flagged `above_ceiling`: 10% over, the timer's
/// and the measurement's noise.
constexpr double kCeilingTolerance = 0.10;

/// The ceilings of the machine a profile ran on: peak FLOP/s per dtype and peak memory
/// bandwidth, each with where it came from. Plain data, safe to copy.
struct MachinePeaks {
  RateByDtype flops_per_s{};  ///< peak FLOP/s per dtype; 0: unknown for that dtype
  double bytes_per_s = 0;     ///< peak memory bandwidth, bytes/s; 0: unknown
  /// The memory levels an op is placed against by its working set (the bytes it touches),
  /// fastest first, main memory last (its bandwidth `bytes_per_s`): a CPU's caches measured
  /// (L1, L2, L3, DRAM), or given; a GPU's memory alone (HBM). Empty: unknown.
  std::vector<BandwidthLevel> bandwidth_by_level;
  /// Where each number came from: "measured" (by flopsprof, in this process), "measured
  /// (cached)" (an earlier measurement on this machine, read from `cache_file`), "given"
  /// (ProfilerOptions::roofline, the command's --peak-flops / --peak-bandwidth), "given
  /// (FLOPSPROF_PEAK_FLOPS)" / "given (FLOPSPROF_PEAK_BANDWIDTH)" (the environment), "device
  /// table" (a GPU's datasheet figures), "device properties" (computed from a GPU's SMs, clock and
  /// memory bus); "" when unknown.
  std::string flops_source, bandwidth_source;
  std::string device;      ///< the CPU's model name or the GPU's name
  int threads = 0;         ///< CPU threads the peaks are for (at::get_num_threads()); 0: a GPU
  std::string detail;      ///< how they were measured or computed (sizes, versions)
  double measure_s = 0;    ///< seconds this process spent measuring them (0: cached or given)
  std::string cache_file;  ///< where measured peaks are kept ("" when not cached)
  /// Why measured peaks look wrong even measured twice ("L2 131 MB/s below DRAM 13.3 GB/s": a
  /// busy machine); such peaks are used, said in the problems, and cached with their doubt
  /// (delete the cache file to measure again). "": none.
  std::string doubt;

  /// Peak FLOP/s for `dtype`: its own, else fp32's (no measurement for it), else 0.
  double peak_flops(DType dtype) const;
  /// The ridge point: the intensity (FLOP/byte) where the two ceilings meet; 0 if unknown.
  double ridge(DType dtype) const;
  /// The ridge point against one memory level's bandwidth (the cache-aware roofline's); 0 if
  /// unknown.
  double ridge(DType dtype, const BandwidthLevel& level) const;
  /// Whether both ceilings are known for `dtype`.
  bool known(DType dtype) const { return peak_flops(dtype) > 0 && bytes_per_s > 0; }
  /// The index in `bandwidth_by_level` of the level a working set of `bytes` is placed against:
  /// the first whose capacity holds it (main memory holds any); -1 when there are no levels.
  int level_for(uint64_t bytes) const;
};

/// The ceilings a profile uses (ProfilerOptions::roofline), when not measured or looked up.
/// Given values win over the environment (FLOPSPROF_PEAK_FLOPS, FLOPSPROF_PEAK_BANDWIDTH, same
/// forms as parse_peak_flops / parse_peak_bandwidth), which wins over a measurement (CPU) or the
/// device's figures (GPU), each ceiling on its own.
struct RooflineOptions {
  /// false: no peaks looked up or measured, none shown (bytes and intensity still counted).
  bool enabled = true;
  /// Peak FLOP/s per dtype (index `static_cast<size_t>(DType)`), e.g. from a datasheet; 0: not
  /// given. `set_peak_flops(x)` gives x for every dtype.
  RateByDtype peak_flops{};
  double peak_bandwidth = 0;  ///< peak memory bandwidth, bytes/s; 0: not given
  /// The memory levels (parse_bandwidth_levels), fastest first, main memory last; given, they
  /// replace the measured ones and `peak_bandwidth` (their last is it). Empty: not given.
  std::vector<BandwidthLevel> bandwidth_levels;
  RooflineOptions& set_peak_flops(double flops_per_s) {
    peak_flops.fill(flops_per_s);
    return *this;
  }
};

/// Where some work (an op, a module's forward or backward) sits on the roofline.
struct RooflinePoint {
  double intensity = 0;             ///< arithmetic intensity, FLOPs per byte moved
  double achieved_flops_per_s = 0;  ///< FLOPs / seconds
  double achieved_bytes_per_s = 0;  ///< bytes / seconds
  /// min(peak FLOP/s, intensity x bandwidth): what the machine allows at this intensity; 0 when
  /// the peaks are unknown.
  double attainable_flops_per_s = 0;
  /// The share of its ceiling it reached: memory-bound work its achieved bytes/s over the
  /// bandwidth (its achieved over its attainable FLOP/s, also when it has no FLOPs), compute-bound
  /// work its achieved FLOP/s over the peak. 0 when unknown.
  double share = 0;
  /// Its time was measured (more than 0 s): the achieved rates and the share hold. False where
  /// no time is known (a GPU module none of whose kernels could be linked to it): they read 0,
  /// and the reports say n/a (JSON: null), never a share of 0%.
  bool timed = false;
  /// "memory" (intensity below the ridge point) or "compute" (at or above it); "" when unknown:
  /// no peaks, nothing moved and nothing computed, or FLOPs n/a (an op without a formula).
  std::string bound;
  /// The memory level whose bandwidth it is placed against (its ops' working sets: the level
  /// holding most of its bytes, e.g. "L2"), and that bandwidth over all its ops (bytes over the
  /// time each op's bytes take at its own level's bandwidth). "" and 0: unknown.
  std::string ceiling;
  double ceiling_bytes_per_s = 0;
  /// Its share is above its ceiling by more than kCeilingTolerance: the ceiling (or its time)
  /// cannot be trusted for it; the profile's problems say why it may be.
  bool above_ceiling = false;
};

/// The memory ceiling of some work: a level's name and the bandwidth its bytes are placed against.
struct MemoryCeiling {
  std::string name;
  double bytes_per_s = 0;
};

/// The roofline point of work of `flops` FLOPs (`flops_known` false: n/a, an op without a
/// formula) that moved `bytes` bytes in `seconds`, under the ceilings of `peaks` for `dtype`.
/// Pure, O(1).
RooflinePoint roofline_point(uint64_t flops, bool flops_known, uint64_t bytes, double seconds,
                             const MachinePeaks& peaks, DType dtype);
/// The same against `memory` (its bandwidth instead of the peak bandwidth: a cache level's, or
/// the effective one of work spread over levels). Pure, O(1).
RooflinePoint roofline_point(uint64_t flops, bool flops_known, uint64_t bytes, double seconds,
                             const MachinePeaks& peaks, DType dtype, const MemoryCeiling& memory);

/// What a memory-bound point is measured against, in words: "the L3 bandwidth (69.73 GB/s)"; a
/// point whose bytes sat in several levels has a ceiling of its own between theirs, said so ("its
/// memory ceiling (24.57 GB/s: its bytes at their levels' bandwidths, most in L3, 15.06 GB/s)"),
/// never passed off as the level's. Pure.
std::string memory_ceiling_text(const MachinePeaks& peaks, const RooflinePoint& point);

/// Parses a peak given as text: a number with an optional SI suffix ("1.5e12", "900G", "3.35T"),
/// or for FLOP/s also per dtype ("fp32=67T,bf16=989T"; a bare number is every dtype's). Throws
/// `Error` naming the problem and the form expected. Units: FLOP/s, or bytes/s for `bandwidth`.
RateByDtype parse_peak_flops(const std::string& text);
double parse_peak_bandwidth(const std::string& text);
/// Memory levels as text: "NAME:CAPACITY=RATE,...,NAME=RATE", fastest first, capacities rising,
/// the last (main memory) without a capacity: "L1:32K=400G,L2:1M=200G,L3:32M=100G,DRAM=20G"
/// (capacities in bytes with K, M, G as 1024-based suffixes). Throws `Error` naming the problem.
std::vector<BandwidthLevel> parse_bandwidth_levels(const std::string& text);

/// Dense peak FLOP/s of a GPU for a dtype, from a built-in table (H100 SXM/PCIe, H200, A100):
/// `device_name` as CUDA reports it ("NVIDIA H100 80GB HBM3"). fp32 with `tf32`, and
/// DType::kTFloat32, use the TF32 tensor-core peak. nullopt for an unknown device or dtype.
std::optional<double> device_peak_flops(const std::string& device_name, DType dtype,
                                        bool tf32 = false);

/// Model FLOPs utilisation: achieved FLOP/s over the device's peak for `dtype`; nullopt when the
/// peak is unknown or `seconds` is 0.
std::optional<double> mfu(uint64_t flops, double seconds, const std::string& device_name,
                          DType dtype, bool tf32 = false);

}  // namespace flopsprof
