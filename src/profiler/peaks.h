// The ceilings a profile's roofline uses: given, from the environment, the device's, or this
// CPU's measured ones (flopsprof/machine.h), each ceiling on its own.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flopsprof/roofline.h"

namespace flopsprof::detail {

/// Where a profile's ops ran, for its ceilings.
struct PeaksTarget {
  int device_type = -1;  ///< c10::DeviceType of a device (GPU) profile; -1: the CPU
  int device_index = 0;
  std::optional<MachinePeaks> known;  ///< the device's ceilings from the plugin (table, properties)
  bool meta = false;                  ///< a model on meta: no machine's ceilings but given ones
};

/// The peaks of a profile, each ceiling on its own: `options`' given values, else the
/// environment's (FLOPSPROF_PEAK_FLOPS / FLOPSPROF_PEAK_BANDWIDTH), else the target's: a
/// device's known ceilings with, when `measure` is set, a short measurement on the device beside
/// them (or alone when nothing is known of it); on a CPU, cpu_peaks() for `dtypes` (with
/// `measure` false only what a cache holds). Nothing is measured when both ceilings are given.
/// Unknown ceilings stay 0 with an empty source; a measurement that fails, or an environment
/// variable that does not parse (ignored), is said in `*problem`. Never throws.
MachinePeaks profile_peaks(const RooflineOptions& options, const std::vector<DType>& dtypes,
                           const PeaksTarget& target, bool measure, std::string* problem);

/// The peak FLOP/s of one dtype from the rates its kernels reached (`kernels`: rate in FLOP/s and
/// what was timed, e.g. {34e9, "fp32 mm 1024^3"}; 0: it could not run, its text saying so or
/// empty): the largest, as an op runs at most as fast as the fastest kernel family. `*detail`
/// lists each with its rate, "(the peak)" after the largest when there are several, then "; "
/// (empty when no kernel has a text).
double fastest_kernel(const std::vector<std::pair<double, std::string>>& kernels,
                      std::string* detail);

/// This CPU's model name from /proc/cpuinfo ("unknown CPU" when it says none); read once.
std::string cpu_model();

/// Forgets the peaks this process measured (tests: the next cpu_peaks() reads the cache file,
/// the next measure_device_peaks() measures).
void forget_measured_peaks();

/// A device's ceilings (datasheet or properties) with `measured` (measure_device_peaks) added to
/// their `detail`: each measured FLOP/s and the bandwidth, with its share of the ceiling.
MachinePeaks with_measurement(const MachinePeaks& device, const MachinePeaks& measured);

}  // namespace flopsprof::detail
