// FlopsProfiler and get_model_profile: ties the observer, the module index and the reports.
#include "flopsprof/profiler.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <utility>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>
#include <torch/cuda.h>

#include "aggregation/device_peaks.h"
#include "capture/device_events.h"
#include "capture/gpu_backend.h"
#include "capture/memory.h"
#include "capture/module_index.h"
#include "capture/observer.h"
#include "flopsprof/config.h"
#include "flopsprof/machine.h"
#include "flopsprof/meta.h"
#include "flopsprof/scope.h"
#include "flopsprof/sweep.h"
#include "profiler/peaks.h"
#include "reports/report_html.h"
#include "reports/text_file.h"
#include "reports/trace.h"

namespace flopsprof {

struct FlopsProfiler::Impl {
  std::shared_ptr<torch::nn::Module> model;
  ProfilerOptions options;
  std::shared_ptr<Timer> timer;
  std::vector<std::string> ignore;
  std::unique_ptr<detail::ModelIndex> index;
  std::unique_ptr<detail::Session> session;  // the running profile's
  // The last stopped profile, kept (for the Chrome trace) until the next start. Its session owns
  // the thread buffers that hold the records; the next session reuses them (Session::recycle).
  struct Collected {
    std::unique_ptr<detail::Session> session;
    int64_t stop = 0, origin = 0;
    double ns_per_tick = 1.0;
    std::string timer;
    std::vector<detail::InternalSpan> internal;
    std::optional<detail::GpuCollection> gpu;
    detail::Analysis analysis;  // attribution and op counts, computed once at stop_profile()
  } collected;
  // The device timing chosen at start_profile(): its CUPTI backend while one runs (`cupti`), what
  // was chosen and why (`timing`, `reason`), the device's name.
  detail::GpuSelection gpu;
  std::unique_ptr<detail::DeviceEvents> events;   // active device-event timing, if any
  std::optional<ProfileResult> result;            // after stop_profile()
  mutable std::optional<ProfileResult> snapshot;  // while running
  bool running = false;
  int iterations = 0;
  int64_t wall0_ns = 0;  // wall clock (ns since the epoch) when the profile's clock started
  int step = 0;          // the iteration the profile started in (the traces' ProfilerStep#N)
  struct RankInfo {
    int rank = 0, world_size = 1;
    std::string backend;
  };
  std::optional<RankInfo> rank;
  double compute_ns = 0;  // how long stop_profile() took to compute the results

