// The Chrome trace-event JSON writer (chrome://tracing, Perfetto).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aggregation/aggregate.h"
#include "aggregation/collectives.h"

namespace flopsprof::detail {

/// Timeline data for the Chrome trace, built by build_trace from the records, their
/// attribution and counts (the trace stage's input to the writer below).
struct TraceData {
  struct Span {
    int thread = 0;              ///< index into AggregateInput::threads
    int64_t start = 0, end = 0;  ///< timestamp units
    std::string name;
    const char* cat = "op";  ///< "op", "module", "phase", "autograd"
    std::string module;      ///< dotted name ("" root, "(autograd)")
    std::string phase;
    int64_t flops = -1;  ///< -1: no count (no formula, or not an op)
    int64_t bytes = -1;  ///< bytes read + written (ops that count bytes); -1: none
    int64_t bytes_read = -1, bytes_written = -1;
    std::string inputs;  ///< "T<768x768xfp32>, 1, [1, 1]" for counted ops
    // kineto's args (HTA reads them): ops and autograd nodes only.
    uint64_t external_id = 0;                      ///< make_external_id(thread, event); 0: none
    int64_t seq_nr = -1;                           ///< autograd sequence number
    uint64_t fwd_thread = 0;                       ///< autograd nodes: the forward thread's id
    std::vector<std::vector<int64_t>> input_dims;  ///< per argument: sizes ([] when none)
    std::vector<std::string> input_types;          ///< per argument: dtype or kind
  };
  struct Flow {  ///< a backward node back to the forward op that created it
    int from_thread = 0, to_thread = 0;
    int64_t from = 0, to = 0;  ///< inside the forward op's span / the node's span
  };
  struct GpuSpan {               ///< a kernel / memcpy / memset on a device stream
    const char* cat = "kernel";  ///< kineto's: "kernel", "gpu_memcpy", "gpu_memset"
    uint64_t external_id = 0;    ///< the launching op's
    uint32_t device = 0, stream = 0;
    int64_t start = 0, end = 0;  ///< converted to host timestamp units
    std::string name, module;
    int launcher_thread = -1;  ///< the launching op, for a flow arrow
    int64_t launcher_start = 0;
  };
  /// A c10d collective: issued on `thread`, completed at `end` (aggregation/collectives.h).
  using Collective = CollectiveCall;
  std::vector<Span> spans;
  std::vector<Flow> flows;
  std::vector<Collective> collectives;
  std::vector<GpuSpan> gpu;
  /// Per-module spans on the GPU tracks (kineto's gpu_user_annotation): a module call's first
  /// kernel start to its last kernel end.
  std::vector<GpuSpan> gpu_modules;
  std::vector<std::pair<int64_t, int64_t>> memory;  ///< (time, bytes in use)
};

/// The Chrome-trace timeline (phase, module and op spans, autograd flows, GPU spans, memory).
TraceData build_trace(const AggregateInput& input, const Analysis& analysis);

/// Attributes, counts, aggregates and builds the timeline in one call. For tests.
ProfileResult aggregate_with_trace(const AggregateInput& input, TraceData* trace);

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
