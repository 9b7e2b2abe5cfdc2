// FlopsProfiler and get_model_profile: ties the observer, the module index and the reports.
#include "flopsprof/profiler.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <optional>
#include <utility>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "aggregation/device_peaks.h"
#include "capture/cost_removal.h"
#include "capture/device_events.h"
#include "capture/gpu_backend.h"
#include "capture/interceptor.h"
#include "capture/memory.h"
#include "capture/module_index.h"
#include "capture/observer.h"
#include "capture/recording.h"
#include "flopsprof/config.h"
#include "flopsprof/machine.h"
#include "flopsprof/meta.h"
#include "flopsprof/scope.h"
#include "flopsprof/sweep.h"
#include "io/output_files.h"
#include "profiler/peaks.h"
#include "reports/report_html.h"
#include "reports/trace.h"

namespace flopsprof {

struct FlopsProfiler::Impl {
  std::shared_ptr<torch::nn::Module> model;
  ProfilerOptions options;
  std::shared_ptr<Timer> timer;
  std::vector<std::string> ignore;
  std::unique_ptr<detail::ModelIndex> index;
  std::shared_ptr<detail::Recording> recording;  // capture: sessions, records, device timing
  // What the facade derived from the last stopped recording: its analysis (computed once at
  // stop_profile()) and the profiler's own spans for the trace.
  struct Stopped {
    detail::Analysis analysis;
    std::vector<detail::InternalSpan> internal;
  } stopped;
  std::optional<ProfileResult> result;            // after stop_profile()
  mutable std::optional<ProfileResult> snapshot;  // while running
  int iterations = 0;
  int step = 0;  // the iteration the profile started in (the traces' ProfilerStep#N)
  struct RankInfo {
    int rank = 0, world_size = 1;
    std::string backend;
  };
  std::optional<RankInfo> rank;
  double compute_ns = 0;  // how long stop_profile() took to compute the results

  // The device timing the options and the model ask for (a profile is started: the module index
  // exists).
  detail::GpuTimingRequest timing_request() const {
    detail::GpuTimingRequest r;
    if (options.device) {
      r.device_type = options.device->is_cpu() ? -1 : static_cast<int>(options.device->type());
      r.device_index = options.device->has_index() ? options.device->index() : 0;
    } else {
      // the device of the model's first parameter off the CPU, found at start_profile
      r.device_type = index->device_type;
      r.device_index = index->device_index;
    }
    r.try_cupti = options.device_timing == ProfilerOptions::DeviceTiming::kAuto;
    r.try_events = options.device_timing != ProfilerOptions::DeviceTiming::kHostClock;
    r.cupti_limits.buffer_bytes = options.cupti_buffer_bytes;
    r.cupti_limits.max_buffers = options.cupti_max_buffers;
    return r;
  }

  // The aggregation input over the live session's records (while running) or the last stopped
  // profile's, with the problems seen while collecting.
  detail::AggregateInput input(const detail::RecordsView& records, int64_t stop_tick,
                               double ns_per_tick, const std::string& timer_label) const {
    detail::AggregateInput in;
    const detail::Collection& c = recording->collected();
    if (!recording->running() && c.gpu) in.gpu = &*c.gpu;
    in.tree = &index->tree;
    in.names = &detail::NameTable::instance();
    in.stop_tick = stop_tick;
    in.timer = timer_label;
    in.ns_per_tick = ns_per_tick;
    in.track_memory = options.track_memory;
    in.threads = records.threads;
    in.problems = detail::capture_problems(records);
    const detail::CaptureInfo capture = recording->capture();
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
    in.regions = recording->regions();
    in.attention = options.attention;
    in.tf32 = recording->gpu().tf32;
    return in;
  }

  // The roofline's ceilings for a profile whose ops `a` counted: given, environment, the
  // device's, or (`measure`, a CPU model) this CPU's measured peaks for the dtypes its FLOPs
  // were in. A failed measurement leaves them unknown, with the reason in `in`'s problems.
  MachinePeaks peaks(const detail::Analysis& a, bool measure, detail::AggregateInput& in) const {
    const std::vector<DType> dtypes = a.counts.flop_dtypes();
    // A model on meta has no machine's ceilings (its times are not the machine's); a device's
    // are the plugin's (datasheet or properties) with a short measurement on the device.
    const detail::GpuTimingRequest t = timing_request();
    detail::PeaksTarget target;
    target.device_type = t.device_type;
    target.device_index = t.device_index;
    const detail::GpuSelection& gpu = recording->gpu();
    if (gpu.properties) target.known = detail::gpu_peaks(*gpu.properties);
    target.meta = index->meta;
    std::string problem;
    MachinePeaks p = detail::profile_peaks(options.roofline, dtypes, target, measure, &problem);
    if (!problem.empty()) in.problems.push_back("roofline: " + problem);
    return p;
  }