  static uint64_t next_session_id() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1);
  }

  void begin() {
    auto s = std::make_unique<detail::Session>();
    s->id = next_session_id();
    s->timer = timer.get();
    s->host_clock = detail::is_host_timer(timer.get());
    s->tsc = s->host_clock && detail::invariant_tsc();
    s->start_clock();
    wall0_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    step = iterations;
    s->owners.build(index->owner_entries);
    s->module_index = index->by_ptr;
    s->scope_names = index->scope_names;
    if (collected.session) s->reuse_buffers(*collected.session);
    collected = Collected{};
    timer->on_start();
    detail::g_scope_demand.fetch_add(1, std::memory_order_relaxed);
    try {
      gpu = detail::select_gpu_timing(timing_request());
      if (gpu.events) {
        const auto t = static_cast<c10::DeviceType>(gpu.device_type);
        events = std::make_unique<detail::DeviceEvents>(
            t, static_cast<c10::DeviceIndex>(gpu.device_index), detail::event_elapsed(t));
      }
      s->gpu = gpu.cupti.get();
      s->events = events.get();
      detail::start_observing(s.get(), options.threads == ProfilerOptions::Threads::kAll);
      if (options.track_memory) detail::install_memory_observer(*s);
    } catch (...) {  // all or nothing: nothing stays registered or started
      detail::stop_observing(s.get());
      detail::g_scope_demand.fetch_sub(1, std::memory_order_relaxed);
      if (gpu.cupti) gpu.cupti->stop();
      gpu.cupti.reset();
      drop_events(s->buffers);
      s->recycle();
      collected.session = std::move(s);  // only for its buffers
      throw;
    }
    session = std::move(s);
    running = true;
  }

  // Ends the running session, discarding its records and keeping its thread buffers (memory and
  // name caches) for the next one.
  void release_session() noexcept {
    if (!session) return;
    session->recycle();
    if (collected.session) session->reuse_buffers(*collected.session);
    collected = Collected{};
    collected.session = std::move(session);
  }

  // Drops the last stopped profile's records, keeping its thread buffers for the next session.
  void discard_collected() noexcept {
    std::unique_ptr<detail::Session> old = std::move(collected.session);
    collected = Collected{};
    if (old) old->recycle();
    collected.session = std::move(old);
  }

  // Destroys the device events still held by `buffers` (a discarded or failed profile).
  void drop_events(const std::vector<std::unique_ptr<detail::ThreadBuffer>>& buffers) noexcept {
    if (!events) return;
    std::vector<detail::ThreadBuffer*> bs;
    for (const auto& b : buffers) bs.push_back(b.get());
    events->discard(bs);
    events.reset();
  }

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

  void halt() noexcept {
    if (options.track_memory) detail::uninstall_memory_observer();
    detail::stop_observing(session.get());  // returns when no thread can still use the session
    detail::g_scope_demand.fetch_sub(1, std::memory_order_relaxed);
    running = false;
  }

  std::string timer_name() const {
    return session && session->tsc ? std::string(timer->name()) + " (calibrated TSC)"
                                   : timer->name();
  }

  // The records to read: copies of the live session's, taken safely while other threads keep
  // recording (while running), or the last stopped profile's.
  struct Records {
    std::vector<std::unique_ptr<detail::ThreadEvents>> copies;
    std::vector<const detail::ThreadEvents*> threads;
  };
  Records records() const {
    Records r;
    if (running) {
      r.copies = detail::snapshot_records(*session);
      for (const auto& c : r.copies) r.threads.push_back(c.get());
    } else {
      if (collected.session) {
        for (const auto& b : collected.session->buffers) r.threads.push_back(b.get());
      }
    }
    return r;
  }

  // The aggregation input over the live session's records (while running) or the last stopped
  // profile's, with the problems seen while collecting.
  detail::AggregateInput input(const Records& records, int64_t stop_tick, double ns_per_tick,
                               const std::string& timer_label) const {
    detail::AggregateInput in;
    if (!running && collected.gpu) in.gpu = &*collected.gpu;
    in.tree = &index->tree;
    in.names = &detail::NameTable::instance();
    in.stop_tick = stop_tick;
    in.timer = timer_label;
    in.ns_per_tick = ns_per_tick;
    in.track_memory = options.track_memory;
    uint64_t open = 0, errors = 0, dropped = 0;
    for (const detail::ThreadEvents* b : records.threads) {
      in.threads.push_back(b);
      for (const detail::RawEvent& e : b->events) open += e.end_tick == 0;
      errors += b->capture_errors;
      dropped += b->dropped_args;
    }
    if (open > 0) {
      in.problems.push_back(fmt::format(
          "{} op(s) had not finished when the profile was read; their end was taken as that time",
          open));
    }
    if (errors > 0) {
      in.problems.push_back(fmt::format(
          "{} op(s) or scope(s) could not be recorded (their arguments could not be read)",
          errors));
    }
    if (dropped > 0) {
      in.problems.push_back(
          fmt::format("{} op(s) had more than {} arguments; the rest were not captured", dropped,
                      detail::kMaxCapturedArgs));
    }
    return in;
  }

  // The roofline's ceilings for a profile whose ops `a` counted: given, environment, the
  // device's, or (`measure`, a CPU model) this CPU's measured peaks for the dtypes its FLOPs
  // were in. A failed measurement leaves them unknown, with the reason in `in`'s problems.
  MachinePeaks peaks(const detail::Analysis& a, bool measure, detail::AggregateInput& in) const {
    std::vector<DType> dtypes;
    for (const auto& t : a.counts.threads) {
      for (const detail::OpCount& c : t) {
        if (c.counted() && c.fc.flops > 0 && is_floating(c.dtype) &&
            std::find(dtypes.begin(), dtypes.end(), c.dtype) == dtypes.end())
          dtypes.push_back(c.dtype);
      }
    }
    // A model on meta has no machine's ceilings (its times are not the machine's); a device's
    // are the plugin's (datasheet or properties) with a short measurement on the device.
    const detail::GpuTimingRequest t = timing_request();
    detail::PeaksTarget target;
    target.device_type = t.device_type;
    target.device_index = t.device_index;
    if (gpu.properties) target.known = detail::gpu_peaks(*gpu.properties, gpu.tf32);
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
    w.inputs = options.inputs;
    w.intra_op_threads = at::get_num_threads();
    w.libtorch_version = TORCH_VERSION;
    w.build_type = FLOPSPROF_BUILD_TYPE;
    w.flopsprof_version = FLOPSPROF_VERSION;
    w.profile_step = options.profile_step;
    w.device = !r.gpu.device.empty() ? r.gpu.device : index->meta ? "meta" : detail::cpu_model();
    return r;
  }

  // While running: the records last read, their analysis and the snapshot computed from them
  // (current()), kept while the records stay as they were (their fingerprint), so that readers
  // called back to back, and a trace written while running, analyse once.
  struct Live {
    Records records;
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
    if (running) {
      // Analysed once per state of the records: readers called back to back share the result
      // (spans still open then end at the first of those reads).
      Records recs = records();
      std::vector<uint64_t> fingerprint = detail::records_fingerprint(recs.threads);
      if (snapshot && live && fingerprint == live->fingerprint) return *snapshot;
      const int64_t now = session->now();
      detail::AggregateInput in = input(recs, now, session->ns_per_tick(), timer_name());
      detail::Analysis a = detail::analyze(in);
      in.machine = peaks(a, /*measure=*/false, in);
      snapshot = compute(in, a);
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
}

FlopsProfiler::~FlopsProfiler() {
  try {
    end_profile();
  } catch (...) {
  }
}

void FlopsProfiler::start_profile(const std::vector<std::string>& ignore_modules) {
  if (impl_->running) {
    throw Error("start_profile() called while a profile is running; call stop_profile() first");
  }
  // Built first: a bad ignore list throws here and leaves the profiler as it was.
  auto index = std::make_unique<detail::ModelIndex>(
      detail::build_model_index(*impl_->model, ignore_modules));
  impl_->ignore = ignore_modules;
  impl_->index = std::move(index);
  impl_->result.reset();
  impl_->drop_snapshot();
  impl_->begin();
}

void FlopsProfiler::stop_profile() {
  if (!impl_->running) {
    throw Error("stop_profile() called but no profile is running; call start_profile() first");
  }
  if (impl_->timing_request().device_type == static_cast<int>(c10::DeviceType::CUDA) &&
      torch::cuda::is_available()) {
    at::DisableRecordFunctionGuard no_record;
    torch::cuda::synchronize();  // the single synchronization of the profile
  }
  detail::Session& s = *impl_->session;
  const int64_t stop_tick = s.now();
  impl_->halt();
  impl_->drop_snapshot();  // the live records' copies
  impl_->timer->on_stop();
  auto& c = impl_->collected;
  detail::GpuSelection& gpu = impl_->gpu;
  if (gpu.cupti) {  // the single flush of the device records
    const int64_t host = s.now(), device = gpu.cupti->device_now_ns();
    c.gpu = gpu.cupti->stop();
    c.gpu->gpu_origin_ns = device;
    c.gpu->host_origin = host;
    gpu.cupti.reset();
  } else if (!gpu.timing.empty()) {  // on a device without CUPTI: say why, once
    c.gpu = detail::GpuCollection{};
    c.gpu->backend = gpu.timing;
    c.gpu->reason = gpu.reason;
    if (impl_->events) {  // after the one synchronization: read every event once
      impl_->events->synchronize();
      std::vector<detail::ThreadBuffer*> bs;
      for (const auto& b : s.buffers) bs.push_back(b.get());
      impl_->events->resolve(bs, &*c.gpu);
      impl_->events.reset();
    }
  }
  if (c.gpu && !gpu.device.empty()) c.gpu->device = gpu.device;
  c.stop = stop_tick;
  c.origin = s.tick0;
  c.ns_per_tick = s.ns_per_tick();
  c.timer = impl_->timer_name();
  c.session = std::move(impl_->session);  // `s` lives on in it
  auto t0 = std::chrono::steady_clock::now();
  double peaks_ns = 0;
  {
    detail::AggregateInput in = impl_->input(impl_->records(), c.stop, c.ns_per_tick, c.timer);
    c.analysis = detail::analyze(in);
    const auto p0 = std::chrono::steady_clock::now();
    in.machine = impl_->peaks(c.analysis, /*measure=*/true, in);
    peaks_ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - p0).count();
    impl_->result = impl_->compute(in, c.analysis);
  }
  impl_->compute_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() -
      peaks_ns;
  c.internal.push_back(
      detail::InternalSpan{"flopsprof: stop_profile (computing results)", stop_tick, stop_tick});
}

