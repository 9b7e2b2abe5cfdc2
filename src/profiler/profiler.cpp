// FlopsProfiler and get_model_profile: the public API over a recording (capture) and its
// pipeline (src/pipeline/: everything computed after capture); the reports write what it computed.
#include "flopsprof/profiler.h"

#include <algorithm>
#include <iostream>
#include <optional>
#include <utility>

#include <ATen/record_function.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>

#include "aggregation/device_peaks.h"
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
#include "pipeline/pipeline.h"
#include "profiler/peaks.h"
#include "reports/report_html.h"
#include "reports/trace.h"

namespace flopsprof {
namespace {

detail::CaptureRequest capture_request(ProfilerOptions::Capture c) {
  switch (c) {
    case ProfilerOptions::Capture::kDispatch:
      return detail::CaptureRequest::kDispatch;
    case ProfilerOptions::Capture::kRecordFunction:
      return detail::CaptureRequest::kRecordFunction;
    case ProfilerOptions::Capture::kAuto:
      break;
  }
  return detail::CaptureRequest::kAuto;
}

}  // namespace

struct FlopsProfiler::Impl {
  std::shared_ptr<torch::nn::Module> model;
  ProfilerOptions options;
  std::shared_ptr<Timer> timer;
  std::vector<std::string> ignore;
  std::unique_ptr<detail::ModelIndex> index;
  std::shared_ptr<detail::Recording> recording;  // capture: sessions, records, device timing
  std::unique_ptr<detail::Pipeline> pipeline;    // after capture: the results (a started profile)
  int iterations = 0;
  int step = 0;  // the iteration the profile started in (the traces' ProfilerStep#N)
  struct RankInfo {
    int rank = 0, world_size = 1;
    std::string backend;
  };
  std::optional<RankInfo> rank;

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

  // The pipeline of the profile just started: the roofline's ceilings are given, environment,
  // the device's, or (measured at the stop, a CPU model) this CPU's peaks for the dtypes its
  // FLOPs were in.
  std::unique_ptr<detail::Pipeline> make_pipeline() const {
    detail::PipelineConfig config;
    config.recording = recording.get();
    config.index = index.get();
    config.options = &options;
    config.host_device = detail::cpu_model();
    // A model on meta has no machine's ceilings (its times are not the machine's); a device's
    // are the plugin's (datasheet or properties) with a short measurement on the device.
    const detail::GpuTimingRequest t = timing_request();
    const bool meta = index->meta;
    const RooflineOptions roofline = options.roofline;
    std::shared_ptr<const detail::Recording> rec = recording;
    config.peaks = [t, meta, roofline, rec](const std::vector<DType>& dtypes, bool measure,
                                            std::string* problem) {
      detail::PeaksTarget target;
      target.device_type = t.device_type;
      target.device_index = t.device_index;
      const detail::GpuSelection& gpu = rec->gpu();
      if (gpu.properties) target.known = detail::gpu_peaks(*gpu.properties);
      target.meta = meta;
      return detail::profile_peaks(roofline, dtypes, target, measure, problem);
    };
    return std::make_unique<detail::Pipeline>(std::move(config));
  }

  const ProfileResult& current() const {
    const ProfileResult* r = pipeline ? pipeline->current() : nullptr;
    if (r == nullptr) {
      throw Error(
          "no profile has been collected: call start_profile(), run the model's forward, then "
          "stop_profile() before reading results");
    }
    return *r;
  }
};

FlopsProfiler::FlopsProfiler(std::shared_ptr<torch::nn::Module> model, ProfilerOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (!model) throw Error("FlopsProfiler: the model is null; pass a constructed module");
  impl_->model = std::move(model);
  impl_->options = std::move(options);
  impl_->timer = impl_->options.timer ? impl_->options.timer : make_host_timer();
  impl_->recording = std::make_shared<detail::Recording>(impl_->timer);
  // The one-off work of the first profile in a process, now rather than at its start: the
  // program's warm-up, if it runs one before the start, warms the caches that work evicts.
  impl_->recording->prepare(capture_request(impl_->options.capture));
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
  impl_->pipeline.reset();
  impl_->step = impl_->iterations;
  detail::RecordingSetup setup;
  setup.all_threads = impl_->options.threads == ProfilerOptions::Threads::kAll;
  setup.track_memory = impl_->options.track_memory;
  setup.read_masks = impl_->options.read_attention_masks;
  setup.capture = capture_request(impl_->options.capture);
  impl_->index = std::move(index);
  setup.timing = impl_->timing_request();
  impl_->recording->start(*impl_->index, setup);
  impl_->pipeline = impl_->make_pipeline();
}

void FlopsProfiler::stop_profile() {
  detail::Recording& rec = *impl_->recording;
  if (!rec.running()) {
    throw Error("stop_profile() called but no profile is running; call start_profile() first");
  }
  rec.stop();
  impl_->pipeline->finish();
}

void FlopsProfiler::reset_profile() {
  if (impl_->pipeline) impl_->pipeline->clear();
  impl_->recording->restart();  // drops what was collected; while running, starts again
  if (impl_->recording->running()) impl_->step = impl_->iterations;
}

void FlopsProfiler::end_profile() {
  impl_->recording->end();
  impl_->pipeline.reset();
  impl_->index.reset();
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
  detail::TraceParts t = impl_->pipeline->trace(level);
  t.meta.step = impl_->step;
  if (impl_->rank) {
    t.meta.distributed = true;
    t.meta.rank = impl_->rank->rank;
    t.meta.world_size = impl_->rank->world_size;
    t.meta.backend = impl_->rank->backend;
  }
  return detail::to_chrome_trace(t.data, t.thread_ids, t.clock, level, t.internal, t.meta);
}

void FlopsProfiler::set_rank(int rank, int world_size, const std::string& backend) {
  if (rank < 0 || world_size < 1 || rank >= world_size) {
    throw Error(
        fmt::format("set_rank: rank {} of world size {} is invalid; pass 0 <= rank < "
                    "world_size",
                    rank, world_size));
  }
  impl_->rank = Impl::RankInfo{rank, world_size, backend};
  ProfileResult* r = impl_->pipeline ? impl_->pipeline->stopped() : nullptr;
  if (r != nullptr) {  // the summary shows the job's size, as on the rank that gathers
    r->world_size = world_size;
    if (impl_->options.data_parallel_size == 1) r->data_parallel_size = world_size;
  }
}

void FlopsProfiler::attach_distributed(DistributedStats stats) {
  ProfileResult* r = impl_->pipeline ? impl_->pipeline->stopped() : nullptr;
  if (impl_->recording->running() || r == nullptr) {
    throw Error("attach_distributed: no stopped profile; call stop_profile() first");
  }
  r->world_size = stats.world_size;
  r->data_parallel_size = stats.data_parallel_size;
  r->distributed = std::move(stats);
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

}  // namespace detail

std::string describe_input(const torch::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::string s = fmt::format("{}[{}]", dtype_name(detail::to_dtype(t.scalar_type())),
                              fmt::join(t.sizes(), ", "));
  if (!t.device().is_cpu()) s += " on " + t.device().str();
  return s;
}

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
  FlopsProfiler prof(model, profiler_options);  // before the warm-up: see its constructor
  for (int i = 0; i < options.warm_up; ++i) run_forward();
  if (options.backward) {
    // Gradients left by the warm-up would hide their own allocation from a training estimate.
    for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
  }
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