  ProfileResult compute(const detail::AggregateInput& in, const detail::Analysis& a) const {
    ProfileResult r = detail::aggregate(in, a);
    r.batch_size = options.batch_size;
    r.world_size = options.world_size;
    r.data_parallel_size = options.data_parallel_size;
    r.model_parallel_size = options.model_parallel_size;
    Workload& w = r.workload;
    if (!options.inputs.empty()) {  // else what the aggregation read from the model's first op
      w.inputs = options.inputs;
      w.inputs_source = "given";
    }
    w.intra_op_threads = at::get_num_threads();
    w.libtorch_version = TORCH_VERSION;
    w.build_type = FLOPSPROF_BUILD_TYPE;
    w.flopsprof_version = FLOPSPROF_VERSION;
    w.profile_step = options.profile_step;
    const detail::CaptureInfo capture = recording->capture();
    w.capture = capture.dispatch ? "dispatch" : "record_function";
    w.capture_note = capture.note;
    w.device = !r.gpu.device.empty() ? r.gpu.device : index->meta ? "meta" : detail::cpu_model();
    return r;
  }

  // `raw` (computed from `recs` as `in` and `a`) with flopsprof's own cost removed from its host
  // latencies (the records' timestamps moved back by the calibrated cost of the records before
  // them, analysed and aggregated again), the measured figures kept in its *_raw_s fields; `raw`
  // itself, saying why, when the cost is not known.
  ProfileResult correct(const detail::RecordsView& recs, const detail::AggregateInput& in,
                        ProfileResult raw) const {
    const detail::CaptureInfo capture = recording->capture();
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
    if (!capture.cost.calibrated) {
      corr.reason = capture.uncorrected;
      keep_raw(raw, raw);
      raw.correction = corr;
      return raw;
    }
    detail::CostRemoved fixed =
        detail::remove_capture_cost(recs.threads, in.regions, capture.cost, capture.dispatch,
                                    in.ns_per_tick, detail::NameTable::instance());
    detail::AggregateInput cin = in;
    cin.threads.clear();
    for (const auto& t : fixed.threads) cin.threads.push_back(t.get());
    cin.regions = std::move(fixed.regions);
    const detail::Analysis a = detail::analyze(cin);
    ProfileResult r = compute(cin, a);
    keep_raw(r, raw);
    corr.applied = true;
    r.correction = corr;
    return r;
  }

  // While running: the records last read, their analysis and the snapshot computed from them
  // (current()), kept while the records stay as they were (their fingerprint), so that readers
  // called back to back, and a trace written while running, analyse once.
  struct Live {
    detail::RecordsView records;
    std::vector<uint64_t> fingerprint;
    int64_t now = 0;  // the snapshot's end of open spans
    detail::Analysis analysis;
  };
  mutable std::optional<Live> live;
  void drop_snapshot() {
    snapshot.reset();
    live.reset();
  }