void FlopsProfiler::reset_profile() {
  impl_->drop_snapshot();
  impl_->result.reset();
  impl_->discard_collected();
  if (impl_->running) {
    impl_->halt();
    if (impl_->gpu.cupti) impl_->gpu.cupti->stop();  // its records belong to the discarded part
    impl_->gpu.cupti.reset();
    impl_->drop_events(impl_->session->buffers);
    impl_->release_session();
    impl_->begin();
  }
}

void FlopsProfiler::end_profile() {
  if (impl_->running) impl_->halt();
  if (impl_->gpu.cupti) impl_->gpu.cupti->stop();
  impl_->gpu.cupti.reset();
  if (impl_->session) impl_->drop_events(impl_->session->buffers);
  impl_->session.reset();
  impl_->collected = Impl::Collected{};
  impl_->index.reset();
  impl_->result.reset();
  impl_->drop_snapshot();
}

bool FlopsProfiler::is_running() const { return impl_->running; }

StepScope FlopsProfiler::step_scope() {
  StepScope scope;
  if (!impl_->running) return scope;  // inert outside a profile (e.g. warm-up iterations)
  detail::CallbackGuard guard;        // the memory observer may record on this thread meanwhile
  detail::Session* s = impl_->session.get();
  detail::ThreadBuffer* b = guard.ok() ? s->thread_buffer() : nullptr;
  if (b == nullptr) return scope;
  scope.record_ = b->begin_step(s->now());
  if (scope.record_ < 0) return scope;
  scope.buffer_ = b;
  scope.session_ = s->id;
  scope.slot_ = s->slot;
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
  detail::CallbackGuard guard;
  detail::Session* s = guard.ok() && slot_ >= 0
                           ? detail::g_sessions[slot_].load(std::memory_order_acquire)
                           : nullptr;
  if (s != nullptr && s->id == session_) {
    static_cast<detail::ThreadBuffer*>(buffer_)->end_step(record_, s->now());
  }
  buffer_ = nullptr;
}

