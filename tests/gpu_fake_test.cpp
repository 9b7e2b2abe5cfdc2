// The GPU paths, proven without a GPU. (1) Device-event timing against a fake device: a c10 guard
// for PrivateUse1 whose events carry timestamps the test controls. (2) The CUPTI backend of the
// CUDA plugin, built against a fake CUPTI library that emits a kernel (and some memcpys) for every
// external correlation id pushed, with known durations. Real-device tests: gpu_test.cpp.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>
#include <map>

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/torch.h>

#include "capture/device_events.h"
#include "capture/gpu_backend.h"
#include "capture_path.h"
#include "flopsprof/flopsprof.h"
#ifdef FLOPSPROF_TEST_FAKE_PLUGIN
#include <cupti_result.h>

#include "fake_cupti.h"
#endif

namespace {

namespace d = flopsprof::detail;
using json = nlohmann::json;

// ---- A fake device: events stamped with a clock the test advances. ----

struct FakeEvent {
  int64_t ns = 0;
};
std::atomic<int64_t> g_fake_clock{0};    // device ns
std::atomic<int64_t> g_fake_step{1000};  // each recorded event advances the clock by this
std::atomic<int> g_fake_syncs{0};        // synchronizeStream calls
std::atomic<int> g_fake_live_events{0};  // created and not destroyed
std::atomic<int> g_fake_records{0};

constexpr c10::DeviceType kFake = c10::DeviceType::PrivateUse1;

struct FakeGuard final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kFake; }
  c10::Device exchangeDevice(c10::Device) const override { return c10::Device(kFake, 0); }
  c10::Device getDevice() const override { return c10::Device(kFake, 0); }
  void setDevice(c10::Device) const override {}
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kFake, 0));
  }
  c10::Stream getDefaultStream(c10::Device) const override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kFake, 0));
  }
  c10::Stream exchangeStream(c10::Stream) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kFake, 0));
  }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
  void record(void** event, const c10::Stream&, const c10::DeviceIndex,
              const c10::EventFlag) const override {
    if (*event == nullptr) {
      *event = new FakeEvent();
      ++g_fake_live_events;
    }
    // The stream "reaches" the event after the work launched before it.
    static_cast<FakeEvent*>(*event)->ns = g_fake_clock.fetch_add(g_fake_step.load());
    ++g_fake_records;
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<FakeEvent*>(event);
    --g_fake_live_events;
  }
  bool queryEvent(void*) const override { return true; }
  void block(void*, const c10::Stream&) const override {}
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override { ++g_fake_syncs; }
};
C10_REGISTER_GUARD_IMPL(PrivateUse1, FakeGuard);

bool fake_elapsed(void* from, void* to, c10::DeviceIndex, double* ms, std::string*) {
  *ms = static_cast<double>(static_cast<FakeEvent*>(to)->ns - static_cast<FakeEvent*>(from)->ns) /
        1e6;
  return true;
}

// A CPU model timed as if its work ran on device `t` (ProfilerOptions::device).
flopsprof::ProfilerOptions on_device(c10::DeviceType t) {
  flopsprof::ProfilerOptions o;
  o.device = c10::Device(t, 0);
  return o;
}

const flopsprof::ModuleStats& module(const flopsprof::ProfileResult& r, const std::string& name) {
  for (const auto& m : r.modules) {
    if (m.name == name) return m;
  }
  throw std::runtime_error("no module " + name);
}

torch::nn::Sequential small_mlp() {
  return torch::nn::Sequential(torch::nn::Linear(4, 3), torch::nn::ReLU(), torch::nn::Linear(3, 2));
}

// Both capture paths time the same top-level records with events. On the dispatch path the
// engine's evaluate_function wrapper is flopsprof's own record, whose end event is recorded when
// the node ends and again when each op the engine runs after it ends (validate_outputs' sum_to of
// a Linear's bias gradient, [2, 3] -> [3]: aten::sum, then aten::view); on the fake device each
// recording is 3,000 ns more.
class FakeDeviceEventsOnBothPaths
    : public ::testing::TestWithParam<flopsprof::ProfilerOptions::Capture> {};
