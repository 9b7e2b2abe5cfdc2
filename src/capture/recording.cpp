#include "capture/recording.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <ATen/record_function.h>
#include <fmt/format.h>
#include <torch/cuda.h>

#include "capture/interceptor.h"
#include "capture/memory.h"
#include "capture/observer.h"
#include "flopsprof/error.h"

namespace flopsprof::detail {
namespace {

uint64_t next_session_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

}  // namespace

Recording::Recording(std::shared_ptr<Timer> timer) : timer_(std::move(timer)) {}

Recording::~Recording() { end(); }

void Recording::prepare(CaptureRequest capture) noexcept {
  prepare_capture(capture, is_host_timer(timer_.get()));
}

void Recording::start(const ModelIndex& index, const RecordingSetup& setup) {
  index_ = &index;
  setup_ = setup;
  begin();
}

void Recording::begin() {
  auto s = std::make_unique<Session>();
  s->id = next_session_id();
  s->timer = timer_.get();
  s->host_clock = is_host_timer(timer_.get());
  s->read_masks = setup_.read_masks;
  s->tsc = s->host_clock && invariant_tsc();
  s->start_clock();
  wall0_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  s->owners.build(index_->owner_entries);
  s->module_index = index_->by_ptr;
  s->scope_names = index_->scope_names;
  if (collected_.session) s->reuse_buffers(*collected_.session);
  collected_ = Collection{};
  cost_ = CaptureCost{};
  timer_->on_start();
  demand_scopes();
  try {
    gpu_ = select_gpu_timing(setup_.timing);
    if (gpu_.events) {
      const auto t = static_cast<c10::DeviceType>(gpu_.device_type);
      events_ = std::make_unique<DeviceEvents>(t, static_cast<c10::DeviceIndex>(gpu_.device_index),
                                               event_elapsed(t));
    }
    s->gpu = gpu_.cupti.get();
    s->events = events_.get();
    capture_note_ = start_observing(s.get(), setup_.all_threads, setup_.capture);
    // The starting thread's records in memory the process owns already (no page faults in the
    // profiled ops: ThreadBuffer::prefault).
    if (ThreadBuffer* b = s->thread_buffer()) {
      try {
        b->prefault();
      } catch (...) {  // they fault in as they fill instead
      }
    }
    // The path's cost per record, if an earlier profile measured it; else measured at stop.
    if (s->host_clock) cost_ = cached_capture_cost(s->dispatch);
    note_uncorrected(*s, /*stopped=*/false);
    note_cold_start();
    if (setup_.track_memory) install_memory_observer(*s);
  } catch (...) {  // all or nothing: nothing stays registered or started
    stop_observing(s.get());
    release_scopes();
    if (gpu_.cupti) gpu_.cupti->stop();
    gpu_.cupti.reset();
    drop_events(s->buffers);
    s->recycle();
    collected_.session = std::move(s);  // only for its buffers
    throw;
  }
  session_ = std::move(s);
  regions_.clear();
  ++generation_;
  running_ = true;
}

void Recording::halt() noexcept {
  if (setup_.track_memory) uninstall_memory_observer();
  stop_observing(session_.get());  // returns when no thread can still use the session
  release_scopes();
  running_ = false;
}

void Recording::stop() {
  if (setup_.timing.device_type == static_cast<int>(c10::DeviceType::CUDA) &&
      torch::cuda::is_available()) {
    Unobserved no_record;
    torch::cuda::synchronize();  // the single synchronization of the profile
  }
  Session& s = *session_;
  const int64_t stop_tick = s.now();
  halt();
  timer_->on_stop();
  Collection& c = collected_;
  for (RegionWindow& w : regions_) {
    if (w.end_tick == 0) w.end_tick = stop_tick;  // a window still open ends with the profile
  }
  c.regions = std::move(regions_);
  regions_.clear();
  ++generation_;
  if (gpu_.cupti) {  // the single flush of the device records
    const int64_t host = s.now(), device = gpu_.cupti->device_now_ns();
    c.gpu = gpu_.cupti->stop();
    c.gpu->gpu_origin_ns = device;
    c.gpu->host_origin = host;
    gpu_.cupti.reset();
  } else if (!gpu_.timing.empty()) {  // on a device without CUPTI: say why, once
    c.gpu = GpuCollection{};
    c.gpu->backend = gpu_.timing;
    c.gpu->reason = gpu_.reason;
    if (events_) {  // after the one synchronization: read every event once
      events_->synchronize();
      std::vector<ThreadBuffer*> bs;
      for (const auto& b : s.buffers) bs.push_back(b.get());
      events_->resolve(bs, &*c.gpu);
      events_.reset();
    }
  }
  if (c.gpu && !gpu_.device.empty()) c.gpu->device = gpu_.device;
  c.stop = stop_tick;
  c.origin = s.tick0;
  c.ns_per_tick = s.ns_per_tick();
  c.timer = timer_name();
  // The path's cost per record, measured now if no earlier profile did: at the first stop, not
  // the first start, so that the measurement's milliseconds do not leave the program's caches
  // cold for the profiled ops (calibration.h). No other profile may run meanwhile.
  // The profile ran the program: the caches the one-off work evicted are warm again, whether or
  // not a built-in module's call said so (a model of functional ops only, TorchScript).
  const uint64_t before = setup_work().generation;
  if (s.host_clock && !cost_.calibrated) cost_ = capture_cost(s.dispatch);
  if (setup_work().generation == before) g_setup_unwarmed.store(false, std::memory_order_relaxed);
  note_uncorrected(s, /*stopped=*/true);
  c.session = std::move(session_);  // `s` lives on in it
}

void Recording::note_cold_start() {
  cold_start_.clear();
  if (!g_setup_unwarmed.load(std::memory_order_relaxed)) return;
  const SetupWork w = setup_work();
  cold_start_ = fmt::format(
      "the profile started right after flopsprof's one-off work in this process ({}: {:.1f} ms), "
      "with no call of a built-in module between them: that work evicts the program's caches, "
      "so the first ops' latencies read high (a small ViT's first forward at 1.5-2 x its time "
      "in a later profile); make the profiler before the program's warm-up, or profile a later "
      "step",
      w.what, w.ms);
}

void Recording::note_uncorrected(const Session& s, bool stopped) {
  uncorrected_ =
      !s.host_clock
          ? "a custom timer (ProfilerOptions::timer) times the records, not the host clock"
      : cost_.calibrated ? ""
      : stopped ? "flopsprof's own cost on this capture path was not measured: another profile was "
                  "running when this one stopped, and no profile before it had measured it"
                : "flopsprof's own cost on this capture path is measured when the profile stops";
}

void Recording::restart() {
  discard();
  if (!running_) return;
  halt();
  if (gpu_.cupti) gpu_.cupti->stop();  // its records belong to the discarded part
  gpu_.cupti.reset();
  drop_events(session_->buffers);
  release_session();
  begin();
}

void Recording::discard() noexcept {
  std::unique_ptr<Session> old = std::move(collected_.session);
  collected_ = Collection{};
  if (old) old->recycle();
  collected_.session = std::move(old);
}

void Recording::end() noexcept {
  if (running_) halt();
  regions_.clear();
  ++generation_;
  if (gpu_.cupti) gpu_.cupti->stop();
  gpu_.cupti.reset();
  if (session_) drop_events(session_->buffers);
  session_.reset();
  collected_ = Collection{};
  index_ = nullptr;
}

// Ends the running session, discarding its records and keeping its thread buffers (memory and
// name caches) for the next one.
void Recording::release_session() noexcept {
  if (!session_) return;
  session_->recycle();
  if (collected_.session) session_->reuse_buffers(*collected_.session);
  collected_ = Collection{};
  collected_.session = std::move(session_);
}

// Destroys the device events still held by `buffers` (a discarded or failed profile).
void Recording::drop_events(const std::vector<std::unique_ptr<ThreadBuffer>>& buffers) noexcept {
  if (!events_) return;
  std::vector<ThreadBuffer*> bs;
  for (const auto& b : buffers) bs.push_back(b.get());
  events_->discard(bs);
  events_.reset();
}

CaptureInfo Recording::capture() const {
  CaptureInfo c;
  const Session* s = running_ ? session_.get() : collected_.session.get();
  if (s == nullptr) return c;
  c.dispatch = s->dispatch;
  c.note = capture_note_;
  c.threads_joined = s->threads_joined.load(std::memory_order_relaxed);
  c.coverage_gaps = s->coverage_gaps.load(std::memory_order_relaxed);
  c.cost = cost_;
  c.uncorrected = uncorrected_;
  c.cold_start = cold_start_;
  return c;
}

std::string Recording::timer_name() const {
  return session_ && session_->tsc ? std::string(timer_->name()) + " (calibrated TSC)"
                                   : timer_->name();
}

RecordsView Recording::records() const {
  RecordsView r;
  if (running_) {
    r.copies = snapshot_records(*session_);
    for (const auto& c : r.copies) r.threads.push_back(c.get());
  } else if (collected_.session) {
    for (const auto& b : collected_.session->buffers) r.threads.push_back(b.get());
  }
  return r;
}

std::vector<std::string> capture_problems(const RecordsView& records) {
  std::vector<std::string> problems;
  uint64_t open = 0, errors = 0, dropped = 0;
  for (const ThreadEvents* b : records.threads) {
    for (const RawEvent& e : b->events) open += e.end_tick == 0;
    errors += b->capture_errors;
    dropped += b->dropped_args;
  }
  if (open > 0) {
    problems.push_back(fmt::format(
        "{} op(s) had not finished when the profile was read; their end was taken as that time",
        open));
  }
  if (errors > 0) {
    problems.push_back(fmt::format(
        "{} op(s) or scope(s) could not be recorded (their arguments could not be read)", errors));
  }
  if (dropped > 0) {
    problems.push_back(
        fmt::format("{} op(s) had more than {} arguments; the rest were not captured", dropped,
                    kMaxCapturedArgs));
  }
  return problems;
}

int Recording::open_region(std::string name, uint64_t tokens) {
  if (!running_) return -1;  // inert outside a profile (e.g. warm-up iterations)
  // Windows never overlap, so only the last one can be open: O(1) per window.
  if (!regions_.empty() && regions_.back().end_tick == 0) {
    throw Error(fmt::format(
        "region(\"{}\") opened while region \"{}\" is still open: regions split the profile "
        "into phases that do not overlap; end the first (RegionScope::end() or its scope) "
        "before opening the next",
        name, regions_.back().name));
  }
  if (name.empty()) throw Error("region(): the name is empty; name the phase (\"decode\")");
  RegionWindow w;
  w.name = std::move(name);
  w.tokens = tokens;
  w.thread = at::RecordFunction::currentThreadId();
  w.start_tick = session_->now();
  regions_.push_back(std::move(w));
  return static_cast<int>(regions_.size()) - 1;
}

void Recording::close_region(int index, uint64_t generation) noexcept {
  if (generation != generation_ || index < 0 || static_cast<size_t>(index) >= regions_.size())
    return;
  RegionWindow& w = regions_[index];
  if (w.end_tick == 0) w.end_tick = std::max<int64_t>(session_->now(), w.start_tick + 1);
}

void Recording::add_region_tokens(int index, uint64_t generation, uint64_t tokens) noexcept {
  if (generation != generation_ || index < 0 || static_cast<size_t>(index) >= regions_.size())
    return;
  regions_[index].tokens += tokens;
}

ScopeHandle Recording::open_step() {
  if (!running_) return {};  // inert outside a profile (e.g. warm-up iterations)
  return open_step_record(*session_, /*optimizer=*/false);
}

}  // namespace flopsprof::detail