  const ProfileResult& current() const {
    if (recording && recording->running()) {
      // Analysed once per state of the records: readers called back to back share the result
      // (spans still open then end at the first of those reads).
      detail::RecordsView recs = recording->records();
      std::vector<uint64_t> fingerprint = detail::records_fingerprint(recs.threads);
      for (const detail::RegionWindow& w : recording->regions())  // opened, closed, fed
        fingerprint.insert(fingerprint.end(), {static_cast<uint64_t>(w.end_tick), w.tokens});
      fingerprint.push_back(recording->regions().size());
      if (snapshot && live && fingerprint == live->fingerprint) return *snapshot;
      const int64_t now = recording->now();
      detail::AggregateInput in =
          input(recs, now, recording->ns_per_tick(), recording->timer_name());
      detail::Analysis a = detail::analyze(in);
      in.machine = peaks(a, /*measure=*/false, in);
      snapshot = correct(recs, in, compute(in, a));
      live = Live{std::move(recs), std::move(fingerprint), now, std::move(a)};
      return *snapshot;
    }
    if (!result) {
      throw Error(
          "no profile has been collected: call start_profile(), run the model's forward, then "
          "stop_profile() before reading results");
    }
    return *result;
  }
};

FlopsProfiler::FlopsProfiler(std::shared_ptr<torch::nn::Module> model, ProfilerOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (!model) throw Error("FlopsProfiler: the model is null; pass a constructed module");
  impl_->model = std::move(model);
  impl_->options = std::move(options);
  impl_->timer = impl_->options.timer ? impl_->options.timer : make_host_timer();
  impl_->recording = std::make_shared<detail::Recording>(impl_->timer);
}

FlopsProfiler::~FlopsProfiler() {
  try {
    end_profile();
  } catch (...) {
  }
}

void FlopsProfiler::start_profile(const std::vector<std::string>& ignore_modules) {
  if (impl_->recording->running()) {
    throw Error("start_profile() called while a profile is running; call stop_profile() first");
  }
  // Built first: a bad ignore list throws here and leaves the profiler as it was.
  auto index = std::make_unique<detail::ModelIndex>(
      detail::build_model_index(*impl_->model, ignore_modules));
  impl_->ignore = ignore_modules;
  impl_->result.reset();
  impl_->drop_snapshot();
  impl_->stopped = Impl::Stopped{};
  impl_->step = impl_->iterations;
  detail::RecordingSetup setup;
  setup.all_threads = impl_->options.threads == ProfilerOptions::Threads::kAll;
  setup.track_memory = impl_->options.track_memory;
  setup.read_masks = impl_->options.read_attention_masks;
  switch (impl_->options.capture) {
    case ProfilerOptions::Capture::kAuto:
      setup.capture = detail::CaptureRequest::kAuto;
      break;
    case ProfilerOptions::Capture::kDispatch:
      setup.capture = detail::CaptureRequest::kDispatch;
      break;
    case ProfilerOptions::Capture::kRecordFunction:
      setup.capture = detail::CaptureRequest::kRecordFunction;
      break;
  }
  impl_->index = std::move(index);
  setup.timing = impl_->timing_request();
  impl_->recording->start(*impl_->index, setup);
}

void FlopsProfiler::stop_profile() {
  detail::Recording& rec = *impl_->recording;
  if (!rec.running()) {
    throw Error("stop_profile() called but no profile is running; call start_profile() first");
  }
  rec.stop();
  impl_->drop_snapshot();  // the live records' copies
  const detail::Collection& c = rec.collected();
  auto t0 = std::chrono::steady_clock::now();
  double peaks_ns = 0;
  {
    const detail::RecordsView recs = rec.records();
    detail::AggregateInput in = impl_->input(recs, c.stop, c.ns_per_tick, c.timer);
    impl_->stopped.analysis = detail::analyze(in);
    const auto p0 = std::chrono::steady_clock::now();
    in.machine = impl_->peaks(impl_->stopped.analysis, /*measure=*/true, in);
    peaks_ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - p0).count();
    impl_->result = impl_->correct(recs, in, impl_->compute(in, impl_->stopped.analysis));
  }
  impl_->compute_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() -
      peaks_ns;
  impl_->stopped.internal.push_back(
      detail::InternalSpan{"flopsprof: stop_profile (computing results)", c.stop, c.stop});
}

void FlopsProfiler::reset_profile() {
  impl_->drop_snapshot();
  impl_->result.reset();
  impl_->stopped = Impl::Stopped{};
  impl_->recording->restart();  // drops what was collected; while running, starts again
  if (impl_->recording->running()) impl_->step = impl_->iterations;
}

void FlopsProfiler::end_profile() {
  impl_->recording->end();
  impl_->stopped = Impl::Stopped{};
  impl_->index.reset();
  impl_->result.reset();
  impl_->drop_snapshot();
}

bool FlopsProfiler::is_running() const { return impl_->recording->running(); }

StepScope FlopsProfiler::step_scope() {
  StepScope scope;
  detail::ScopeHandle h = impl_->recording->open_step();
  if (h.session == 0) return scope;
  scope.buffer_ = h.buffer;
  scope.session_ = h.session;
  scope.record_ = h.index;
  scope.slot_ = impl_->recording->slot();
  return scope;
}

