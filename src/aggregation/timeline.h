// The timeline of a profile (phase, module and op spans, autograd flows, device spans, memory
// counter, collectives): what the Chrome trace shows, built from the records and their analysis.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "aggregation/aggregate.h"
#include "aggregation/collectives.h"

namespace flopsprof::detail {

/// The timeline the Chrome trace shows, built by build_trace from the records and their analysis
/// (reports/trace.h writes it).
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
    double intensity = -1;  ///< FLOPs per byte moved (ops with a FLOP count and bytes); -1: none
    std::string inputs;     ///< "T<768x768xfp32>, 1, [1, 1]" for counted ops
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

}  // namespace flopsprof::detail
