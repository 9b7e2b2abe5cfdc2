// The stages after capture (pipeline.h): input, analysis, ceilings, aggregation, workload,
// correction, trace data.
#include "pipeline/pipeline.h"

#include <chrono>
#include <map>
#include <utility>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/version.h>

#include "capture/cost_removal.h"
#include "flopsprof/config.h"

namespace flopsprof::detail {
namespace {

double ns_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void stamp_build(Workload& w) {
  w.libtorch_version = TORCH_VERSION;
  w.build_type = FLOPSPROF_BUILD_TYPE;
  w.flopsprof_version = FLOPSPROF_VERSION;
}

Pipeline::Pipeline(PipelineConfig config) : config_(std::move(config)) {}

// The aggregation input over the live session's records (while running) or the stopped
// profile's, with the problems seen while collecting.
AggregateInput Pipeline::input(const RecordsView& records, int64_t stop_tick, double ns_per_tick,
                               const std::string& timer_label) const {
  const Recording& rec = *config_.recording;
  const ProfilerOptions& options = *config_.options;
  AggregateInput in;
  const Collection& c = rec.collected();
  if (!rec.running() && c.gpu) in.gpu = &*c.gpu;
  in.tree = &config_.index->tree;
  in.names = &NameTable::instance();
  in.stop_tick = stop_tick;
  in.timer = timer_label;
  in.ns_per_tick = ns_per_tick;
  in.track_memory = options.track_memory;
  in.threads = records.threads;
  in.problems = capture_problems(records);
  const CaptureInfo capture = rec.capture();
  if (capture.threads_joined > 0) {
    in.problems.push_back(fmt::format(
        "capture: {} thread(s) other than the profiling one joined the dispatch capture late (at "
        "their first call of a built-in module, or when a sampled op of theirs found them); ops "
        "they ran before are not in this profile (capture = record_function observes every "
        "thread from the start)",
        capture.threads_joined));
  }
  if (capture.coverage_gaps > 0) {
    in.problems.push_back(fmt::format(
        "capture: the profiling thread lost the dispatch capture's key {} time(s) (a "
        "thread-state "
        "guard opened before start_profile(), such as c10::InferenceMode, ended during the "
        "profile) and got it back at its next built-in module call; ops between were not "
        "seen: open such guards after start_profile(), or use capture = record_function",
        capture.coverage_gaps));
  }
  in.regions = rec.regions();
  in.attention = options.attention;
  in.tf32 = rec.gpu().tf32;
  in.batch_size = options.batch_size;
  return in;
}

// The roofline's ceilings for a profile whose ops `a` counted, for the dtypes its FLOPs were in.
// A failed source leaves them unknown, with the reason in `in`'s problems.
MachinePeaks Pipeline::peaks(const Analysis& a, bool measure, AggregateInput& in) const {
  std::string problem;
  MachinePeaks p = config_.peaks(a.counts.flop_dtypes(), measure, &problem);
  if (!problem.empty()) in.problems.push_back("roofline: " + problem);
  return p;
}

ProfileResult Pipeline::compute(const AggregateInput& in, const Analysis& a) const {
  const ProfilerOptions& options = *config_.options;
  ProfileResult r = aggregate(in, a);
  r.world_size = options.world_size;
  r.data_parallel_size = options.data_parallel_size;
  r.model_parallel_size = options.model_parallel_size;
  Workload& w = r.workload;
  if (!options.inputs.empty()) {  // else what the aggregation read from the model's first op
    w.inputs = options.inputs;
    w.inputs_source = "given";
  }
  w.intra_op_threads = at::get_num_threads();
  stamp_build(w);
  w.profile_step = options.profile_step;
  const CaptureInfo capture = config_.recording->capture();
  w.capture = capture.dispatch ? "dispatch" : "record_function";
  w.capture_note = capture.note;
  w.device = !r.gpu.device.empty() ? r.gpu.device
             : config_.index->meta ? "meta"
                                   : config_.host_device;
  return r;
}

// `raw` (computed from `recs` as `in`) with flopsprof's own cost removed from its host latencies
// (the records' timestamps moved back by the calibrated cost of the records before them,
// analysed and aggregated again), the measured figures kept in its *_raw_s fields; `raw` itself,
// saying why, when the cost is not known.
ProfileResult Pipeline::correct(const RecordsView& recs, const AggregateInput& in,
                                ProfileResult raw) const {
  const CaptureInfo capture = config_.recording->capture();
  LatencyCorrection corr;
  corr.op_inner_ns = capture.cost.op.inner_ns;
  corr.op_outer_ns = capture.cost.op.outer_ns;
  corr.boxed_op_inner_ns = capture.cost.boxed_op.inner_ns;
  corr.boxed_op_outer_ns = capture.cost.boxed_op.outer_ns;
  corr.call_inner_ns = capture.cost.call.inner_ns;
  corr.call_outer_ns = capture.cost.call.outer_ns;
  corr.nested_record_ns = capture.cost.op.nested_ns;
  auto keep_raw = [](ProfileResult& r, const ProfileResult& measured) {
    r.duration_raw_s = measured.duration_s;
    r.bwd_latency_raw_s = measured.bwd_latency_s;
    r.step_latency_raw_s = measured.step_latency_s;
    for (size_t i = 0; i < r.modules.size() && i < measured.modules.size(); ++i)
      r.modules[i].latency_raw_s = measured.modules[i].latency_s;
    std::map<std::pair<std::string, std::string>, double> ops;
    for (const OpStats& o : measured.ops) ops[{o.name, o.phase}] = o.latency_s;
    for (OpStats& o : r.ops) {
      auto it = ops.find({o.name, o.phase});
      o.latency_raw_s = it != ops.end() ? it->second : o.latency_s;
    }
  };
  // CUPTI records every CUDA runtime and driver API call for the correlation of kernels to ops;
  // that cost is in the host spans and not calibrated (a ResNet-50 on an H200, batch 8, launch
  // bound: its forward reported at 1.21 x its unprofiled median, measured 2026-11-28).
  if (raw.gpu.backend == "cupti") {
    corr.not_removed =
        "CUPTI's recording of every CUDA runtime and driver API call (what links kernels to "
        "ops) is in the host latencies, not measured apart: a launch-bound model's host "
        "latencies read high (a ResNet-50 forward at batch 8 on an H200: 1.21 x its unprofiled "
        "time); the device times (GPU busy, device fwd) are the kernels' own";
  }
  if (!capture.cold_start.empty())
    corr.not_removed += (corr.not_removed.empty() ? "" : "; ") + capture.cold_start;
  if (!capture.cost.calibrated) {
    corr.reason = capture.uncorrected;
    keep_raw(raw, raw);
    raw.correction = corr;
    return raw;
  }
  CostRemoved fixed = remove_capture_cost(recs.threads, in.regions, capture.cost, capture.dispatch,
                                          in.ns_per_tick, NameTable::instance());
  const InPlaceExtras& x = fixed.extras;
  corr.op_inner_ns += x.op.inner_ns;
  corr.op_outer_ns += x.op.pre_ns + x.op.post_ns;
  corr.boxed_op_inner_ns += x.boxed_op.inner_ns;
  corr.boxed_op_outer_ns += x.boxed_op.pre_ns + x.boxed_op.post_ns;
  corr.call_inner_ns += x.call.inner_ns;
  corr.call_outer_ns += x.call.pre_ns + x.call.post_ns;
  corr.op_in_place_ns = x.op.total_ns();
  corr.boxed_op_in_place_ns = x.boxed_op.total_ns();
  corr.call_in_place_ns = x.call.total_ns();
  corr.in_place_samples = x.op.samples + x.boxed_op.samples + x.call.samples;
  AggregateInput cin = in;
  cin.threads.clear();
  for (const auto& t : fixed.threads) cin.threads.push_back(t.get());
  cin.regions = std::move(fixed.regions);
  const Analysis a = analyze(cin);
  ProfileResult r = compute(cin, a);
  keep_raw(r, raw);
  corr.applied = true;
  const std::string cache =
      uncalibrated_cache_cost(raw.duration_s + raw.bwd_latency_s + raw.step_latency_s,
                              r.duration_s + r.bwd_latency_s + r.step_latency_s);
  if (!cache.empty()) corr.not_removed += (corr.not_removed.empty() ? "" : "; ") + cache;
  r.correction = corr;
  return r;
}

void Pipeline::finish() {
  clear();
  const Recording& rec = *config_.recording;
  const Collection& c = rec.collected();
  const auto t0 = std::chrono::steady_clock::now();
  double peaks_ns = 0;
  {
    const RecordsView recs = rec.records();
    AggregateInput in = input(recs, c.stop, c.ns_per_tick, c.timer);
    stopped_analysis_ = analyze(in);
    const auto p0 = std::chrono::steady_clock::now();
    in.machine = peaks(stopped_analysis_, /*measure=*/true, in);
    peaks_ns = ns_since(p0);
    result_ = correct(recs, in, compute(in, stopped_analysis_));
  }
  compute_ns_ = ns_since(t0) - peaks_ns;
  internal_.push_back(InternalSpan{"flopsprof: stop_profile (computing results)", c.stop, c.stop});
}

const ProfileResult* Pipeline::current() const {
  const Recording& rec = *config_.recording;
  if (!rec.running()) return result_ ? &*result_ : nullptr;
  RecordsView recs = rec.records();
  std::vector<uint64_t> fingerprint = records_fingerprint(recs.threads);
  for (const RegionWindow& w : rec.regions())  // opened, closed, fed
    fingerprint.insert(fingerprint.end(), {static_cast<uint64_t>(w.end_tick), w.tokens});
  fingerprint.push_back(rec.regions().size());
  if (snapshot_ && live_ && fingerprint == live_->fingerprint) return &*snapshot_;
  const int64_t now = rec.now();
  AggregateInput in = input(recs, now, rec.ns_per_tick(), rec.timer_name());
  Analysis a = analyze(in);
  in.machine = peaks(a, /*measure=*/false, in);
  snapshot_ = correct(recs, in, compute(in, a));
  live_ = Live{std::move(recs), std::move(fingerprint), now, std::move(a)};
  return &*snapshot_;
}

TraceParts Pipeline::trace(int level) const {
  const auto t0 = std::chrono::steady_clock::now();
  const Recording& rec = *config_.recording;
  TraceParts t;
  RecordsView stopped;
  const RecordsView* recs = &stopped;
  if (rec.running()) {  // the records and analysis current() last read
    const Live& live = *live_;
    t.clock = {rec.origin(), rec.ns_per_tick()};
    t.meta.step_end = live.now;
    recs = &live.records;
    t.data = build_trace(input(live.records, live.now, t.clock.ns_per_tick, rec.timer_name()),
                         live.analysis);
  } else {
    const Collection& c = rec.collected();
    stopped = rec.records();
    t.clock = {c.origin, c.ns_per_tick};
    t.meta.step_end = c.stop;
    t.data = build_trace(input(stopped, c.stop, c.ns_per_tick, c.timer), stopped_analysis_);
    t.internal = internal_;
  }
  if (level >= 2 && !t.internal.empty()) {
    // The time finish() spent computing, shown after the stop mark (steady ns -> ticks).
    std::vector<InternalSpan>& in = t.internal;
    const double tick = t.clock.ns_per_tick;
    in.back().end = in.back().start + static_cast<int64_t>(compute_ns_ / tick);
    in.push_back(InternalSpan{"flopsprof: trace post-processing", in.back().end,
                              in.back().end + static_cast<int64_t>(ns_since(t0) / tick)});
  }
  for (const ThreadEvents* b : recs->threads) t.thread_ids.push_back(b->thread_id);
  // kineto's shared time base: every rank's timestamps are wall-clock time since one base.
  t.meta.base_time_ns = kineto_base_time_ns(rec.wall0_ns());
  t.clock.origin_ns = rec.wall0_ns() - t.meta.base_time_ns;
  t.meta.step = -1;
  t.meta.device = rec.gpu().device;
  return t;
}

void Pipeline::clear() {
  snapshot_.reset();
  live_.reset();
  result_.reset();
  stopped_analysis_ = Analysis{};
  internal_.clear();
  compute_ns_ = 0;
}

}  // namespace flopsprof::detail