IterationScope FlopsProfiler::iteration() {
  IterationScope scope;
  const int n = ++impl_->iterations;
  if (impl_->options.profile_step <= 0 || n != impl_->options.profile_step) return scope;
  if (impl_->running) {
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
  Impl::Records stopped;
  const Impl::Records* recs = &stopped;
  if (impl_->running) {  // the records and analysis current() just read
    const Impl::Live& live = *impl_->live;
    const detail::Session& s = *impl_->session;
    clock = {s.tick0, s.ns_per_tick()};
    step_end = live.now;
    recs = &live.records;
    trace = detail::build_trace(
        impl_->input(live.records, live.now, clock.ns_per_tick, impl_->timer_name()),
        live.analysis);
  } else {
    const auto& c = impl_->collected;
    stopped = impl_->records();
    clock = {c.origin, c.ns_per_tick};
    step_end = c.stop;
    trace = detail::build_trace(impl_->input(stopped, c.stop, c.ns_per_tick, c.timer), c.analysis);
    internal = c.internal;
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
  meta.base_time_ns = detail::kineto_base_time_ns(impl_->wall0_ns);
  clock.origin_ns = impl_->wall0_ns - meta.base_time_ns;
  meta.step = impl_->step;
  meta.step_end = step_end;
  meta.device = impl_->gpu.device;
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
  if (impl_->running || !impl_->result) {
    throw Error("attach_distributed: no stopped profile; call stop_profile() first");
  }
  impl_->result->world_size = stats.world_size;
  impl_->result->data_parallel_size = stats.data_parallel_size;
  impl_->result->distributed = std::move(stats);
}

void FlopsProfiler::export_chrome_trace(const std::string& path, int level) const {
  detail::write_text_file(path, chrome_trace(level), "Chrome trace");
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
    detail::write_text_file(output_file, text, "profile");
  }
}

std::string FlopsProfiler::to_json(int indent) const {
  return flopsprof::to_json(impl_->current(), indent);
}

void FlopsProfiler::save_json(const std::string& path) const {
  detail::write_text_file(path, to_json(), "JSON profile");
}

std::string FlopsProfiler::html(const BatchSweep* sweep) const {
  return detail::html_report(impl_->current(), sweep ? sweep->rows : std::vector<BatchSweepRow>{});
}

void FlopsProfiler::save_html(const std::string& path, const BatchSweep* sweep) const {
  detail::write_text_file(path, html(sweep), "HTML report");
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
  at::DisableRecordFunctionGuard no_record;
  return torch::ones(
      shape, torch::TensorOptions().dtype(options.input_dtype).device(options.input_device));
}

std::string describe_input(const torch::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::string s = fmt::format("{}[{}]", dtype_name(to_dtype(t.scalar_type())),
                              fmt::join(t.sizes(), ", "));
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
