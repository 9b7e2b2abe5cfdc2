// The Chrome trace-event JSON writer (chrome://tracing, Perfetto): writes the timeline that
// aggregation/timeline.h builds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aggregation/timeline.h"

namespace flopsprof::detail {

struct TraceClock {
  int64_t origin = 0;        ///< timestamp of the profile's start (timestamp units)
  double ns_per_tick = 1.0;  ///< nanoseconds per timestamp unit
  /// Trace time of `origin`: wall-clock ns from `TraceMeta::base_time_ns` to the profile's start,
  /// so that every rank's trace shares one time base (kineto's). 0: the trace starts at 0.
  int64_t origin_ns = 0;
};

/// kineto's trace base time for wall-clock `wall_ns` (ns since the epoch): rounded down to a
/// multiple of three months (7,889,238 s), so that processes started apart share it while
/// microsecond timestamps keep nanosecond precision in a double.
int64_t kineto_base_time_ns(int64_t wall_ns);

/// A profiler-internal interval shown at level 2 ("flopsprof: stop_profile").
struct InternalSpan {
  std::string name;
  int64_t start = 0, end = 0;  ///< timestamp units
};

/// What the trace says about its process, written before `traceEvents` as kineto does (Holistic
/// Trace Analysis reads metadata only up to `traceEvents`, and finds the rank with the regex
/// `"rank":\s+(\d+)`).
struct TraceMeta {
  int64_t base_time_ns = 0;  ///< wall-clock ns (since the epoch) of trace time 0
  /// kineto's step annotation `ProfilerStep#<step>` over the profile (its start to `step_end`,
  /// on the first thread); -1: none. HTA finds iterations by it.
  int64_t step = -1;
  int64_t step_end = 0;      ///< timestamp units
  std::string device;        ///< GPU name, when known (deviceProperties)
  bool distributed = false;  ///< write distributedInfo
  int rank = 0, world_size = 1;
  std::string backend;
};

/// Writes `trace` as Chrome trace-event JSON. Level 1: phases, module and op spans (op args:
/// module, phase, flops, input shapes), flow arrows from backward nodes to their forward ops.
/// Level 2 adds the memory counter track and profiler-internal timing. `thread_ids` names the
/// threads (index = TraceData thread index).
std::string to_chrome_trace(const TraceData& trace, const std::vector<uint64_t>& thread_ids,
                            const TraceClock& clock, int level,
                            const std::vector<InternalSpan>& internal, const TraceMeta& meta = {});

}  // namespace flopsprof::detail
