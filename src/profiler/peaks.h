// The ceilings a profile's roofline uses: given, from the environment, the device's, or this
// CPU's measured ones (flopsprof/machine.h), each ceiling on its own.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "flopsprof/roofline.h"

namespace flopsprof::detail {

/// The peaks of a profile: `options`' given values, else the environment's
/// (FLOPSPROF_PEAK_FLOPS / FLOPSPROF_PEAK_BANDWIDTH), else `device` (a GPU's, from the plugin),
/// else, on a CPU (`device` empty) when `measure` is set, cpu_peaks() for `dtypes`; with
/// `measure` false only what needs no measurement (given, environment, cache). Unknown ceilings
/// stay 0 with an empty source; a measurement that fails, or an environment variable that does
/// not parse (ignored), is said in `*problem`. Never throws.
MachinePeaks profile_peaks(const RooflineOptions& options, const std::vector<DType>& dtypes,
                           const std::optional<MachinePeaks>& device, bool measure,
                           std::string* problem);

/// Forgets the peaks this process measured (tests: the next cpu_peaks() reads the cache file,
/// the next measure_device_peaks() measures).
void forget_measured_peaks();

/// A device's ceilings (datasheet or properties) with `measured` (measure_device_peaks) added to
/// their `detail`: each measured FLOP/s and the bandwidth, with its share of the ceiling.
MachinePeaks with_measurement(const MachinePeaks& device, const MachinePeaks& measured);

}  // namespace flopsprof::detail