StepScope& StepScope::operator=(StepScope&& other) noexcept {
  if (this != &other) {
    end();
    buffer_ = std::exchange(other.buffer_, nullptr);
    session_ = std::exchange(other.session_, 0);
    record_ = std::exchange(other.record_, -1);
    slot_ = std::exchange(other.slot_, -1);
  }
  return *this;
}

void StepScope::end() noexcept {
  if (buffer_ == nullptr) return;
  detail::ScopeHandle h{buffer_, session_, record_};
  detail::close_step_record(slot_, h);
  buffer_ = nullptr;
}

RegionScope FlopsProfiler::region(std::string name, uint64_t tokens) {
  RegionScope scope;
  const int index = impl_->recording->open_region(std::move(name), tokens);
  if (index < 0) return scope;
  scope.recording_ = impl_->recording;
  scope.index_ = index;
  scope.generation_ = impl_->recording->generation();
  return scope;
}

RegionScope& RegionScope::operator=(RegionScope&& other) noexcept {
  if (this != &other) {
    end();
    recording_ = std::move(other.recording_);
    other.recording_.reset();
    index_ = std::exchange(other.index_, -1);
    generation_ = other.generation_;
  }
  return *this;
}

void RegionScope::end() noexcept {
  if (index_ < 0) return;
  if (auto rec = recording_.lock()) rec->close_region(index_, generation_);
  recording_.reset();
  index_ = -1;
}

void RegionScope::add_tokens(uint64_t tokens) noexcept {
  if (index_ < 0) return;
  if (auto rec = recording_.lock()) rec->add_region_tokens(index_, generation_, tokens);
}

IterationScope FlopsProfiler::iteration() {
  IterationScope scope;
  const int n = ++impl_->iterations;
  if (impl_->options.profile_step <= 0 || n != impl_->options.profile_step) return scope;
  if (impl_->recording->running()) {
    --impl_->iterations;
    throw Error(
        "iteration(): a profile is already running; with ProfilerOptions::profile_step the "
        "iteration scope starts and stops the profile itself, so do not call start_profile()");
  }
  start_profile(impl_->ignore);
  scope.profiler_ = this;
  return scope;
}

int FlopsProfiler::iteration_count() const { return impl_->iterations; }

IterationScope& IterationScope::operator=(IterationScope&& other) noexcept {
  if (this != &other) {
    end();
    profiler_ = std::exchange(other.profiler_, nullptr);
  }
  return *this;
}

void IterationScope::end() noexcept {
  if (profiler_ == nullptr) return;
  FlopsProfiler* p = std::exchange(profiler_, nullptr);
  try {
    if (p->is_running()) p->stop_profile();
  } catch (...) {
  }
}

uint64_t FlopsProfiler::get_total_flops() const { return impl_->current().flops; }
uint64_t FlopsProfiler::get_total_macs() const { return impl_->current().macs; }
uint64_t FlopsProfiler::get_total_params() const { return impl_->current().params; }
double FlopsProfiler::get_total_duration() const { return impl_->current().duration_s; }
std::string FlopsProfiler::get_total_flops_string() const {
  return flops_to_string(get_total_flops());
}
std::string FlopsProfiler::get_total_macs_string() const {
  return macs_to_string(get_total_macs());
}
std::string FlopsProfiler::get_total_params_string() const {
  return params_to_string(get_total_params());
}
std::string FlopsProfiler::get_total_duration_string() const {
  return duration_to_string(get_total_duration());
}

const ModuleStats& FlopsProfiler::get_module(const std::string& name) const {
  const ProfileResult& r = impl_->current();
  for (const ModuleStats& m : r.modules) {
    if (m.name == name) return m;
  }
  std::string examples;
  for (size_t i = 1; i < r.modules.size() && i <= 4; ++i) {
    examples += (i > 1 ? "', '" : "") + r.modules[i].name;
  }
  throw Error(fmt::format(
      "unknown module '{}': names are dotted paths as in named_modules() (e.g. '{}'), \"\" is "
      "the root; modules of ignored types are not listed",
      name, examples));
}

const ProfileResult& FlopsProfiler::result() const { return impl_->current(); }