INSTANTIATE_TEST_SUITE_P(Capture, FakeDeviceEventsOnBothPaths,
                         ::testing::Values(flopsprof::ProfilerOptions::Capture::kRecordFunction,
                                           flopsprof::ProfilerOptions::Capture::kDispatch));

TEST_P(FakeDeviceEventsOnBothPaths,
       PhaseAndModuleDeviceTimeAsTheFakeDictatesWithoutSyncBeforeStop) {
  const bool dispatch = GetParam() == flopsprof::ProfilerOptions::Capture::kDispatch;
  if (dispatch) FLOPSPROF_SKIP_IF_PINNED("capture = dispatch while a record_function profile runs");
  // per Linear: AddmmBackward0's wrapper, plus its bias gradient's sum and view on the dispatch
  // path
  const double addmm_bwd = (dispatch ? 3 : 1) * 3000e-9;
  g_fake_syncs = 0;
  g_fake_records = 0;
  d::set_event_elapsed(kFake, fake_elapsed);
  auto model = small_mlp();
  torch::Tensor x = torch::randn({2, 4});
  flopsprof::ProfilerOptions options = on_device(kFake);
  options.capture = GetParam();
  flopsprof::FlopsProfiler prof(model, options);
  torch::Tensor target = torch::zeros({2, 2});
  torch::Tensor seed = torch::ones({});  // backward's seed made here, not by backward()
  g_fake_step = 1000;
  prof.start_profile();
  // Forward: 5 top-level ops, each bracketed by two events 1,000 ns apart on the fake device:
  // Linear = aten::t + aten::addmm (LibTorch 1.13's C++ Linear), ReLU = aten::relu.
  torch::Tensor y = model->forward(x);
  g_fake_step = 2000;
  torch::Tensor loss = torch::mse_loss(y, target);  // outside the model: 1 top-level op
  g_fake_step = 3000;
  loss.backward(seed);  // every top-level backward record (engine wrapper): 3,000 ns
  EXPECT_EQ(g_fake_syncs.load(), 0) << "no synchronization while the profile runs";
  EXPECT_GT(g_fake_records.load(), 0);
  prof.stop_profile();
  EXPECT_GE(g_fake_syncs.load(), 1) << "one synchronization at stop_profile()";
  EXPECT_EQ(g_fake_live_events.load(), 0) << "every event destroyed at stop";

  const flopsprof::ProfileResult& r = prof.result();
  EXPECT_EQ(r.gpu.backend, "privateuseone events");
  // A device flopsprof has no figures for: no ceilings (this CPU's measured ones are not its)
  EXPECT_EQ(r.machine.flops_source, "");
  EXPECT_EQ(r.machine.bytes_per_s, 0.0);
  EXPECT_NE(r.gpu.reason.find("CUPTI times CUDA devices only"), std::string::npos) << r.gpu.reason;
  ASSERT_TRUE(r.gpu.measured);
  EXPECT_EQ(r.gpu.untimed, 0u);
  EXPECT_DOUBLE_EQ(r.gpu.forward_s, 5 * 1000e-9);
  EXPECT_DOUBLE_EQ(module(r, "").device_fwd_s, 5 * 1000e-9);
  EXPECT_DOUBLE_EQ(module(r, "0").device_fwd_s, 2 * 1000e-9);
  EXPECT_DOUBLE_EQ(module(r, "1").device_fwd_s, 1 * 1000e-9);
  EXPECT_DOUBLE_EQ(module(r, "2").device_fwd_s, 2 * 1000e-9);
  EXPECT_DOUBLE_EQ(r.gpu.step_s, 0.0);
  // The loss's forward (2,000 ns) and its backward node (3,000 ns) are outside the model.
  EXPECT_DOUBLE_EQ(r.gpu.outside_s, 2000e-9 + 3000e-9);
  // Backward: per Linear AddmmBackward0 + TBackward0, per ReLU ReluBackward0 (engine wrappers,
  // top-level); AccumulateGrad nodes are linked to no forward op ("(autograd)").
  EXPECT_DOUBLE_EQ(module(r, "0").device_bwd_s, addmm_bwd + 3000e-9);
  EXPECT_DOUBLE_EQ(module(r, "1").device_bwd_s, 1 * 3000e-9);
  EXPECT_DOUBLE_EQ(module(r, "2").device_bwd_s, addmm_bwd + 3000e-9);
  EXPECT_DOUBLE_EQ(module(r, "").device_bwd_s, 2 * addmm_bwd + 3 * 3000e-9);
  EXPECT_DOUBLE_EQ(r.gpu.backward_s, 2 * addmm_bwd + (3 + 4) * 3000e-9);  // + 4 AccumulateGrad

  const std::string text = prof.model_profile_string();
  EXPECT_NE(text.find("privateuseone events"), std::string::npos);
  EXPECT_NE(text.find("device time fwd / bwd / step / outside"), std::string::npos);
  json j = json::parse(prof.to_json());
  EXPECT_DOUBLE_EQ(j["gpu"]["device_time_s"]["forward"].get<double>(), 5 * 1000e-9);
  EXPECT_DOUBLE_EQ(j["modules"][1]["device_fwd_s"].get<double>(), 2 * 1000e-9);
}

