// FlopsProfiler and get_model_profile: DeepSpeed's Flops Profiler API for LibTorch C++ modules.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/record_function.h>
#include <torch/nn/module.h>
#include <torch/types.h>

#include "flopsprof/error.h"
#include "flopsprof/report.h"
#include "flopsprof/roofline.h"
#include "flopsprof/scope.h"
#include "flopsprof/timer.h"

namespace flopsprof {

struct BatchSweep;

/// How a profile observes the program.
struct ProfilerOptions {
  enum class Threads {
    /// Every thread of the process is observed while the profile runs (a global RecordFunction
    /// callback). Needed when forwards run on several threads. Ops on threads unrelated to the
    /// model count as work outside the model (docs/training.md), never as the root's forward.
    kAll,
    /// Only the thread that calls `start_profile()`, and the threads LibTorch propagates its
    /// thread-local state to (autograd engine, `at::launch`).
    kCallingThread,
  };
  Threads threads = Threads::kAll;
  /// How ops are captured (docs/cost.md, "Capture paths"). Both give the same records: the same
  /// FLOPs, MACs, bytes and placements; they differ in what they cost the profiled program.
  enum class Capture {
    /// kDispatch where it can be installed, else kRecordFunction (the summary and
    /// Workload::capture say which was used, and why when not the interceptor).
    kAuto,
    /// A dispatcher interceptor: each op a covered thread calls reaches flopsprof's kernel on a
    /// dispatch key of its own, which records it and passes it on; ops nested in a counted op
    /// never reach it. About 0.3-1.5 microseconds per top-level op (bench/RESULTS.md), no cost
    /// to nested ops. Covers the thread that calls `start_profile()` and the threads LibTorch
    /// propagates its state to (autograd engine, `at::launch`); with Threads::kAll also every
    /// other thread from its first call of a built-in module (the report counts such threads:
    /// ops they ran before it are not in the profile). Autograd nodes and c10d collectives are
    /// still observed through RecordFunction callbacks for those scopes, which cost ops nothing.
    /// Throws `Error` at `start_profile()` when another library holds the dispatch key.
    kDispatch,
    /// RecordFunction callbacks on every op (nested ops too, which return early): every thread
    /// from the start with Threads::kAll, at LibTorch's own cost per op (boxing each op's inputs).
    kRecordFunction,
  };
  /// Profiles that run at the same time in one process share one path: kAuto follows a running
  /// profile's, and an explicit request that differs throws `Error` at `start_profile()`.
  Capture capture = Capture::kAuto;
  /// Timestamp source; null means the host steady clock (`make_host_timer()`).
  std::shared_ptr<Timer> timer;
  /// With `FlopsProfiler::iteration()`: profile only this iteration (1-based), as DeepSpeed's
  /// `profile_step`. 0: start and stop by hand.
  int profile_step = 0;
  /// Records every allocation and free of LibTorch's allocators on the profiling thread (and the
  /// autograd engine's threads) through c10's memory-reporting interface: footprint, peak, bytes
  /// per module. Uses the slot LibTorch's own profiler uses: `start_profile()` throws `Error` if
  /// that profiler is active on this thread.
  bool track_memory = false;
  /// Shown in the summary: samples per device per iteration (0: unknown; `get_model_profile`
  /// takes it from its input's first dimension), and the parallel layout.
  int64_t batch_size = 0;
  int world_size = 1;
  int data_parallel_size = 1;
  int model_parallel_size = 1;
  /// The forward's arguments as the profile's workload records them ("fp32[8, 3, 224, 224]"),
  /// compared by flopsprof/diff.h; `get_model_profile` fills it from its inputs when empty.
  std::vector<std::string> inputs;

