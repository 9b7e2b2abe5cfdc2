// The batch-size sweep's renderings (BatchSweep::table, csv and svg call them).
#pragma once

#include <string>
#include <vector>

#include "flopsprof/report.h"

namespace flopsprof::detail {

/// A text table, one line per row: batch, forward and training peak (MiB), forward GFLOPs, ms.
std::string sweep_table(const std::vector<BatchSweepRow>& rows);
/// CSV with a header line: batch_size,fwd_peak_bytes,train_peak_bytes,fwd_flops,fwd_latency_s.
std::string sweep_csv(const std::vector<BatchSweepRow>& rows);
/// An SVG line plot of peak memory (MiB) against batch size, forward and (when any row has one)
/// training; no plotting dependency.
std::string sweep_svg(const std::vector<BatchSweepRow>& rows);

}  // namespace flopsprof::detail
