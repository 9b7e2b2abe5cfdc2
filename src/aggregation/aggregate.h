// The analysis every consumer reads (attribution, op counts, memory timeline) and the aggregation:
// module statistics, op table, outside work, memory and GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aggregation/collectives.h"
#include "aggregation/kv_cache.h"
#include "aggregation/op_counts.h"
#include "attribution/attribution.h"
#include "flopsprof/report.h"
#include "records/events.h"
#include "records/gpu.h"
#include "records/module_tree.h"

namespace flopsprof::detail {

/// The records (what attribution reads: tree, threads, names, stop time) plus what only the
/// consumers need.
struct AggregateInput : AttributionInput {
  double ns_per_tick = 1.0;            ///< nanoseconds per timestamp unit (TSC ticks or 1)
  bool track_memory = false;           ///< memory records were collected
  const GpuCollection* gpu = nullptr;  ///< GPU activity (CUPTI), if any
  std::string timer;
  std::vector<std::string> problems;  ///< seen during collection
  MachinePeaks machine;               ///< the roofline's ceilings (unknown: sources empty)
  std::vector<RegionWindow> regions;  ///< the caller's region windows (open ones: end 0)
  AttentionConvention attention = AttentionConvention::kDense;  ///< of the counts
  Tf32Use tf32;            ///< a CUDA model's fp32 ops on TF32 tensor cores (counted in tf32)
  int64_t batch_size = 0;  ///< per device (ProfilerOptions::batch_size); 0: unknown
  /// What the problems say makes a module's calls exact; empty: FLOPSPROF_MODULE() in its forward
  /// (an exported program's calls are its graph's: there is nothing to add).
  std::string call_fix;
};

/// One allocation or free in the memory timeline of all threads.
struct MemoryPoint {
  int64_t time = 0;    ///< timestamp units
  int64_t in_use = 0;  ///< net bytes allocated since the profile started, after this record
  /// Of `in_use`: kernel workspace, blocks that are freed before the op that allocated them
  /// returns (scratch buffers, reordered copies, per-thread buffers, a composite op's
  /// temporaries). `in_use - workspace` is what tensors that outlive their op hold.
  int64_t workspace = 0;
  bool is_workspace = false;        ///< this record allocates or frees a workspace block
  uint32_t thread = 0, record = 0;  ///< `threads[thread]->memory[record]`
};

/// The memory records of all threads merged by time (ties: thread, then record order), with the
/// bytes in use and the workspace in use after each; saturated at the int64 limits (`*saturated`
/// set) for absurd shapes. A block is workspace when its free (matched by device and address) is
/// on the thread that allocated it while the allocating op, or an op inside it, is open; blocks
/// allocated before the profile or reported without an address are not.
std::vector<MemoryPoint> memory_timeline(const AggregateInput& input, bool* saturated);

/// Where a device record (a kernel, copy or set) belongs: the op that launched it (its external
/// correlation id) and that op's module and phase as the attribution placed it.
struct DevicePlacement {
  int thread = -1;         ///< the launching op's thread; -1: no launching op among the records
  uint32_t event = 0;      ///< the launching op, `threads[thread]->events[event]`
  int module = kUnlinked;  ///< the launching op's owner (kOutsideModel, kUnlinked: none)
  Phase phase = Phase::kForward;
};

/// What every consumer of a profile's records reads, each computed once: the attribution of each
/// event, the count of each counted op, the memory timeline (empty without memory tracking),
/// the collectives with their issuing module and phase, the placement of each device record.
struct Analysis {
  Attribution attribution;
  OpCounts counts;
  std::vector<MemoryPoint> memory;
  bool memory_saturated = false;  ///< the bytes in use overflowed 64 bits somewhere
  std::vector<CollectiveCall> collectives;
  std::vector<DevicePlacement> device;  ///< per `gpu->records[k]` (empty without GPU records)
  /// Per thread, per event: the KV cache's share of its bytes (aggregation/kv_cache.h).
  std::vector<std::vector<KvBytes>> kv;
};
Analysis analyze(const AggregateInput& input);

/// Module statistics (FLOPs, MACs, calls, latency, backward), the op table, outside-the-model
/// work, memory and GPU statistics, from the events and their analysis. Pure: no torch, no
/// globals but the formula registry.
ProfileResult aggregate(const AggregateInput& input, const Analysis& analysis);

/// Attributes, counts, then aggregates. For tests and one-off use (aggregation/timeline.h has the
/// one-off form that also builds the timeline).
ProfileResult aggregate(const AggregateInput& input);

}  // namespace flopsprof::detail
