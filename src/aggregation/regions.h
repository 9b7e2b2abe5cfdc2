// Regions the caller named (FlopsProfiler::region()): every total and every module's numbers split
// by the windows the ops began in, with tokens, rates and utilisation per region.
#pragma once

#include <vector>

#include "aggregation/aggregate.h"

namespace flopsprof::detail {

/// Fills `result.regions` and each module's `regions` from `input.regions` (the windows) and the
/// analysis of the same records; `result` is aggregate()'s over them (its modules, its machine).
/// A region's problems (windows without tokens) go to `result.problems`. Does nothing without
/// windows. Cost: one pass over the events and the call spans, a binary search each.
void split_by_region(const AggregateInput& input, const Analysis& analysis, ProfileResult& result);

/// Whether a utilisation ratio (MFU, HFU, MBU) is above 1 by more than kCeilingTolerance: more
/// than the peak it is measured against, so flagged (ModuleStats::mfu_above_peak). Pure.
inline bool above_peak(double ratio) { return ratio > 1.0 + kCeilingTolerance; }

/// FLOP-weighted utilisation: the seconds `flops_by_dtype` would take at each dtype's peak, over
/// `seconds`; 0 when `seconds` is 0, nothing was computed or a dtype with FLOPs has no known
/// peak. Pure.
double flops_utilisation(const FlopsByDtype& flops_by_dtype, double seconds,
                         const MachinePeaks& peaks);

}  // namespace flopsprof::detail