std::string FlopsProfiler::chrome_trace(int level) const {
  if (level != 1 && level != 2) {
    throw Error(
        fmt::format("chrome_trace: level = {} is invalid; pass 1 (modules and ops) or 2 "
                    "(adds memory and profiler-internal timing)",
                    level));
  }
  impl_->current();  // throws when nothing was collected
  detail::TraceData trace;
  detail::TraceClock clock;
  int64_t step_end = 0;
  std::vector<detail::InternalSpan> internal;
  auto t0 = std::chrono::steady_clock::now();
  detail::RecordsView stopped;
  const detail::RecordsView* recs = &stopped;
  const detail::Recording& rec = *impl_->recording;
  if (rec.running()) {  // the records and analysis current() just read
    const Impl::Live& live = *impl_->live;
    clock = {rec.origin(), rec.ns_per_tick()};
    step_end = live.now;
    recs = &live.records;
    trace = detail::build_trace(
        impl_->input(live.records, live.now, clock.ns_per_tick, rec.timer_name()), live.analysis);
  } else {
    const detail::Collection& c = rec.collected();
    stopped = rec.records();
    clock = {c.origin, c.ns_per_tick};
    step_end = c.stop;
    trace = detail::build_trace(impl_->input(stopped, c.stop, c.ns_per_tick, c.timer),
                                impl_->stopped.analysis);
    internal = impl_->stopped.internal;
  }
  if (level >= 2 && !internal.empty()) {
    // The time stop_profile() spent computing, shown after the stop mark (steady ns -> ticks).
    const double took_ns = impl_->compute_ns;
    internal.back().end = internal.back().start + static_cast<int64_t>(took_ns / clock.ns_per_tick);
    internal.push_back(detail::InternalSpan{
        "flopsprof: trace post-processing", internal.back().end,
        internal.back().end + static_cast<int64_t>(std::chrono::duration<double, std::nano>(
                                                       std::chrono::steady_clock::now() - t0)
                                                       .count() /
                                                   clock.ns_per_tick)});
  }
  std::vector<uint64_t> ids;
  for (const detail::ThreadEvents* b : recs->threads) ids.push_back(b->thread_id);
  detail::TraceMeta meta;
  // kineto's shared time base: every rank's timestamps are wall-clock time since one base.
  meta.base_time_ns = detail::kineto_base_time_ns(rec.wall0_ns());
  clock.origin_ns = rec.wall0_ns() - meta.base_time_ns;
  meta.step = impl_->step;
  meta.step_end = step_end;
  meta.device = rec.gpu().device;
  if (impl_->rank) {
    meta.distributed = true;
    meta.rank = impl_->rank->rank;
    meta.world_size = impl_->rank->world_size;
    meta.backend = impl_->rank->backend;
  }
  return detail::to_chrome_trace(trace, ids, clock, level, internal, meta);
}

void FlopsProfiler::set_rank(int rank, int world_size, const std::string& backend) {
  if (rank < 0 || world_size < 1 || rank >= world_size) {
    throw Error(
        fmt::format("set_rank: rank {} of world size {} is invalid; pass 0 <= rank < "
                    "world_size",
                    rank, world_size));
  }
  impl_->rank = Impl::RankInfo{rank, world_size, backend};
  if (impl_->result) {  // the summary shows the job's size, as on the rank that gathers
    impl_->result->world_size = world_size;
    if (impl_->options.data_parallel_size == 1) impl_->result->data_parallel_size = world_size;
  }
}

void FlopsProfiler::attach_distributed(DistributedStats stats) {
  if (impl_->recording->running() || !impl_->result) {
    throw Error("attach_distributed: no stopped profile; call stop_profile() first");
  }
  impl_->result->world_size = stats.world_size;
  impl_->result->data_parallel_size = stats.data_parallel_size;
  impl_->result->distributed = std::move(stats);
}

void FlopsProfiler::export_chrome_trace(const std::string& path, int level) const {
  detail::write_output(path, chrome_trace(level), "Chrome trace");
}

std::string FlopsProfiler::model_profile_string(int header_step, int module_depth, int top_modules,
                                                bool detailed) const {
  ReportOptions o;
  o.header_step = header_step > 0                   ? header_step
                  : impl_->options.profile_step > 0 ? impl_->options.profile_step
                                                    : 1;
  o.module_depth = module_depth;
  o.top_modules = top_modules;
  o.detailed = detailed;
  return format_text_report(impl_->current(), o);
}

void FlopsProfiler::print_model_profile(int header_step, int module_depth, int top_modules,
                                        bool detailed, const std::string& output_file) const {
  std::string text = model_profile_string(header_step, module_depth, top_modules, detailed);
  if (output_file.empty()) {
    std::cout << text << std::flush;
  } else {
    detail::write_output(output_file, text, "profile");
  }
}

