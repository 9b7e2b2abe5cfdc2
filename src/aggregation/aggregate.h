// The consumers of the attribution: module statistics, op table, memory, GPU, and the timeline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aggregation/op_counts.h"
#include "attribution/attribution.h"
#include "attribution/module_tree.h"
#include "capture/events.h"
#include "capture/gpu.h"
#include "flopsprof/report.h"

namespace flopsprof::detail {

/// The records (what attribution reads: tree, threads, names, stop time) plus what only the
/// consumers need.
struct AggregateInput : AttributionInput {
  double ns_per_tick = 1.0;            ///< nanoseconds per timestamp unit (TSC ticks or 1)
  bool track_memory = false;           ///< memory records were collected
  const GpuCollection* gpu = nullptr;  ///< GPU activity (CUPTI), if any
  std::string timer;
  std::vector<std::string> problems;  ///< seen during collection
};

/// What every consumer of a profile's records reads: the attribution of each event and the count
/// of each counted op, each computed once.
struct Analysis {
  Attribution attribution;
  OpCounts counts;
};
Analysis analyze(const AggregateInput& input);

/// Module statistics (FLOPs, MACs, calls, latency, backward), the op table, outside-the-model
/// work, memory and GPU statistics, from the events and their attribution. Pure: no torch, no
/// globals but the formula registry.
ProfileResult aggregate(const AggregateInput& input, const Attribution& attribution,
                        const OpCounts& counts);

/// Attributes, counts, then aggregates. For tests and one-off use (reports/trace.h has the
/// one-off form that also builds the timeline).
ProfileResult aggregate(const AggregateInput& input);

}  // namespace flopsprof::detail