TEST(FakeDeviceEvents, DiscardedProfilesDestroyTheirEvents) {
  d::set_event_elapsed(kFake, fake_elapsed);
  auto model = small_mlp();
  flopsprof::FlopsProfiler prof(model, on_device(kFake));
  prof.start_profile();
  model->forward(torch::randn({2, 4}));
  prof.reset_profile();  // the first part is discarded, the profile goes on
  EXPECT_EQ(g_fake_live_events.load(), 0);
  model->forward(torch::randn({2, 4}));
  prof.end_profile();
  EXPECT_EQ(g_fake_live_events.load(), 0);
}

TEST(FakeDeviceEvents, NoElapsedFunctionFallsBackToTheHostClockWithTheReason) {
  d::set_event_elapsed(kFake, nullptr);
  auto model = small_mlp();
  flopsprof::FlopsProfiler prof(model, on_device(kFake));
  prof.start_profile();
  model->forward(torch::randn({2, 4}));
  prof.stop_profile();
  const flopsprof::ProfileResult& r = prof.result();
  EXPECT_EQ(r.gpu.backend, "host clock");
  EXPECT_FALSE(r.gpu.measured);
  // No CUPTI: its cost is not among what stays in the latencies (a first profile in a process may
  // say its cold start there).
  EXPECT_EQ(r.correction.not_removed.find("CUPTI"), std::string::npos) << r.correction.not_removed;
  EXPECT_NE(r.gpu.reason.find("no elapsed-time function for PRIVATEUSEONE events"),
            std::string::npos)
      << r.gpu.reason;
  EXPECT_NE(prof.model_profile_string().find("GPU timing"), std::string::npos);
}

#ifdef FLOPSPROF_TEST_FAKE_PLUGIN

// ---- The CUPTI backend against the fake CUPTI. ----

class FakeCupti : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("FLOPSPROF_CUDA_PLUGIN", FLOPSPROF_TEST_FAKE_PLUGIN, 1);
    fake_cupti_reset();
  }
};

// Forward and backward of the MLP on a "CUDA" model whose ops launch fake kernels.
flopsprof::ProfileResult run(flopsprof::FlopsProfiler& prof, torch::nn::Sequential& model) {
  prof.start_profile();
  torch::Tensor loss = model->forward(torch::randn({2, 4})).sum();
  loss.backward();
  prof.stop_profile();
  return prof.result();
}