std::string FlopsProfiler::to_json(int indent) const {
  return flopsprof::to_json(impl_->current(), indent);
}

void FlopsProfiler::save_json(const std::string& path) const {
  detail::write_output(path, to_json(), "JSON profile");
}

std::string FlopsProfiler::html(const BatchSweep* sweep) const {
  return detail::html_report(impl_->current(), sweep ? sweep->rows : std::vector<BatchSweepRow>{});
}

void FlopsProfiler::save_html(const std::string& path, const BatchSweep* sweep) const {
  detail::write_output(path, html(sweep), "HTML report");
}

namespace detail {
bool on_meta(const torch::nn::Module& model) {
  for (const auto& p : model.parameters()) {
    if (p.defined() && p.is_meta()) return true;
  }
  for (const auto& b : model.buffers()) {
    if (b.defined() && b.is_meta()) return true;
  }
  return false;
}

torch::Tensor make_input(const std::vector<int64_t>& shape, const ModelProfileOptions& options) {
  if (shape.empty())
    throw Error("get_model_profile: input_shape is empty; pass e.g. {1, 3, 224, 224}");
  for (int64_t d : shape) {
    if (d < 0)
      throw Error(fmt::format("get_model_profile: input_shape has a negative size ({})", d));
  }
  detail::Unobserved no_record;
  return torch::ones(
      shape, torch::TensorOptions().dtype(options.input_dtype).device(options.input_device));
}

std::string describe_input(const torch::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::string s =
      fmt::format("{}[{}]", dtype_name(to_dtype(t.scalar_type())), fmt::join(t.sizes(), ", "));
  if (!t.device().is_cpu()) s += " on " + t.device().str();
  return s;
}
}  // namespace detail

ModelProfile get_model_profile(std::shared_ptr<torch::nn::Module> model,
                               const std::function<void()>& run_forward,
                               const ModelProfileOptions& options) {
  if (!model) throw Error("get_model_profile: the model is null; pass a constructed module");
  if (!run_forward) throw Error("get_model_profile: the forward callable is empty");
  const torch::nn::Module* m = model.get();
  return detail::profile_model(
      std::move(model),
      [&] {
        detail::CallWindow window(m);
        run_forward();
      },
      options);
}

ModelProfile detail::profile_model(std::shared_ptr<torch::nn::Module> model,
                                   const std::function<void()>& run_forward,
                                   const ModelProfileOptions& options) {
  if (!model) throw Error("get_model_profile: the model is null; pass a constructed module");
  if (!run_forward) throw Error("get_model_profile: the forward callable is empty");
  if (options.warm_up < 0) throw Error("get_model_profile: warm_up must be >= 0");
  ReportOptions check;  // validate before running anything
  check.module_depth = options.module_depth;
  check.top_modules = options.top_modules;
  format_text_report(ProfileResult{}, check);

  ProfilerOptions profiler_options = options.profiler;
  if (options.on_meta || detail::on_meta(*model)) {
    to_meta(*model);                       // a no-op for a model already there
    profiler_options.track_memory = true;  // the footprint is the point of a meta estimate
  }
  for (int i = 0; i < options.warm_up; ++i) run_forward();
  if (options.backward) {
    // Gradients left by the warm-up would hide their own allocation from a training estimate.
    for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
  }
  FlopsProfiler prof(model, profiler_options);
  prof.start_profile(options.ignore_modules);
  run_forward();  // on an exception the profiler's destructor ends the profile
  prof.stop_profile();
  if (options.print_profile) {
    prof.print_model_profile(1, options.module_depth, options.top_modules, options.detailed,
                             options.output_file);
  }
  if (!options.html_file.empty()) prof.save_html(options.html_file);
  ModelProfile mp;
  mp.result = prof.result();
  mp.flops = mp.result.flops;
  mp.macs = mp.result.macs;
  mp.params = mp.result.params;
  mp.duration_s = mp.result.duration_s;
  if (options.as_string) {
    mp.flops_string = flops_to_string(mp.flops);
    mp.macs_string = macs_to_string(mp.macs);
    mp.params_string = params_to_string(mp.params);
  }
  prof.end_profile();
  return mp;
}

}  // namespace flopsprof