  /// How a model on a GPU (or another device) is timed. kAuto: CUPTI (through the CUDA plugin),
  /// else device events, else the host clock, with the reason in the report. kDeviceEvents:
  /// skip CUPTI, which takes one subscriber per process (when Nsight Systems or LibTorch's own
  /// profiler holds it). kHostClock: no device timing.
  enum class DeviceTiming { kAuto, kDeviceEvents, kHostClock };
  DeviceTiming device_timing = DeviceTiming::kAuto;
  /// The device whose work is timed. Unset: the device of the model's first parameter not on
  /// the CPU (a CPU model is timed on the host). Set it for a model whose parameters do not say
  /// (no parameters, or parameters kept on the CPU while the work runs on the device).
  std::optional<c10::Device> device;
  /// CUPTI's activity buffers: the size of each and how many at most (kineto's 4 MiB, 64).
  /// Records that find no buffer are dropped by CUPTI and the report counts them.
  size_t cupti_buffer_bytes = 4u << 20;
  size_t cupti_max_buffers = 64;
  /// The machine's ceilings for the roofline (docs/report.md, "Roofline"): by default a CPU's
  /// are measured by flopsprof at the first stop_profile() that needs them (a few hundred ms,
  /// then cached per machine: flopsprof/machine.h) and a GPU's come from its properties; given
  /// values (e.g. datasheet figures) win, and `enabled = false` skips them.
  RooflineOptions roofline;
  /// How attention under a causal mask counts in FLOPs, MACs and MFU (docs/report.md, "Causal
  /// attention"); the JSON carries the dense, causal and kernel counts whatever is chosen.
  AttentionConvention attention = AttentionConvention::kDense;
  /// Reads the values of each attention op's explicit mask (SDPA's attn_mask, the kernels'
  /// attn_bias) to count the (query, key) pairs it discards, as a causal mask's are
  /// (`masked_flops`; docs/report.md, "Masks"): a sliding window, padding. Off: such a mask's
  /// pattern is unknown and its pairs count as computed (dense), and the report counts those
  /// calls. Cost per attention call with a mask: one pass over the mask's stored elements on the
  /// calling thread; a mask on a GPU is copied to the host first, which waits for its stream.
  bool read_attention_masks = false;
};

class FlopsProfiler;

namespace detail {
template <class T>
inline constexpr bool always_false = false;
}  // namespace detail

/// Marks the optimizer step (LibTorch's optimizers emit no event of their own): ops on this
/// thread while it lives count as the step phase, not forward. From `FlopsProfiler::step_scope()`.
/// Inert when no profile is running. Movable, not copyable; ends at destruction or `end()`.
class StepScope {
 public:
  StepScope() = default;
  StepScope(StepScope&& other) noexcept { *this = std::move(other); }
  StepScope& operator=(StepScope&& other) noexcept;
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;
  ~StepScope() { end(); }
  /// Ends the step now (idempotent).
  void end() noexcept;

 private:
  friend class FlopsProfiler;
  void* buffer_ = nullptr;
  uint64_t session_ = 0;
  int32_t record_ = -1;
  int slot_ = -1;
};

/// One training iteration, from `FlopsProfiler::iteration()`. With `profile_step = N` the
/// profile starts when iteration N begins and stops when it ends; other iterations run
/// unprofiled. Movable, not copyable.
class IterationScope {
 public:
  IterationScope() = default;
  IterationScope(IterationScope&& other) noexcept { *this = std::move(other); }
  IterationScope& operator=(IterationScope&& other) noexcept;
  IterationScope(const IterationScope&) = delete;
  IterationScope& operator=(const IterationScope&) = delete;
  ~IterationScope() { end(); }
  /// Ends the iteration now (stops a profile it started; idempotent).
  void end() noexcept;
  /// Whether this iteration is the profiled one.
  bool profiling() const { return profiler_ != nullptr; }

 private:
  friend class FlopsProfiler;
  FlopsProfiler* profiler_ = nullptr;
};

namespace detail {
class Recording;
}  // namespace detail

/// One window of a named region (a phase such as "prefill" or "decode"), from
/// `FlopsProfiler::region()`: every op that begins on any thread while it is open counts toward
/// the region, in ProfileResult::regions and each module's ModuleStats::regions. Inert when no
/// profile is running; a window still open at stop_profile() ends there; reset_profile() drops
/// the windows so far (an open one too: its scope becomes inert). Movable, not copyable; ends at
/// destruction or `end()`. Open, feed and end it from the thread that calls the profiler.
class RegionScope {
 public:
  RegionScope() = default;
  RegionScope(RegionScope&& other) noexcept { *this = std::move(other); }
  RegionScope& operator=(RegionScope&& other) noexcept;
  RegionScope(const RegionScope&) = delete;
  RegionScope& operator=(const RegionScope&) = delete;
  ~RegionScope() { end(); }
  /// Ends the window now (idempotent).
  void end() noexcept;
  /// Adds `tokens` to this window's tokens (e.g. the tokens a decode step produced, known only
  /// after it ran). Windows given tokens do not take them from the embedding's indices.
  void add_tokens(uint64_t tokens) noexcept;