TEST_F(FakeCupti, KernelsBelongToTheirOpsAndModulesEndToEnd) {
  fake_cupti_set_timing(1000, 300, 3);  // kernels 1 us; a 300 ns memcpy every 3rd op
  auto model = small_mlp();
  flopsprof::FlopsProfiler prof(model, on_device(c10::DeviceType::CUDA));
  flopsprof::ProfileResult r = run(prof, model);
  EXPECT_EQ(fake_cupti_enabled_kinds(), 0) << "every activity kind disabled at stop";

  ASSERT_EQ(r.gpu.backend, "cupti") << r.gpu.reason;
  ASSERT_TRUE(r.gpu.measured);
  // CUPTI's own cost stays in the host latencies: said, never shown plain.
  EXPECT_NE(r.correction.not_removed.find("CUPTI's recording of every CUDA runtime and driver API"),
            std::string::npos);
  EXPECT_NE(flopsprof::format_text_report(r).find("not removed from the latencies"),
            std::string::npos);
  EXPECT_NE(flopsprof::to_json(r).find("\"not_removed\": \"CUPTI's"), std::string::npos);
  EXPECT_EQ(r.gpu.kernels, fake_cupti_kernels());
  EXPECT_GT(r.gpu.kernels, 10u);
  EXPECT_EQ(r.gpu.memcpys, fake_cupti_memcpys());
  EXPECT_EQ(r.gpu.memcpys, fake_cupti_kernels() / 3);
  EXPECT_EQ(r.gpu.dropped_records, 0u);
  // busy counts kernels only (1,000 ns each); memcpys (300 ns each) apart
  EXPECT_NEAR(r.gpu.busy_s, 1000e-9 * static_cast<double>(r.gpu.kernels), 1e-12);
  EXPECT_NEAR(r.gpu.memcpy_s, 300e-9 * static_cast<double>(r.gpu.memcpys), 1e-12);
  // kernels are back to back: the span is busy plus the memcpys between them, at most
  EXPECT_LE(r.gpu.span_s, r.gpu.busy_s + r.gpu.memcpy_s + 1e-12);
  // every kernel's time is in exactly one phase
  EXPECT_NEAR(r.gpu.forward_s + r.gpu.backward_s + r.gpu.step_s + r.gpu.outside_s, r.gpu.busy_s,
              1e-12);
  EXPECT_GT(r.gpu.forward_s, 0.0);
  EXPECT_GT(r.gpu.backward_s, 0.0);
  EXPECT_GT(r.gpu.outside_s, 0.0);  // the loss's sum

  // Per module, from the trace's GPU track (a separate consumer of the same attribution): each
  // kernel names the module of the op that launched it, and has a launch flow from that op.
  json trace = json::parse(prof.chrome_trace());
  std::map<std::string, int> kernels_of, annotated;
  int kernels = 0, memcpys = 0, launches = 0;
  for (const json& e : trace["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if ((cat == "kernel" || cat == "gpu_memcpy") && e.value("ph", "") == "X") {
      const std::string name = e["name"];
      if (name.rfind("fake_", 0) == 0) {
        ++kernels;
        ++kernels_of[e["args"]["module"].get<std::string>()];
        EXPECT_NEAR(e["dur"].get<double>(), 1.0, 0.01);  // us, through the host clock's ticks
      } else {
        ++memcpys;
        EXPECT_EQ(name, "memcpy 4096 B");
      }
    }
    if (e.value("name", "") == "launch" && e.value("ph", "") == "s") ++launches;
    if (cat == "gpu_user_annotation") {  // a module call's kernels, on the GPU track
      EXPECT_EQ(e["pid"], 2);
      ++annotated[e["args"]["module"].get<std::string>()];
    }
  }
  for (const char* name : {"", "0", "1", "2"}) {
    EXPECT_EQ(annotated[name], 1) << "one gpu_user_annotation span per call of module " << name;
  }
  EXPECT_EQ(kernels, static_cast<int>(r.gpu.kernels));
  EXPECT_EQ(memcpys, static_cast<int>(r.gpu.memcpys));
  EXPECT_EQ(launches, kernels + memcpys) << "every record linked to its launching op";
  for (const char* name : {"0", "1", "2"}) {
    const auto& m = module(r, name);
    EXPECT_GT(kernels_of[name], 0) << name;
    EXPECT_NEAR(m.gpu_busy_s, 1000e-9 * kernels_of[name], 1e-12) << name;
    EXPECT_NEAR(m.device_fwd_s + m.device_bwd_s, m.gpu_busy_s, 1e-12) << name;
    EXPECT_GT(m.device_bwd_s, 0.0) << name;
    ASSERT_FALSE(m.top_kernels.empty()) << name;
    // the span runs from its first kernel's start to its last kernel's end: at least its busy
    // time, at most the whole profile's span
    EXPECT_GE(m.gpu_span_s + 1e-12, m.gpu_busy_s) << name;
    EXPECT_LE(m.gpu_span_s, r.gpu.span_s + 1e-12) << name;
    double in_table = 0;
    for (const auto& k : m.top_kernels) in_table += k.gpu_s;
    EXPECT_NEAR(in_table, m.gpu_busy_s, 1e-12) << name << ": two kernel names, both listed";
  }
  const auto& root = module(r, "");
  EXPECT_NEAR(root.gpu_busy_s,
              1000e-9 * (kernels_of[""] + kernels_of["0"] + kernels_of["1"] + kernels_of["2"]),
              1e-12);

  const std::string text = prof.model_profile_string();
  EXPECT_NE(text.find("GPU timing"), std::string::npos);
  EXPECT_NE(text.find("GPU memcpy / memset (apart from busy)"), std::string::npos);
  EXPECT_NE(text.find("GPU kernels per module"), std::string::npos);
  EXPECT_NE(text.find("fake_gemm"), std::string::npos);
  EXPECT_EQ(text.find("dropped"), std::string::npos);
  json j = json::parse(prof.to_json());
  EXPECT_EQ(j["gpu"]["backend"], "cupti");
  EXPECT_EQ(j["gpu"]["kernels"].get<uint64_t>(), r.gpu.kernels);
}

