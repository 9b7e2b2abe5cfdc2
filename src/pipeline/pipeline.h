// The stages after capture, run over one profiler's recording: the aggregation input, the
// analysis, the roofline's ceilings, the aggregation, the workload stamp, the latency correction,
// and the trace's data. The facade (FlopsProfiler) starts and stops the recording and asks this
// stage for finished data; the writers (src/reports/) take that data and compute nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aggregation/aggregate.h"
#include "aggregation/timeline.h"
#include "capture/module_index.h"
#include "capture/recording.h"
#include "flopsprof/profiler.h"
#include "reports/trace.h"

namespace flopsprof::detail {

/// The roofline's ceilings for a profile whose FLOPs were in `dtypes` (the most FLOPs first).
/// `measure`: this machine's peaks may be measured (at the stop, never while running); a source
/// that failed or was refused says why in `*problem` (left empty otherwise).
using PeaksSource = std::function<MachinePeaks(const std::vector<DType>& dtypes, bool measure,
                                               std::string* problem)>;

/// What a profile is computed with besides its records; the pointers outlive the pipeline.
struct PipelineConfig {
  const Recording* recording = nullptr;
  const ModelIndex* index = nullptr;  ///< the started profile's module tree
  const ProfilerOptions* options = nullptr;
  PeaksSource peaks;        ///< the facade's: given, environment, device's or measured
  std::string host_device;  ///< the workload's device when the profile has no GPU and is not meta
};

/// The trace of a profile's current state, all but what the facade knows (the step annotation's
/// iteration, the rank): `meta.step` is -1 and `meta.distributed` false.
struct TraceParts {
  TraceData data;
  std::vector<uint64_t> thread_ids;    ///< per TraceData thread index
  TraceClock clock;                    ///< origin, tick length, kineto's time base
  std::vector<InternalSpan> internal;  ///< the pipeline's own spans (stopped profiles)
  TraceMeta meta;                      ///< base time, step end, device
};

/// The post-capture pipeline of one started profile. Not thread-safe: called from the thread that
/// calls the facade's readers (the recording's own threads keep recording meanwhile).
class Pipeline {
 public:
  explicit Pipeline(PipelineConfig config);

  /// After the recording stopped: analyses, takes the ceilings (measured at most once per
  /// process), aggregates, corrects the latencies; once. Cost: the profile's post-processing,
  /// linear in the records.
  void finish();

  /// While the recording runs: a snapshot of the records so far, computed again only when they
  /// changed (readers called back to back share it; spans still open end at the first of those
  /// reads). After finish(): the stopped profile. nullptr before either.
  const ProfileResult* current() const;

  /// The stopped profile, for what the facade adds after it (rank, distributed statistics);
  /// nullptr when none.
  ProfileResult* stopped() { return result_ ? &*result_ : nullptr; }

  /// The trace of current()'s state (call current() first). Level 2 adds the pipeline's own time:
  /// computing the stopped profile, and this trace's post-processing.
  TraceParts trace(int level) const;

  /// Forgets what was computed (the recording restarted or a reader must not reuse it).
  void clear();

 private:
  AggregateInput input(const RecordsView& records, int64_t stop_tick, double ns_per_tick,
                       const std::string& timer_label) const;
  MachinePeaks peaks(const Analysis& a, bool measure, AggregateInput& in) const;
  ProfileResult compute(const AggregateInput& in, const Analysis& a) const;
  ProfileResult correct(const RecordsView& recs, const AggregateInput& in, ProfileResult raw) const;

  PipelineConfig config_;
  // The stopped profile: its analysis (for the trace), result and the time computing it took.
  Analysis stopped_analysis_;
  std::optional<ProfileResult> result_;
  std::vector<InternalSpan> internal_;
  double compute_ns_ = 0;
  // While running: the records last read, their analysis and the snapshot computed from them,
  // kept while the records stay as they were (their fingerprint).
  struct Live {
    RecordsView records;
    std::vector<uint64_t> fingerprint;
    int64_t now = 0;  // the snapshot's end of open spans
    Analysis analysis;
  };
  mutable std::optional<Live> live_;
  mutable std::optional<ProfileResult> snapshot_;
};

/// The build's identity in a workload: LibTorch's, flopsprof's version and build type.
void stamp_build(Workload& w);

}  // namespace flopsprof::detail