 private:
  friend class FlopsProfiler;
  std::weak_ptr<detail::Recording> recording_;
  int index_ = -1;
  uint64_t generation_ = 0;
};

/// Per-module FLOPs, MACs, parameters and latency of a `torch::nn::Module`, with DeepSpeed's API.
///
/// Call order: `start_profile()`, run forwards, `stop_profile()`, read results (getters, print,
/// JSON), then `end_profile()` (or let the destructor clean up).
///
/// Several profilers (up to 4, one per model: a GAN's generator and discriminator) may run at
/// once; each reports its own model's work only, and work of neither model is outside both.
/// Two profilers of the same model each see all of its work (the same results twice).
///
/// Thread-safety: call one profiler's methods from one thread at a time. The profiled forwards
/// may run on any threads, also while `start_profile()`, `stop_profile()`, `reset_profile()`,
/// `end_profile()` or the destructor run: those wait (microseconds) until no thread is inside
/// the profiler's callbacks, and ops that straddle the stop are reported as unfinished.
class FlopsProfiler {
 public:
  /// Profiles `model` (the root of the module tree). Throws `Error` when `model` is null.
  /// The first profiler made in a process (of each capture path) does flopsprof's one-off work
  /// here, about 10 ms: the dispatch interceptor installed, the path's own cost measured
  /// (docs/cost.md, "Latency correction"). It evicts the program's caches: make the profiler
  /// before the program's warm-up, not right before `start_profile()`, or the first profiled
  /// ops read slow (the result's `correction.not_removed` says so when nothing ran between).
  explicit FlopsProfiler(std::shared_ptr<torch::nn::Module> model, ProfilerOptions options = {});
  /// Accepts a `torch::nn::ModuleHolder` (e.g. `torch::nn::Linear`) or a user holder.
  template <class Holder, class = std::enable_if_t<
                              std::is_base_of_v<torch::nn::Module, typename Holder::ContainedType>>>
  explicit FlopsProfiler(const Holder& holder, ProfilerOptions options = {})
      : FlopsProfiler(std::static_pointer_cast<torch::nn::Module>(holder.ptr()),
                      std::move(options)) {}
  /// A module held by value cannot be profiled (its submodules are registered through shared
  /// pointers the profiler must hold): this overload only explains the fix at compile time.
  template <class M,
            std::enable_if_t<std::is_base_of_v<torch::nn::Module, std::decay_t<M>>, int> = 0>
  explicit FlopsProfiler(const M& /*model*/, ProfilerOptions /*options*/ = {}) {
    static_assert(detail::always_false<M>,
                  "flopsprof::FlopsProfiler needs the model as a std::shared_ptr or a module "
                  "holder: create it with `auto model = std::make_shared<Net>();` (or declare "
                  "TORCH_MODULE(Net) and write `Net model;` for a NetImpl), then pass `model`");
  }
  ~FlopsProfiler();  ///< Ends an active profile; never throws.
  FlopsProfiler(const FlopsProfiler&) = delete;
  FlopsProfiler& operator=(const FlopsProfiler&) = delete;

  /// Builds the module tree and starts observing ops. `ignore_modules`: module type names
  /// ("Dropout", "BertLayer") whose modules, with their submodules, are not profiled separately;
  /// their work counts toward the parent. Discards results of an earlier profile.
  /// Throws `Error` if this profiler is already running, or when 4 profilers already run in the
  /// process. Nothing stays registered or started when it throws.
  void start_profile(const std::vector<std::string>& ignore_modules = {});
  /// Stops observing and computes the results. Synchronizes a device timer once.
  /// Throws `Error` if no profile is running.
  void stop_profile();
  /// Clears what was collected; a running profile keeps running from zero.
  void reset_profile();
  /// Stops (if running), removes everything registered, and drops the results.
  void end_profile();
  /// Whether a profile is running.
  bool is_running() const;