TEST_F(FakeCupti, RooflineCeilingsFromTheDeviceTableOrItsProperties) {
  fake_cupti_set_timing(1000, 0, 0);
  // A device the table knows: its datasheet's figures (H100 SXM: 67 TFLOP/s fp32, 3.35 TB/s)
  fake_cuda_set_device("NVIDIA H100 80GB HBM3", 132, 1980000, 2619000, 5120, 9, 0);
  auto model = small_mlp();
  {
    flopsprof::FlopsProfiler prof(model, on_device(c10::DeviceType::CUDA));
    flopsprof::ProfileResult r = run(prof, model);
    ASSERT_EQ(r.gpu.backend, "cupti") << r.gpu.reason;
    EXPECT_EQ(r.gpu.device, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(r.machine.device, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(r.machine.flops_source, "device table");
    EXPECT_EQ(r.machine.bandwidth_source, "device table");
    EXPECT_DOUBLE_EQ(r.machine.peak_flops(flopsprof::DType::kFloat32), 67e12);
    EXPECT_DOUBLE_EQ(r.machine.peak_flops(flopsprof::DType::kBFloat16), 989.4e12);
    EXPECT_DOUBLE_EQ(r.machine.bytes_per_s, 3.35e12);
    // Modules on the roofline over their device time (the fake kernels'), not the host's
    const auto& root = module(r, "");
    ASSERT_GT(root.device_fwd_s, 0.0);
    EXPECT_DOUBLE_EQ(root.roofline.achieved_flops_per_s,
                     static_cast<double>(root.flops) / root.device_fwd_s);
    EXPECT_FALSE(root.roofline.bound.empty());
    json j = json::parse(prof.to_json());
    EXPECT_EQ(j["machine"]["flops_source"], "device table");
    EXPECT_NE(prof.model_profile_string().find("3.35 TB/s (device table)"), std::string::npos);
    // The short measurement on the device: this LibTorch cannot make tensors on the fake's CUDA
    // device, so the ceilings stay the table's and the problems say why; with a real device it
    // is shown beside them
    bool failed = false;
    for (const auto& p : r.problems) {
      failed = failed || p.find("roofline: measuring the peaks of cuda:0 failed") == 0;
    }
    if (!torch::cuda::is_available()) {
      EXPECT_TRUE(failed) << (r.problems.empty() ? "no problems" : r.problems.back());
    } else {
      EXPECT_NE(r.machine.detail.find("measured on the device"), std::string::npos);
    }
  }
  // A device it does not know: from its properties. FP32: 132 SMs x 128 lanes (9.0) x 2 x
  // 1.98 GHz = 66.9 TFLOP/s; memory: 2 x 2.619 GHz x 5120 bits / 8 = 3.352 TB/s
  fake_cuda_set_device("NVIDIA Fake GPU", 132, 1980000, 2619000, 5120, 9, 0);
  {
    flopsprof::FlopsProfiler prof(model, on_device(c10::DeviceType::CUDA));
    flopsprof::ProfileResult r = run(prof, model);
    EXPECT_EQ(r.machine.flops_source, "device properties");
    EXPECT_EQ(r.machine.bandwidth_source, "device properties");
    EXPECT_DOUBLE_EQ(r.machine.peak_flops(flopsprof::DType::kFloat32), 2.0 * 128 * 132 * 1.98e9);
    EXPECT_DOUBLE_EQ(r.machine.bytes_per_s, 2.0 * 2.619e9 * 5120 / 8);
  }
  // Timed with device events (CUPTI not tried): the ceilings all the same; a given bandwidth
  // wins over the device's
  {
    flopsprof::ProfilerOptions o = on_device(c10::DeviceType::CUDA);
    o.device_timing = flopsprof::ProfilerOptions::DeviceTiming::kDeviceEvents;
    o.roofline.peak_bandwidth = 1e12;
    flopsprof::FlopsProfiler prof(model, o);
    flopsprof::ProfileResult r = run(prof, model);
    EXPECT_EQ(r.machine.flops_source, "device properties");
    EXPECT_EQ(r.machine.bandwidth_source, "given");
    EXPECT_DOUBLE_EQ(r.machine.bytes_per_s, 1e12);
  }
  // Both ceilings given in the environment: nothing to measure, so no measurement is tried (on
  // the fake's device it would fail and say so)
  setenv("FLOPSPROF_PEAK_FLOPS", "fp32=10e12", 1);
  setenv("FLOPSPROF_PEAK_BANDWIDTH", "1e12", 1);
  {
    flopsprof::FlopsProfiler prof(model, on_device(c10::DeviceType::CUDA));
    flopsprof::ProfileResult r = run(prof, model);
    EXPECT_EQ(r.machine.flops_source, "given (FLOPSPROF_PEAK_FLOPS)");
    EXPECT_EQ(r.machine.bandwidth_source, "given (FLOPSPROF_PEAK_BANDWIDTH)");
    EXPECT_DOUBLE_EQ(r.machine.peak_flops(flopsprof::DType::kFloat32), 10e12);
    EXPECT_DOUBLE_EQ(r.machine.measure_s, 0.0);
    for (const auto& p : r.problems)
      EXPECT_EQ(p.find("roofline: measuring"), std::string::npos) << p;
  }
  unsetenv("FLOPSPROF_PEAK_FLOPS");
  unsetenv("FLOPSPROF_PEAK_BANDWIDTH");
}

TEST_F(FakeCupti, RecordsBeyondTheBufferCapAreDroppedAndReported) {
  fake_cupti_set_timing(1000, 300, 0);
  flopsprof::ProfilerOptions o = on_device(c10::DeviceType::CUDA);
  o.cupti_buffer_bytes = 4096;  // a handful of records
  o.cupti_max_buffers = 1;
  auto model = small_mlp();
  flopsprof::FlopsProfiler prof(model, o);
  flopsprof::ProfileResult r = run(prof, model);
  ASSERT_EQ(r.gpu.backend, "cupti");
  EXPECT_GT(fake_cupti_dropped(), 0u);
  EXPECT_EQ(r.gpu.dropped_records, fake_cupti_dropped());
  EXPECT_EQ(r.gpu.kernels, fake_cupti_kernels()) << "the records that fit are all there";
  EXPECT_GE(fake_cupti_buffers_requested(), 2u) << "the second request met the cap";
  EXPECT_NE(prof.model_profile_string().find("GPU records dropped by CUPTI"), std::string::npos);
  EXPECT_EQ(json::parse(prof.to_json())["gpu"]["dropped_records"].get<uint64_t>(),
            fake_cupti_dropped());
}

TEST_F(FakeCupti, BusyCuptiFallsBackWithTheReasonAndLeavesNothingEnabled) {
  fake_cupti_set_enable_result(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  auto model = small_mlp();
  flopsprof::FlopsProfiler prof(model, on_device(c10::DeviceType::CUDA));
  flopsprof::ProfileResult r = run(prof, model);
  EXPECT_EQ(r.gpu.backend, "host clock");
  EXPECT_FALSE(r.gpu.measured);
  EXPECT_NE(r.gpu.reason.find("CUPTI unavailable: cuptiActivityEnable"), std::string::npos)
      << r.gpu.reason;
  EXPECT_NE(r.gpu.reason.find("device events unavailable"), std::string::npos) << r.gpu.reason;
  EXPECT_EQ(fake_cupti_enabled_kinds(), 0);
  EXPECT_EQ(fake_cupti_kernels(), 0u);
  // CUPTI free again: the next profile gets records
  fake_cupti_set_enable_result(0);
  r = run(prof, model);
  EXPECT_EQ(r.gpu.backend, "cupti");
  EXPECT_GT(r.gpu.kernels, 0u);
}

TEST_F(FakeCupti, FailedStartStopsTheBackendItStarted) {
  auto model = small_mlp();
  flopsprof::FlopsProfiler prof(model, on_device(c10::DeviceType::CUDA));
  // Every session slot taken by CPU profiles: the start fails after it started CUPTI, when it
  // registers its callbacks.
  std::vector<std::unique_ptr<flopsprof::FlopsProfiler>> others;
  std::vector<torch::nn::Sequential> other_models;
  for (int k = 0; k < flopsprof_test::free_profile_slots(); ++k) {
    other_models.push_back(small_mlp());
    others.push_back(std::make_unique<flopsprof::FlopsProfiler>(other_models.back()));
    others.back()->start_profile();
  }
  try {
    prof.start_profile();
    ADD_FAILURE() << "start_profile() with every slot taken did not throw";
  } catch (const flopsprof::Error& e) {
    EXPECT_NE(std::string(e.what()).find("already running"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fake_cupti_enabled_kinds(), 0) << "the backend started by the failed start is stopped";
  EXPECT_FALSE(prof.is_running());
  for (auto& o : others) o->end_profile();
  flopsprof::ProfileResult r = run(prof, model);
  EXPECT_EQ(r.gpu.backend, "cupti") << r.gpu.reason;
  EXPECT_EQ(r.gpu.kernels, fake_cupti_kernels());
  EXPECT_GT(r.gpu.kernels, 0u);
}

#endif  // FLOPSPROF_TEST_FAKE_PLUGIN

}  // namespace
