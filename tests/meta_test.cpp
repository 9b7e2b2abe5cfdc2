// Meta-device estimation: counts equal to real runs, memory estimates, BERT-large on shapes only;
// and bad input (empty profiles, zero-size, parameterless, sparse and complex tensors).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "capture/gpu_backend.h"
#include "flopsprof/flopsprof.h"
#include "models/bert.h"
#include "models/mlp.h"
#include "models/resnet.h"

namespace {

using flopsprof::FlopsProfiler;

// Profiles `model` on CPU (with memory), then estimates it on meta through get_model_profile.
template <class M, class Make>
void expect_meta_matches_cpu(M model, Make make_input, bool backward, const char* what) {
  flopsprof::ProfilerOptions po;
  po.track_memory = true;
  FlopsProfiler cpu(model, po);
  torch::Tensor x = make_input(torch::kCPU);
  cpu.start_profile();
  if (backward) {  // as get_model_profile runs it: the loss sum is not recorded
    flopsprof::detail::run_forward(
        model.get(), [&] { return model->forward(x); }, true);
  } else {
    torch::NoGradGuard no_grad;
    model->forward(x);
  }
  cpu.stop_profile();
  const flopsprof::ProfileResult real = cpu.result();
  cpu.end_profile();
  for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();

  flopsprof::ModelProfileOptions o;
  o.print_profile = false;
  o.on_meta = true;
  o.backward = backward;
  o.warm_up = 0;
  flopsprof::ModelProfile est = [&] {
    if (backward) return flopsprof::get_model_profile(model, std::make_tuple(x), o);
    torch::NoGradGuard no_grad;
    return flopsprof::get_model_profile(model, std::make_tuple(x), o);
  }();
  EXPECT_TRUE(flopsprof::detail::on_meta(*model)) << what;
  EXPECT_EQ(est.flops, real.flops) << what;
  EXPECT_EQ(est.macs, real.macs) << what;
  EXPECT_EQ(est.result.bwd_flops, real.bwd_flops) << what;
  EXPECT_EQ(est.params, real.params) << what;
  ASSERT_TRUE(est.result.memory.tracked) << what;
  // Memory: what a meta run can know is the tensors, and those both runs hold alike. The CPU run's
  // peak also has its kernels' workspace (oneDNN's reordered copies and per-thread buffers: it
  // grows with the thread count), the machine's and reported apart (docs/memory.md).
  const flopsprof::MemoryStats &cpu_m = real.memory, &meta_m = est.result.memory;
  EXPECT_GT(cpu_m.tensor_peak_bytes, 0) << what;
#if TORCH_VERSION_MAJOR < 2
  EXPECT_EQ(meta_m.tensor_peak_bytes, cpu_m.tensor_peak_bytes) << what;
#else
  // LibTorch 2.6: ResNet-18's forward + backward holds 65,536 B (one 2x128x8x8 fp32 tensor, 0.13%)
  // more on meta than on CPU at the tensors' peak (docs/memory.md); the estimate may err high,
  // never low, and by no more than that.
  EXPECT_GE(meta_m.tensor_peak_bytes, cpu_m.tensor_peak_bytes) << what;
  EXPECT_LE(meta_m.tensor_peak_bytes - cpu_m.tensor_peak_bytes, 65536) << what;
#endif
  for (const flopsprof::MemoryStats* m : {&cpu_m, &meta_m}) {  // peak = tensors + workspace then
    EXPECT_GE(m->peak_workspace_bytes, 0) << what;
    EXPECT_LE(m->peak_bytes - m->peak_workspace_bytes, m->tensor_peak_bytes) << what;
    EXPECT_GE(m->peak_bytes, m->tensor_peak_bytes) << what;
  }
  std::cout << what << ": tensors' peak " << cpu_m.tensor_peak_bytes << " B (CPU and meta); peak "
            << cpu_m.peak_bytes << " B on CPU (" << cpu_m.peak_workspace_bytes
            << " B of it workspace, " << at::get_num_threads() << " thread(s)), "
            << meta_m.peak_bytes << " B on meta (" << meta_m.peak_workspace_bytes << " B)\n";
}

TEST(MetaDevice, CountsAndTensorPeaksEqualRealRuns) {
  torch::manual_seed(0);
  auto floats = [](std::vector<int64_t> shape) {
    return
        [shape](torch::Device d) { return torch::randn(shape, torch::TensorOptions().device(d)); };
  };
  {
    models::Mlp mlp(64, 256, 10, 2);
    expect_meta_matches_cpu(mlp, floats({32, 64}), false, "MLP forward");
  }
  {
    models::Mlp mlp(64, 256, 10, 2);
    expect_meta_matches_cpu(mlp, floats({32, 64}), true, "MLP forward + backward");
  }
  {
    models::ResNet18 resnet;
    resnet->eval();
    expect_meta_matches_cpu(resnet, floats({1, 3, 224, 224}), false, "ResNet-18 forward");
  }
  {
    models::ResNet18 resnet;
    expect_meta_matches_cpu(resnet, floats({2, 3, 64, 64}), true, "ResNet-18 forward + backward");
  }
  {
    models::BertForMaskedLM bert;
    bert->eval();
    auto ids = [](torch::Device d) {
      return torch::randint(0, 30522, {1, 128},
                            torch::TensorOptions().dtype(torch::kLong).device(d));
    };
    expect_meta_matches_cpu(bert, ids, false, "BERT-base MLM forward");
  }
}

TEST(MetaDevice, BertLargeAtBatch80IsProfiledOnShapesOnly) {
  models::BertConfig c;
  c.hidden = 1024;
  c.layers = 24;
  c.heads = 16;
  c.intermediate = 4096;
  models::BertForMaskedLM bert(c);
  flopsprof::to_meta(*bert);  // 1.3 GB of weights released
  flopsprof::ModelProfileOptions o;
  o.print_profile = false;
  o.backward = true;
  o.warm_up = 0;
  o.input_dtype = torch::kLong;
  auto t0 = std::chrono::steady_clock::now();
  flopsprof::ModelProfile p = flopsprof::get_model_profile(bert, std::vector<int64_t>{80, 128}, o);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // On shapes only: the weights stayed on meta, where no op computes (a CPU op reading them would
  // have thrown). The time is printed, not checked: it is the machine's and its load's.
  EXPECT_TRUE(flopsprof::detail::on_meta(*bert));
  std::cout << "BERT-large MLM 80x128 forward + backward on meta: " << seconds << " s, "
            << flopsprof::flops_to_string(p.flops) << " fwd flops, peak "
            << p.result.memory.peak_bytes / (1024.0 * 1024 * 1024) << " GiB\n";
  // params: embeddings, 24 layers (12,596,224 each: DeepSpeed's "12.6 M"), MLM head (no pooler)
  const uint64_t H = 1024, F = 4096, V = 30522;
  uint64_t layer = 4 * (H * H + H) + 2 * 2 * H + (H * F + F) + (F * H + H);
  EXPECT_EQ(layer, 12596224u);
  uint64_t embeddings = V * H + 512 * H + 2 * H + 2 * H;
  uint64_t head = (H * H + H) + 2 * H + V;
  EXPECT_EQ(p.params, embeddings + 24 * layer + head);
  // per layer MACs at B*S = 10240 tokens: 4*T*H*H + 2*T*H*F = 128.85 G (DeepSpeed: 128.87 G,
  // without the attention matmuls), + the attention matmuls 2*B*A*S*S*D
  const uint64_t T = 80 * 128, B = 80, A = 16, S = 128, D = 64;
  uint64_t layer_macs = 4 * T * H * H + 2 * T * H * F + 2 * B * A * S * S * D;
  const auto& layer3 = std::find_if(
      p.result.modules.begin(), p.result.modules.end(),
      [](const flopsprof::ModuleStats& m) { return m.name == "bert.encoder.layer.3"; });
  ASSERT_NE(layer3, p.result.modules.end());
  EXPECT_EQ(layer3->macs, layer_macs);
  EXPECT_GT(p.result.bwd_flops, p.flops);  // measured backward, on shapes
  EXPECT_GT(p.result.memory.peak_bytes,
            int64_t{1} << 30);  // activations of 10240 tokens x 24 layers
}

TEST(MetaDevice, AlreadyOnMetaAndLibTorchKernelsKept) {
  models::Mlp mlp(8, 16, 4, 2);
  flopsprof::to_meta(*mlp);
  flopsprof::to_meta(*mlp);  // idempotent
  flopsprof::ModelProfileOptions o;
  o.print_profile = false;
  torch::NoGradGuard no_grad;
  // a model already on meta is estimated there, inputs included (no device mismatch)
  flopsprof::ModelProfile p = flopsprof::get_model_profile(mlp, std::vector<int64_t>{3, 8}, o);
  EXPECT_EQ(p.flops, 816u + 48 + 1584 + 48 + 396 + 12);
  EXPECT_TRUE(p.result.memory.tracked);
  auto relu = c10::Dispatcher::singleton().findSchema({"aten::relu", ""});
  ASSERT_TRUE(relu.has_value());
  EXPECT_TRUE(relu->hasKernelForDispatchKey(c10::DispatchKey::Meta));
}

TEST(BadInput, EmptyZeroSizeParameterlessSparseComplex) {
  // an empty profile: reports and traces are valid
  torch::nn::Identity identity;
  FlopsProfiler prof(identity);
  prof.start_profile();
  prof.stop_profile();
  EXPECT_EQ(prof.get_total_flops(), 0u);
  EXPECT_EQ(prof.get_total_params(), 0u);
  EXPECT_TRUE(nlohmann::json::accept(prof.to_json()));
  EXPECT_TRUE(nlohmann::json::accept(prof.chrome_trace(2)));
  EXPECT_NE(prof.model_profile_string().find("Identity("), std::string::npos);

  // zero-size tensors: counted as 0, not an error
  torch::nn::Linear fc(8, 4);
  torch::NoGradGuard no_grad;
  // no roofline: the problems checked below are the profile's, not this machine's peaks (three
  // threads on a 2-core machine measure its caches below DRAM, which the peaks say)
  flopsprof::ProfilerOptions no_roofline;
  no_roofline.roofline.enabled = false;
  FlopsProfiler p2(fc, no_roofline);
  p2.start_profile();
  fc->forward(torch::randn({0, 8}));
  p2.stop_profile();
  EXPECT_EQ(p2.get_total_flops(), 0u);

  // complex: counted, tallied under c64 (a model with a complex parameter)
  struct ComplexImpl : torch::nn::Module {
    ComplexImpl() { w = register_parameter("w", torch::randn({4, 4}, torch::kComplexFloat)); }
    torch::Tensor forward(const torch::Tensor& x) { return torch::mm(x, w); }
    torch::Tensor w;
  };
  auto complex_model = std::make_shared<ComplexImpl>();
  FlopsProfiler p3(complex_model);
  p3.start_profile();
  complex_model->forward(torch::randn({4, 4}, torch::kComplexFloat));  // 4*4*4 MACs
  p3.stop_profile();
  EXPECT_EQ(p3.result().flops_by_dtype[static_cast<size_t>(flopsprof::DType::kComplex64)], 2u * 64);
  // the same mm outside any model is outside work, not the model's
  p2.start_profile();
  torch::mm(torch::randn({4, 4}, torch::kComplexFloat), torch::randn({4, 4}, torch::kComplexFloat));
  p2.stop_profile();
  EXPECT_EQ(p2.get_total_flops(), 0u);
  EXPECT_EQ(p2.result().outside.flops, 2u * 64);

  // sparse: counted from the dense shapes, no crash; to_meta refuses sparse parameters clearly
  p2.start_profile();
  torch::Tensor sparse = torch::eye(4).to_sparse();
  torch::mm(sparse, torch::randn({4, 3}));
  p2.stop_profile();
  EXPECT_TRUE(p2.result().problems.empty()) << ::testing::PrintToString(p2.result().problems);
  EXPECT_GE(p2.get_total_flops(), 0u);
}

TEST(GpuBackend, SelectionAndCleanFallbackWithoutADevice) {
  namespace d = flopsprof::detail;
#if defined(__SANITIZE_ADDRESS__) && defined(FLOPSPROF_TEST_CUDA_PLUGIN)
  // ASan intercepts dlopen: the interceptor is then the caller, and the program's RUNPATH (which
  // names the build tree's plugin folder) is not searched. Name the plugin, as a user would.
  setenv("FLOPSPROF_CUDA_PLUGIN", FLOPSPROF_TEST_CUDA_PLUGIN, 1);
#endif
  // a model not on a device needs no GPU timing
  d::GpuSelection cpu = d::select_gpu_timing(d::GpuTimingRequest{});
  EXPECT_TRUE(cpu.timing.empty() && cpu.reason.empty() && !cpu.cupti && !cpu.events);
  if (torch::cuda::is_available()) {
    GTEST_SKIP() << "a GPU is present: the fallback path is covered by the gpu-labelled tests";
  }
  // CUDA without a driver: the plugin (when built) loads, CUPTI refuses, CPU LibTorch has no CUDA
  // device guard for events, timing falls back to the host clock and says why, once
  d::GpuTimingRequest cuda;
  cuda.device_type = static_cast<int>(c10::DeviceType::CUDA);
  d::GpuSelection sel = d::select_gpu_timing(cuda);
  EXPECT_EQ(sel.cupti, nullptr);
  EXPECT_FALSE(sel.events);
  EXPECT_EQ(sel.timing, "host clock");
  EXPECT_EQ(sel.reason.rfind("CUPTI unavailable: ", 0), 0u) << sel.reason;
  EXPECT_NE(sel.reason.find("device events unavailable: no CUDA device guard"), std::string::npos)
      << sel.reason;
  // ProfilerOptions::device_timing: kDeviceEvents does not try CUPTI, kHostClock tries nothing
  cuda.try_cupti = false;
  sel = d::select_gpu_timing(cuda);
  EXPECT_EQ(sel.reason.rfind("CUPTI unavailable: not tried (ProfilerOptions::device_timing)", 0),
            0u)
      << sel.reason;
  cuda.try_events = false;
  sel = d::select_gpu_timing(cuda);
  EXPECT_EQ(sel.timing, "host clock");
  EXPECT_EQ(sel.reason, "device timing off (ProfilerOptions::device_timing is kHostClock)");
  std::string why;
  const d::GpuPluginV1* plugin = d::load_gpu_plugin(&why);
#if FLOPSPROF_WITH_CUDA
  ASSERT_NE(plugin, nullptr) << why;  // found in the build tree
  std::unique_ptr<d::GpuBackend> cupti(plugin->make_cupti_backend(d::CuptiLimits{}));
  EXPECT_FALSE(cupti->start(&why));
  EXPECT_FALSE(why.empty());
  EXPECT_TRUE(cupti->stop().records.empty());  // stopping a backend that never started is safe
#else
  EXPECT_EQ(plugin, nullptr);
  EXPECT_NE(why.find("FLOPSPROF_WITH_CUDA=ON"), std::string::npos) << why;
#endif
}

}  // namespace