  /// Marks the optimizer step of a training iteration: `{ auto s = prof.step_scope(); opt.step();
  /// }`.
  [[nodiscard]] StepScope step_scope();
  /// Opens a window of the region `name` until the returned scope ends: `{ auto r =
  /// prof.region("decode"); model->step(tok); }`. A region may be opened many times (each decode
  /// step a window); its numbers are summed over its windows, with their spread. `tokens`: the
  /// tokens this window processes (0: the largest indices of its aten::embedding ops on the
  /// model's weights, batch x sequence; or add them later with RegionScope::add_tokens()). Costs
  /// a clock read; nothing per op. Throws `Error` for an empty name, or while another region's
  /// window is open (regions do not overlap). Inert (no throw) when no profile is running.
  [[nodiscard]] RegionScope region(std::string name, uint64_t tokens = 0);
  /// Marks one training iteration: `auto it = prof.iteration();` at the top of the loop body.
  /// With `ProfilerOptions::profile_step = N`, iteration N is profiled (started and stopped by
  /// the scope; warm-up iterations are not). Throws `Error` if a manual profile is running.
  [[nodiscard]] IterationScope iteration();
  /// Iterations begun so far with `iteration()`.
  int iteration_count() const;

  /// Forward FLOPs of the whole model. Throws `Error` before any profile.
  uint64_t get_total_flops() const;
  /// Forward MACs of the whole model.
  uint64_t get_total_macs() const;
  /// Parameters of the model (shared ones once).
  uint64_t get_total_params() const;
  /// Forward latency of the root module, in seconds.
  double get_total_duration() const;
  /// The same, with units: "8.21 G", "4.09 GMACs", "109.51 M", "120.53 ms".
  std::string get_total_flops_string() const;
  std::string get_total_macs_string() const;
  std::string get_total_params_string() const;
  std::string get_total_duration_string() const;

  /// Stats of one module by dotted name ("" is the root). Throws `Error` for an unknown name.
  const ModuleStats& get_module(const std::string& name) const;
  uint64_t get_module_flops(const std::string& name) const { return get_module(name).flops; }
  uint64_t get_module_macs(const std::string& name) const { return get_module(name).macs; }
  uint64_t get_module_params(const std::string& name) const { return get_module(name).params; }
  double get_module_duration(const std::string& name) const { return get_module(name).latency_s; }

  /// Everything measured. While running, a snapshot of what was collected so far: the records
  /// are copied and analysed when they changed since the last read (an op, a scope, a step, a
  /// memory or collective record added or closed), else the last snapshot is returned as it was.
  const ProfileResult& result() const;

  /// Prints summary, aggregated top modules per depth and (if `detailed`) the module tree to
  /// stdout, or to `output_file` when not empty. Throws `Error` for invalid options or an
  /// unwritable file (the profile is kept; print again elsewhere). `header_step` (DeepSpeed's
  /// `profile_step` argument) is only the number in the header "Profile Summary at step N";
  /// 0: the iteration profiled (ProfilerOptions::profile_step), or 1 for a profile started by hand.
  void print_model_profile(int header_step = 0, int module_depth = -1, int top_modules = 1,
                           bool detailed = true, const std::string& output_file = "") const;
  /// The text `print_model_profile` prints.
  std::string model_profile_string(int header_step = 0, int module_depth = -1, int top_modules = 1,
                                   bool detailed = true) const;
  /// The profile as JSON (schema in docs/json.md).
  std::string to_json(int indent = 2) const;
  /// Writes `to_json()` to `path`. Throws `Error` when the file cannot be written.
  void save_json(const std::string& path) const;
  /// The profile as one self-contained HTML page (data embedded, script and style inline, opens
  /// offline in any browser): summary, module icicle (width: FLOPs, fwd or bwd latency; colour:
  /// achieved FLOP/s; click to zoom), sortable and filterable module table, op table with the ops
  /// that have no formula highlighted, memory footprint (with track_memory) and, given one, a
  /// batch-size sweep. Names from the model are shown as text, never as markup. About 0.5 KB per
  /// module plus 20 KB. Throws like `result()`.
  std::string html(const BatchSweep* sweep = nullptr) const;
  /// Writes `html(sweep)` to `path`. Throws `Error` when the file cannot be written.
  void save_html(const std::string& path, const BatchSweep* sweep = nullptr) const;

