// The consumers of the attribution: module statistics, op table, memory, GPU, and the timeline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attribution/attribution.h"
#include "capture/events.h"
#include "flopsprof/report.h"
#include "capture/gpu.h"
#include "attribution/module_tree.h"

namespace flopsprof::detail {

struct AggregateInput {
  const ModuleTree* tree = nullptr;
  std::vector<const ThreadEvents*> threads;
  const NameLookup* names = nullptr;
  int64_t stop_ns = 0;        ///< end time for events and scopes still open (timestamp units)
  double ns_per_tick = 1.0;   ///< nanoseconds per timestamp unit (TSC ticks or 1)
  bool track_memory = false;  ///< memory records were collected
  const GpuCollection* gpu = nullptr;  ///< GPU activity (CUPTI), if any
  std::string timer;
  std::vector<std::string> problems;  ///< seen during collection
};

/// Timeline data for the Chrome trace, produced by `aggregate` on request.
struct TraceData {
  struct Span {
    int thread = 0;              ///< index into AggregateInput::threads
    int64_t start = 0, end = 0;  ///< timestamp units
    std::string name;
    const char* cat = "op";  ///< "op", "module", "phase", "autograd"
    std::string module;      ///< dotted name ("" root, "(autograd)")
    std::string phase;
    int64_t flops = -1;  ///< -1: no count (no formula, or not an op)
    std::string inputs;  ///< "T<768x768xf32>, 1, [1, 1]" for counted ops
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
  /// A c10d collective (src/collectives.h): issued on `thread`, completed at `end`.
  struct Collective {
    int thread = 0;              ///< the issuing thread (index into AggregateInput::threads)
    int64_t start = 0, end = 0;  ///< timestamp units; end: completion (stop when it never did)
    bool completed = true;
    std::string name;    ///< "gloo:all_reduce"
    std::string module;  ///< the module whose work issued it (as in the op table)
    std::string phase;   ///< "forward", "backward", "step", "outside"
    uint64_t numel = 0, bytes = 0;
    uint32_t tensors = 0;
    DType dtype = DType::kUnknown;  ///< the first input's
    std::vector<int64_t> dims;      ///< the first input's sizes
  };
  std::vector<Span> spans;
  std::vector<Flow> flows;
  std::vector<Collective> collectives;
  std::vector<GpuSpan> gpu;
  /// Per-module spans on the GPU tracks (kineto's gpu_user_annotation): a module call's first
  /// kernel start to its last kernel end.
  std::vector<GpuSpan> gpu_modules;
  std::vector<std::pair<int64_t, int64_t>> memory;  ///< (time, bytes in use)
};

/// The attribution stage's input for `input`'s threads.
AttributionInput attribution_input(const AggregateInput& input);

/// Module statistics (FLOPs, MACs, calls, latency, backward), the op table, outside-the-model
/// work, memory and GPU statistics, from the events and their attribution. Pure: no torch, no
/// globals but the formula registry.
ProfileResult aggregate(const AggregateInput& input, const Attribution& attribution);

/// The Chrome-trace timeline (phase, module and op spans, autograd flows, GPU spans, memory).
TraceData build_trace(const AggregateInput& input, const Attribution& attribution);

/// Attributes, then aggregates (and fills `trace` when given). For tests and one-off use.
ProfileResult aggregate(const AggregateInput& input, TraceData* trace = nullptr);

/// "T<768x768xf32>, 1, [1, 1]": an op's captured arguments as shown in the trace.
std::string format_args(const std::vector<ArgView>& args);

/// The formula inputs of one event, as views into its thread's storage.
std::vector<ArgView> arg_views(const ThreadEvents& thread, const RawEvent& event);

}  // namespace flopsprof::detail
