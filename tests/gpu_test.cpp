// GPU tests (ctest label "gpu"): CUPTI kernel attribution on a real device. Skipped, with the
// reason, where there is no GPU; run them on the lent GPU machine against LibTorch with CUDA.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "capture/gpu_backend.h"
#include "flopsprof/flopsprof.h"
#include "models/bert.h"
#include "models/resnet.h"

namespace {

#define FLOPSPROF_REQUIRE_GPU() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (torch::cuda::is_available)"

template <class M>
flopsprof::ProfileResult profile_on_cuda(M model, const torch::Tensor& x,
                                         flopsprof::ProfilerOptions options = {}) {
  model->to(torch::kCUDA);
  torch::Tensor input = x.to(torch::kCUDA);
  {
    torch::NoGradGuard g;
    model->forward(input);  // warm-up (cuDNN/cuBLAS handles, autotuning)
  }
  flopsprof::FlopsProfiler prof(model, options);
  prof.start_profile();
  {
    torch::NoGradGuard g;
    model->forward(input);
  }
  prof.stop_profile();
  return prof.result();
}

void expect_attributed(const flopsprof::ProfileResult& r, const char* what) {
  ASSERT_TRUE(r.gpu.measured) << what << ": " << r.gpu.backend << " " << r.gpu.reason;
  EXPECT_EQ(r.gpu.backend, "cupti");
  EXPECT_GT(r.gpu.kernels, 0u);
  // per-module GPU time (the root is inclusive) sums to the total busy time within 5%
  EXPECT_NEAR(r.modules[0].gpu_busy_s, r.gpu.busy_s, 0.05 * r.gpu.busy_s) << what;
  EXPECT_LT(r.gpu.unattributed_s, 0.05 * r.gpu.busy_s) << what;
}

// ResNet-18 at batch 8: every kernel linked, and the first conv, a block and the classifier have
// device time, with `options`' capture path.
void expect_resnet18_attributed(const flopsprof::ProfilerOptions& options, const char* what) {
  models::ResNet18 model;
  model->eval();
  flopsprof::ProfileResult r = profile_on_cuda(model, torch::randn({8, 3, 224, 224}), options);
  expect_attributed(r, what);
  if (options.capture == flopsprof::ProfilerOptions::Capture::kRecordFunction)
    EXPECT_EQ(r.workload.capture, "record_function");
  for (const auto& m : r.modules) {
    if (m.name == "conv1" || m.name == "layer1.0" || m.name == "fc")
      EXPECT_GT(m.gpu_busy_s, 0.0) << m.name;
  }
}

TEST(GpuCupti, ResNet18KernelsBelongToTheirModules) {
  FLOPSPROF_REQUIRE_GPU();
  expect_resnet18_attributed({}, "ResNet-18");
}

// The same on the RecordFunction capture path (each op pushes its id from RecordFunction's
// callbacks instead of the interceptor's kernel).
TEST(GpuCupti, ResNet18KernelsBelongToTheirModulesOnRecordFunction) {
  FLOPSPROF_REQUIRE_GPU();
  flopsprof::ProfilerOptions o;
  o.capture = flopsprof::ProfilerOptions::Capture::kRecordFunction;
  expect_resnet18_attributed(o, "ResNet-18, RecordFunction");
}

TEST(GpuCupti, BertLayerKernelsBelongToTheirModules) {
  FLOPSPROF_REQUIRE_GPU();
  models::BertLayer model(models::BertConfig{});
  model->eval();
  flopsprof::ProfileResult r = profile_on_cuda(model, torch::randn({8, 128, 768}));
  expect_attributed(r, "BERT layer");
  for (const auto& m : r.modules) {
    if (m.name == "attention.self.query" || m.name == "intermediate.dense")
      EXPECT_GT(m.gpu_busy_s, 0.0) << m.name;
  }
}

// CUPTI unavailable (as under Kineto): CUDA events time every top-level op on the current stream.
TEST(GpuEvents, ResNet18DeviceTimeFromCudaEvents) {
  FLOPSPROF_REQUIRE_GPU();
  models::ResNet18 model;
  model->eval();
  flopsprof::ProfilerOptions o;
  o.device_timing = flopsprof::ProfilerOptions::DeviceTiming::kDeviceEvents;
  flopsprof::ProfileResult r = profile_on_cuda(model, torch::randn({8, 3, 224, 224}), o);
  ASSERT_TRUE(r.gpu.measured) << r.gpu.backend << " " << r.gpu.reason;
  EXPECT_EQ(r.gpu.backend, "cuda events");
  EXPECT_EQ(r.gpu.untimed, 0u);
  EXPECT_GT(r.gpu.forward_s, 0.0);
  EXPECT_NEAR(r.modules[0].device_fwd_s, r.gpu.forward_s, 1e-9);
  for (const auto& m : r.modules) {
    if (m.name == "conv1" || m.name == "layer1.0" || m.name == "fc")
      EXPECT_GT(m.device_fwd_s, 0.0) << m.name;
  }
}

}  // namespace