  /// The profile as a Chrome trace-event JSON (chrome://tracing, Perfetto): per thread, phase
  /// spans (forward, backward, step), module spans and op spans nested in them (args: module,
  /// phase, flops, input shapes as `T<768x768xfp32>`), and flow arrows from each backward node to
  /// the forward op it came from. Level 2 adds the memory counter track (with track_memory) and
  /// profiler-internal timing. Available after `stop_profile()` until the next `start_profile()`
  /// (or while running). Throws `Error` for a level other than 1 or 2, or before any profile.
  std::string chrome_trace(int level = 1) const;
  /// Writes `chrome_trace(level)` to `path`. Throws `Error` when the file cannot be written.
  void export_chrome_trace(const std::string& path, int level = 1) const;

  /// Labels this profile as rank `rank` of a `world_size`-rank job on c10d `backend`: traces
  /// gain kineto's `distributedInfo` (Holistic Trace Analysis groups ranks by it) and the stopped
  /// profile's summary shows the world size (and it as the data-parallel size, unless
  /// `ProfilerOptions::data_parallel_size` says otherwise). `flopsprof::gather_profile` calls it.
  /// Not thread-safe with a running profile's readers.
  void set_rank(int rank, int world_size, const std::string& backend);
  /// Attaches every rank's profile, combined (`gather_profile` does it on the gathering rank):
  /// `print_model_profile` then adds the ranks section and `to_json` a `ranks` object. Throws
  /// `Error` when no stopped profile is there.
  void attach_distributed(DistributedStats stats);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Options of `get_model_profile`, as DeepSpeed's.
struct ModelProfileOptions {
  bool print_profile = true;
  bool detailed = true;
  int module_depth = -1;
  int top_modules = 1;
  int warm_up = 1;          ///< unprofiled forwards before the profiled one
  bool as_string = false;   ///< also fill the `*_string` fields of the result
  std::string output_file;  ///< print there instead of stdout
  std::vector<std::string> ignore_modules;
  torch::Dtype input_dtype = torch::kFloat;  ///< for the `input_shape` overload
  torch::Device input_device = torch::kCPU;  ///< for the `input_shape` overload
  /// Estimate without computing: moves the model to the meta device in place (its values are
  /// gone; see `to_meta`), runs on shapes only and tracks memory (meta allocations are reported
  /// by size). Tensor inputs of the `input_shape` / tuple overloads are created or moved on meta.
  /// A model already on meta is profiled this way whatever this flag says.
  bool on_meta = false;
  /// Also run backward from the sum of the forward's output (a training estimate): of each
  /// tensor in it that requires grad, for a forward returning a tuple, pair or vector. For the
  /// `input_shape` and tuple overloads (Error when no output tensor requires grad, e.g. under a
  /// NoGradGuard); a callable runs whatever it runs.
  bool backward = false;
  /// Also write the HTML report there (FlopsProfiler::save_html).
  std::string html_file;
  ProfilerOptions profiler;
};

/// What `get_model_profile` returns.
struct ModelProfile {
  uint64_t flops = 0;
  uint64_t macs = 0;
  uint64_t params = 0;
  double duration_s = 0;
  std::string flops_string, macs_string, params_string;  ///< set when `as_string`
  ProfileResult result;
};

/// Profiles one run of `run_forward` (after `warm_up` unprofiled runs) as one call of `model`:
/// everything it runs is the model's forward, however it looks (a method other than forward, a
/// greedy decoding loop); a submodule's ops still go to the submodule.
ModelProfile get_model_profile(std::shared_ptr<torch::nn::Module> model,
                               const std::function<void()>& run_forward,
                               const ModelProfileOptions& options = {});

/// A forward argument as a profile's workload records it (Workload::inputs): "fp32[8, 3, 224,
/// 224]", " on cuda:0" added off the CPU; an undefined tensor "undefined". Cheap (no sync).
std::string describe_input(const torch::Tensor& t);

}  // namespace flopsprof

#define FLOPSPROF_PROFILER_H_DECLARED  // what detail/get_model_profile.h uses is declared
#include "flopsprof/detail/get_model_profile.h"

namespace flopsprof {

/// Profiles `model->forward(torch::ones(input_shape))` (dtype/device from the options).
/// `M` is a `std::shared_ptr<Impl>` or a module holder.
template <class M>
ModelProfile get_model_profile(const M& model, const std::vector<int64_t>& input_shape,
                               const ModelProfileOptions& options = {}) {
  ModelProfileOptions o = options;
  o.on_meta = o.on_meta || detail::on_meta(*detail::as_module_ptr(model));
  if (o.on_meta) o.input_device = torch::kMeta;
  torch::Tensor input = detail::make_input(input_shape, o);
  M m = model;  // a holder's const operator-> would give a const module
  if (o.profiler.batch_size == 0) o.profiler.batch_size = input_shape[0];
  if (o.profiler.inputs.empty()) o.profiler.inputs.push_back(describe_input(input));
  std::shared_ptr<torch::nn::Module> ptr = detail::as_module_ptr(model);
  return detail::profile_model(
      ptr,
      [&] {
        detail::run_forward(
            ptr.get(), [&] { return m->forward(input); }, o.backward);
      },
      o);
}

/// Profiles `model->forward(args...)` with the arguments in `args`.
template <class M, class... Args>
ModelProfile get_model_profile(const M& model, const std::tuple<Args...>& args,
                               const ModelProfileOptions& options = {}) {
  M m = model;
  ModelProfileOptions o = options;
  o.on_meta = o.on_meta || detail::on_meta(*detail::as_module_ptr(model));
  auto moved = args;  // tensors on meta when estimating there (nested ones too)
  if (o.on_meta) detail::move_to_meta(moved);
  if (o.profiler.batch_size == 0) {  // the first tensor argument's first dimension
    std::apply(
        [&](const auto&... a) {
          (..., [&](const auto& x) {
            if constexpr (std::is_convertible_v<decltype(x), const torch::Tensor&>) {
              if (o.profiler.batch_size == 0 && x.defined() && x.dim() > 0)
                o.profiler.batch_size = x.size(0);
            }
          }(a));
        },
        args);
  }
  if (o.profiler.inputs.empty()) {  // tensors as shapes, other arguments by kind
    std::apply(
        [&](const auto&... a) {
          (..., [&](const auto& x) {
            if constexpr (std::is_convertible_v<decltype(x), const torch::Tensor&>) {
              o.profiler.inputs.push_back(describe_input(x));
            } else {
              o.profiler.inputs.push_back("(not a tensor)");
            }
          }(a));
        },
        moved);
  }
  std::shared_ptr<torch::nn::Module> ptr = detail::as_module_ptr(model);
  return detail::profile_model(
      ptr,
      [&] {
        detail::run_forward(
            ptr.get(),
            [&] { return std::apply([&](const auto&... a) { return m->forward(a...); }, moved); },
            o.backward);
      },
      o);
}

/// Profiles one call of `fn` (any callable with no arguments) as one call of the model (see the
/// `std::function` overload).
template <class M, class F,
          class = std::enable_if_t<
              std::is_invocable_v<F&> && !std::is_convertible_v<F, std::vector<int64_t>> &&
              !std::is_same_v<std::decay_t<M>, std::shared_ptr<torch::nn::Module>>>>
ModelProfile get_model_profile(const M& model, F&& fn, const ModelProfileOptions& options = {}) {
  return get_model_profile(detail::as_module_ptr(model), std::function<void()>(fn), options);
}

}  // namespace flopsprof
